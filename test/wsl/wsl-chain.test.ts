/**
 * The chain [ssh, wsl]: SSH to a Windows host, then wsl.exe there into a distribution. There is
 * no Windows host here, so the "Windows host" is the real OpenSSH sshd on 127.0.0.1 (test/sshd.ts)
 * whose sessions have the STAND-IN wsl.exe (test/wsl/wsl-standin: no Windows machine is reachable
 * from this project's machines) on their PATH, set with sshd_config's SetEnv, with the stand-in's
 * machine folder. The SSH hop runs wsl.exe through its POSIX helper (and a channel of its own for
 * the WSL guardian); every wsl.exe argument is quoted by the SSH session for the remote shell.
 *
 * Needs what test/ssh/ssh.test.ts needs (sshd and OpenSSH's tools, ps, root) and what the stand-in
 * needs (busybox-static, ldd, chroot, unshare, mount); without them these tests skip, saying so.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type RunEvent } from '../../events/events.ts';
import { buildProbe } from '../../probes/build.ts';
import { defaultProbeNames } from '../../probes/catalogue.ts';
import { nodeArch } from '../../transports/local.ts';
import { runCli, startCli } from '../cli.ts';
import { commandsAvailable, integrationAvailable, tempDir, testCacheDir } from '../helpers.ts';
import { leftovers, runIdOf, sshHop } from '../ssh/ssh-helpers.ts';
import { sshdReady, startSshd, type Sshd } from '../sshd.ts';
import {
  leftInDistro,
  makeStandinMachine,
  STANDIN_BIN,
  STANDIN_TOOLS,
  standinProcesses,
  type StandinMachine,
} from './wsl-standin/machine.ts';

const ready =
  sshdReady() &&
  commandsAvailable('the [ssh, wsl] tests (a stand-in wsl.exe that runs distributions with chroot)', STANDIN_TOOLS) &&
  integrationAvailable('root, for the WSL stand-in (chroot)', process.getuid?.() === 0, 'run the tests as root');

/** sshd_config for sessions that find the stand-in as wsl.exe (and node, which runs it). */
function windowsHostConfig(machine: StandinMachine, extra = ''): string {
  const pathDirs = [
    STANDIN_BIN,
    path.dirname(process.execPath),
    '/usr/local/sbin',
    '/usr/local/bin',
    '/usr/sbin',
    '/usr/bin',
    '/sbin',
    '/bin',
  ];
  return `SetEnv PATH=${pathDirs.join(':')} CUDAMATRIX_WSL_STANDIN_ROOT=${machine.root}${extra ? ` ${extra}` : ''}`;
}

let machine: StandinMachine;
let sshd: Sshd;
beforeAll(async () => {
  if (!ready) return;
  const probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
  machine = makeStandinMachine(
    [
      { name: 'Ubuntu-24.04', version: 2, default: true },
      { name: 'Legacy', version: 1 },
    ],
    { libsOf: probe.path },
  );
  // Port 0: a Windows host with WSL; port 1: a host without wsl.exe on PATH.
  sshd = await startSshd(2, [], {
    perPort: (_port, i) => (i === 0 ? [windowsHostConfig(machine)] : ['SetEnv PATH=/usr/sbin:/usr/bin:/sbin:/bin']),
  });
}, 180_000);

afterAll(async () => {
  await sshd?.stop();
});

function writeMatrix(dir: string, targets: { name: string; transport: unknown }[], probes: string): string {
  const file = path.join(dir, 'matrix.yaml');
  const lines = ['version: 1', 'concurrency: 4', `defaults: {probes: ${probes}}`, 'targets:'];
  for (const target of targets) lines.push(`  - name: ${target.name}`, `    transport: ${JSON.stringify(target.transport)}`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

function eventsOf(dir: string): { runDir: string; events: RunEvent[] } {
  const runs = readdirSync(path.join(dir, 'runs'));
  const runDir = path.join(dir, 'runs', runs[0]!);
  return { runDir, events: readEventLog(path.join(runDir, 'events.jsonl')) };
}

const targetErrors = (events: RunEvent[]) => Object.fromEntries(events.flatMap((e) => (e.type === 'target-error' ? [[e.target, e]] : [])));
const cells = (events: RunEvent[], target: string) =>
  events.flatMap((e) => (e.type === 'cell-end' && e.planned && e.target === target ? [e] : []));

/**
 * What the run left on the SSH host: its run folders and helpers (test/ssh/ssh-helpers.ts's
 * leftovers, less the probes it lists from every run: in [ssh, wsl] the probe runs in the
 * distribution, where standinProcesses looks, and other test files' probes are not ours).
 */
function sshHostLeftovers(runId: string): string[] {
  const { dirs, processes } = leftovers(runId);
  return [...dirs, ...processes.filter((processLine) => !processLine.includes('cudamatrix/deployed/'))];
}

/** Nothing left at any hop: on the SSH host, in the distributions, and no stand-in running. */
async function expectNothingLeft(host: StandinMachine, runId: string, ms = 12_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const left = {
      sshHost: sshHostLeftovers(runId),
      wslProcesses: standinProcesses(host),
      wslDirs: host.read().distros.flatMap((distro) => leftInDistro(host, distro.name).map((folder) => `${distro.name}:/tmp/${folder}`)),
    };
    if (!left.sshHost.length && !left.wslProcesses.length && !left.wslDirs.length) return;
    if (Date.now() > until) throw new Error(`left behind: ${JSON.stringify(left)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe.skipIf(!ready)('[ssh, wsl]: a distribution of a Windows host reached over SSH (stand-in wsl.exe)', () => {
  it('runs the whole probe suite in the distribution through the SSH host, and leaves nothing at either hop', async () => {
    const dir = tempDir();
    const file = writeMatrix(
      dir,
      [
        { name: 'win-wsl2', transport: [sshHop(sshd, { name: 'win-wsl2' }), { kind: 'wsl', distribution: 'Ubuntu-24.04' }] },
        { name: 'win-wsl1', transport: [sshHop(sshd, { name: 'win-wsl1' }), { kind: 'wsl', distribution: 'Legacy' }] },
        { name: 'no-wsl', transport: [sshHop(sshd, { name: 'no-wsl', port: sshd.ports[1] }), { kind: 'wsl' }] },
      ],
      'all',
    );
    const result = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')]);
    const { events } = eventsOf(dir);
    expect(result.code, result.stderr).toBe(3);
    const ready = events.find((e) => e.type === 'target-ready' && e.target === 'win-wsl2');
    // The SSH hop's description, then the distribution: "ssh root@127.0.0.1:PORT → wsl Ubuntu-24.04".
    expect(ready).toMatchObject({
      session: expect.stringMatching(new RegExp(`^ssh (\\S+@)?127\\.0\\.0\\.1:${sshd.ports[0]} → wsl Ubuntu-24\\.04$`)),
      platform: 'linux',
      arch: nodeArch(),
    });
    const suite = cells(events, 'win-wsl2');
    expect(suite.length).toBe(defaultProbeNames().length);
    expect(
      suite.every((cell) => cell.status === 'skipped'),
      JSON.stringify(suite.map((cell) => [cell.probe, cell.status, cell.reason])),
    ).toBe(true);
    const env = suite
      .find((cell) => cell.probe === 'sysinfo')!
      .records.find((record) => record.type === 'sysinfo' && record.name === 'environment');
    expect(env?.value).toBe('wsl2');
    // The Windows host's view of the VM (C27) for the declared memory probes only: this SSH host
    // is a POSIX shell (sshd on Linux), not Windows, so null with the reason.
    const hostVm = suite.flatMap((cell) =>
      cell.records.flatMap((record) => (record.type === 'metric' && record.name.startsWith('host_vm_') ? [[cell.probe, record]] : [])),
    );
    expect([...new Set(hostVm.map(([probe]) => probe))].sort()).toEqual(['pinned-ceiling', 'pinned-vram']);
    for (const [, metric] of hostVm)
      expect(metric).toMatchObject({
        value: null,
        reason: expect.stringMatching(/^the hop before the distribution \(ssh .*\) is a linux shell, not its Windows host/),
      });
    // The failures name the hop: the WSL 1 distribution on that host, and a host without wsl.exe.
    const errors = targetErrors(events);
    expect(errors['win-wsl1']).toMatchObject({
      code: 'WSL_VERSION_1',
      message: expect.stringMatching(new RegExp(`"Legacy" on ssh (\\S+@)?127\\.0\\.0\\.1:${sshd.ports[0]} runs under WSL 1`)),
    });
    expect(errors['no-wsl']).toMatchObject({
      code: 'WSL_NOT_FOUND',
      message: expect.stringMatching(
        new RegExp(`wsl\\.exe is not on PATH on ssh (\\S+@)?127\\.0\\.0\\.1:${sshd.ports[1]}: WSL runs only on Windows`),
      ),
    });
    expect(errors['win-wsl2']).toBeUndefined();
    await expectNothingLeft(machine, runIdOf(events));
  });

  it('when the SSH hop dies mid-probe: that target ends as TRANSPORT_FAILED, results are written, nothing is left at any hop', async () => {
    // A Windows host of its own, whose probes wait 30 s before they start (the test hook reaches
    // the distribution through WSLENV, as WSL passes variables in): longer than the test waits
    // for the leftovers to go, so that a probe nobody killed would be seen.
    const own = await startSshd(1, [windowsHostConfig(machine, 'CUDAPROBE_TEST_DELAY_MS=30000 WSLENV=CUDAPROBE_TEST_DELAY_MS')]);
    try {
      const dir = tempDir();
      const file = writeMatrix(
        dir,
        [{ name: 'doomed', transport: [sshHop(own, { name: 'doomed' }), { kind: 'wsl' }] }],
        '[sysinfo, pinned-vram, transfer-bandwidth]',
      );
      const { done } = startCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'junit.xml')]);
      // Once cudaprobe runs in the distribution, the SSH host crashes (sshd and its sessions killed).
      const until = Date.now() + 60_000;
      while (!standinProcesses(machine).some((processLine) => processLine.includes('cudaprobe run sysinfo')) && Date.now() < until)
        await new Promise((res) => setTimeout(res, 100));
      expect(standinProcesses(machine).some((processLine) => processLine.includes('cudaprobe run sysinfo'))).toBe(true);
      own.killAll();
      const result = await done;
      expect(result.code, result.stderr).toBe(3);
      const { runDir, events } = eventsOf(dir);
      for (const fileName of ['events.jsonl', 'junit.xml', 'summary.json'])
        expect(existsSync(path.join(runDir, fileName)), fileName).toBe(true);
      expect(existsSync(path.join(dir, 'junit.xml'))).toBe(true);
      expect(cells(events, 'doomed').map((cell) => [cell.probe, cell.status, cell.errorCode ?? null])).toEqual([
        ['sysinfo', 'error', 'TRANSPORT_FAILED'],
        ['pinned-vram', 'error', 'TRANSPORT_FAILED'],
        ['transfer-bandwidth', 'error', 'TRANSPORT_FAILED'],
      ]);
      expect(targetErrors(events).doomed).toMatchObject({
        code: 'TRANSPORT_FAILED',
        message: expect.stringContaining('the SSH connection failed'),
      });
      // The probe in the distribution, the stand-in wsl.exe and the guardian on the "Windows"
      // host, the SSH helper and run folder, the session's folder in the distribution: all gone.
      await expectNothingLeft(machine, runIdOf(events));
    } finally {
      await own.stop();
    }
  });
});
