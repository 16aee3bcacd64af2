/**
 * The chain [wsl, docker]: Docker Engine installed inside a WSL 2 distribution, reached through
 * wsl.exe. The docker hop speaks to the engine as DOCKER_HOST=ssh:// would, but through the WSL
 * session: each HTTP connection is `docker system dial-stdio` run in the distribution by a
 * wsl.exe of its own (WslSession.openStream, transports/docker/dial.ts), whose stdin and stdout
 * carry the engine's API.
 *
 * wsl.exe here is the tests' STAND-IN (test/wsl/wsl-standin), not WSL: no Windows machine is
 * reachable from this project's machines. Its distribution is a chroot root filesystem
 * (busybox-static and the libraries cudaprobe needs), made with `docker: true`: this machine's
 * docker CLI at /usr/bin/docker. The engine is a dockerd of this file's own
 * (test/wsl/wsl-standin/engine.ts: its own data root, exec root, pid file and socket under the temp
 * dir, --bridge=none --iptables=false), run on this machine, that also listens on the
 * distribution's /var/run/docker.sock, where the docker CLI in the distribution finds it by
 * default. The controller's own DOCKER_HOST points nowhere: only the distribution's engine can
 * be meant. Images are built there FROM scratch (nothing can be pulled).
 *
 * What the stand-in cannot show: the real wsl.exe's relay of a byte stream (that it passes bytes
 * unchanged and ends with its wsl.exe, as the stand-in does), and an engine that lives in the WSL
 * VM and so dies with it; here the engine outlives the distribution's processes.
 *
 * Needs root (chroot, dockerd), the stand-in's tools (busybox-static, ldd, chroot, mknod,
 * unshare, mount, ps) and docker.io (docker, dockerd); without them these tests skip, saying so,
 * unless CUDAMATRIX_REQUIRE_INTEGRATION=1.
 */
import { type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type RunEvent } from '../../events/events.ts';
import { buildProbe } from '../../probes/build.ts';
import { defaultProbeNames } from '../../probes/catalogue.ts';
import { nodeArch } from '../../transports/local.ts';
import { RUN_LABEL } from '../../transports/docker/reap.ts';
import { startCli, type CliResult } from '../cli.ts';
import { buildDelayImage, buildTestBase, containerOfTarget, dockerOn, dockerToolsReady, probeRunsIn, until } from '../docker/docker.ts';
import { commandsAvailable, integrationAvailable, tempDir, testCacheDir } from '../helpers.ts';
import { startDistroEngine, type DistroEngine } from './wsl-standin/engine.ts';
import {
  leftInDistro,
  makeStandinMachine,
  STANDIN_DOCKER_TOOLS,
  STANDIN_PROGRAM,
  STANDIN_TOOLS,
  standinProcesses,
  type StandinMachine,
} from './wsl-standin/machine.ts';

const ready =
  commandsAvailable('the [wsl, docker] tests (a stand-in wsl.exe running distributions with chroot, and a dockerd of their own)', {
    ...STANDIN_TOOLS,
    ...STANDIN_DOCKER_TOOLS,
    ps: 'procps',
  }) &&
  dockerToolsReady() &&
  integrationAvailable(
    'root, for the [wsl, docker] tests (the stand-in wsl.exe runs distributions with chroot; dockerd runs as root)',
    process.getuid?.() === 0,
    'run the tests as root',
  );

const DISTRO = 'Ubuntu-24.04';
/** A distribution without the docker CLI: the docker hop must fail naming the WSL hop. */
const PLAIN = 'Plain';

let machine: StandinMachine;
let engine: DistroEngine | undefined;
let base: string;
let hang: string;
beforeAll(async () => {
  if (!ready) return;
  const probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
  machine = makeStandinMachine(
    [
      { name: DISTRO, version: 2, default: true, docker: true },
      { name: PLAIN, version: 2 },
    ],
    { libsOf: probe.path },
  );
  engine = await startDistroEngine(machine, DISTRO);
  base = buildTestBase(probe.path, 'cudamatrix-test-base', engine.host);
  // Probes that wait ten minutes first: the WSL hop is lost while one runs.
  hang = buildDelayImage(600_000, base, engine.host);
}, 180_000);

const started: ChildProcess[] = [];
afterAll(async () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null && child.pid) process.kill(child.pid, 'SIGKILL');
  const problems = (await engine?.stop()) ?? [];
  // Every run this file started had ended by itself, and the engine stopped cleanly.
  expect(started.filter((child) => child.signalCode === 'SIGKILL').map((child) => child.pid)).toEqual([]);
  expect(problems).toEqual([]);
});

/** The CLI on the stand-in machine, with a DOCKER_HOST of this machine that reaches nothing. */
function start(args: string[]): ReturnType<typeof startCli> {
  const run = startCli(args, {
    env: {
      ...machine.env(),
      DOCKER_HOST: 'unix:///nonexistent/docker.sock',
      DOCKER_CONTEXT: undefined,
      DOCKER_TLS_VERIFY: undefined,
      DOCKER_CERT_PATH: undefined,
    },
  });
  started.push(run.child);
  return run;
}

/** The run's result, or null when it has not ended within `ms` (it is killed then, by its PID). */
async function within(run: ReturnType<typeof startCli>, ms: number): Promise<CliResult | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  const result = await Promise.race([run.done, late]);
  clearTimeout(timer);
  if (result === null && run.child.exitCode === null && run.child.pid) {
    process.kill(run.child.pid, 'SIGKILL');
    await run.done;
  }
  return result;
}

function writeMatrix(dir: string, name: string, transport: unknown, probes: string): string {
  const file = path.join(dir, 'matrix.yaml');
  writeFileSync(
    file,
    ['version: 1', 'targets:', `  - name: ${name}`, `    transport: ${JSON.stringify(transport)}`, `    probes: ${probes}`, ''].join('\n'),
  );
  return file;
}

function eventsOf(dir: string): { runDir: string; events: RunEvent[] } {
  const runDir = path.join(dir, 'runs', readdirSync(path.join(dir, 'runs'))[0]!);
  return { runDir, events: readEventLog(path.join(runDir, 'events.jsonl')) };
}

const cellsOf = (events: RunEvent[]) => events.flatMap((e) => (e.type === 'cell-end' && e.planned ? [e] : []));
const runIdOf = (events: RunEvent[]) => (events[0] as { runId: string }).runId;
const on = (args: string[]) => dockerOn(engine!.host, args);
/** The containers of a run on the distribution's engine, found by the run label. */
const containersOf = (runId: string) =>
  on(['ps', '-aq', '--filter', `label=${RUN_LABEL}=${runId}`])
    .trim()
    .split('\n')
    .filter(Boolean);

/** The stand-in wsl.exe processes of this machine that carry a `docker system dial-stdio`. */
function dialCarriers(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (!argv.includes(STANDIN_PROGRAM) || !argv.includes('dial-stdio')) continue;
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`CUDAMATRIX_WSL_STANDIN_ROOT=${machine.root}`))
        pids.push(Number(entry));
    } catch {
      // gone, or not ours to look at
    }
  }
  return pids;
}

/** Nothing of a run left: no stand-in process, no work folder in a distribution, no container. */
async function expectNothingLeft(runId: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const left = {
      wslProcesses: standinProcesses(machine),
      wslDirs: machine
        .read()
        .distros.flatMap((distro) => leftInDistro(machine, distro.name).map((folder) => `${distro.name}:/tmp/${folder}`)),
      containers: containersOf(runId),
    };
    if (!left.wslProcesses.length && !left.wslDirs.length && !left.containers.length) return;
    if (Date.now() > end) throw new Error(`left behind: ${JSON.stringify(left)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe.runIf(ready)(
  '[wsl, docker]: Docker Engine in a WSL 2 distribution, through wsl.exe and docker system dial-stdio (stand-in wsl.exe)',
  () => {
    const hop = new RegExp(`docker system dial-stdio on wsl ${DISTRO.replace('.', '\\.')}\\b`);

    it("runs the whole probe suite in a container on the distribution's engine, writes the results, and leaves nothing behind", async () => {
      const dir = tempDir();
      const file = writeMatrix(
        dir,
        'wsl-docker',
        [
          { kind: 'wsl', distribution: DISTRO },
          { kind: 'docker', image: base, gpus: 'none' },
        ],
        'all',
      );
      const startedAt = Date.now();
      const result = (await within(
        start(['run', '-m', file, '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'junit.xml')]),
        240_000,
      ))!;
      expect(result, 'the run did not end within 240 s').not.toBeNull();
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.code, result.stdout + result.stderr).toBe(0);
      const { runDir, events } = eventsOf(dir);
      for (const fileName of ['events.jsonl', 'junit.xml', 'summary.json'])
        expect(existsSync(path.join(runDir, fileName)), fileName).toBe(true);
      expect(existsSync(path.join(dir, 'junit.xml'))).toBe(true);
      // Both hops in the session: the container, on the engine reached through dial-stdio in the distribution.
      const readyEvent = events.find((e) => e.type === 'target-ready');
      expect(readyEvent).toMatchObject({
        platform: 'linux',
        arch: nodeArch(),
        session: expect.stringMatching(
          new RegExp(`^docker \\S+ \\(${base}\\) on docker system dial-stdio on wsl ${DISTRO.replace('.', '\\.')}$`),
        ),
      });
      expect(events.find((e) => e.type === 'target-start')).toMatchObject({ transport: ['wsl', 'docker'] });
      const cells = cellsOf(events);
      // The whole suite, on cudaprobe's no-driver path (no GPU here, and gpus: none).
      expect(cells.length).toBe(defaultProbeNames().length);
      expect(
        cells.every((cell) => cell.status === 'skipped'),
        JSON.stringify(cells.map((cell) => [cell.probe, cell.status, cell.reason])),
      ).toBe(true);
      const sysinfo = Object.fromEntries(
        cells
          .find((cell) => cell.probe === 'sysinfo')!
          .records.flatMap((record) => (record.type === 'sysinfo' ? [[record.name, record.value]] : [])),
      );
      expect(sysinfo.container).toBe('docker');
      await expectNothingLeft(runIdOf(events));
      console.log(`[wsl, docker]: ${cells.length} cells in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
    }, 300_000);

    it('the WSL hop lost mid-probe (its wsl.exe carrying dial-stdio killed): the target ends naming the hop, and nothing is left', async () => {
      const dir = tempDir();
      const file = writeMatrix(
        dir,
        'hop-lost',
        [
          { kind: 'wsl', distribution: DISTRO },
          { kind: 'docker', image: hang, gpus: 'none' },
        ],
        '[sysinfo, event-timing]',
      );
      const run = start(['run', '-m', file, '--results-dir', path.join(dir, 'runs')]);
      const containerOf = () => containerOfTarget(on, 'hop-lost');
      await until('cudaprobe run sysinfo in the container', () => probeRunsIn(on, 'hop-lost'), 90_000);
      const runId = on(['inspect', '-f', `{{index .Config.Labels "${RUN_LABEL}"}}`, containerOf()]).trim();
      // Every wsl.exe that carries the engine's API now (the container's attach, the probe's exec).
      const carriers = dialCarriers();
      expect(carriers.length).toBeGreaterThan(0);
      for (const pid of carriers) process.kill(pid, 'SIGKILL');
      const lostAt = Date.now();
      const result = await within(run, 60_000);
      expect(result, 'the run did not end within 60 s of the WSL hop dying').not.toBeNull();
      const endedIn = Date.now() - lostAt;
      expect(result!.stderr).not.toMatch(/\n\s+at /);
      expect(result!.code, result!.stdout + result!.stderr).toBe(3);
      const { runDir, events } = eventsOf(dir);
      for (const fileName of ['events.jsonl', 'summary.json']) expect(existsSync(path.join(runDir, fileName)), fileName).toBe(true);
      const cells = cellsOf(events);
      expect(cells.map((cell) => [cell.probe, cell.status, cell.errorCode])).toEqual([
        ['sysinfo', 'error', 'TRANSPORT_FAILED'],
        ['event-timing', 'error', 'TRANSPORT_FAILED'],
      ]);
      // Which hop: the engine is reached through dial-stdio in that distribution.
      expect(cells[0]!.reason).toMatch(hop);
      expect(events.find((e) => e.type === 'target-error')).toMatchObject({
        code: 'TRANSPORT_FAILED',
        message: expect.stringMatching(hop),
      });
      await expectNothingLeft(runId);
      console.log(
        `[wsl, docker] hop lost (${carriers.length} wsl.exe killed): the run ended ${(endedIn / 1000).toFixed(1)} s later (${cells[0]!.reason})`,
      );
    }, 180_000);

    it('says which hop failed when the distribution has no docker CLI', async () => {
      const dir = tempDir();
      const file = writeMatrix(
        dir,
        'no-docker',
        [
          { kind: 'wsl', distribution: PLAIN },
          { kind: 'docker', image: base, gpus: 'none', connectTimeout: 10 },
        ],
        '[sysinfo]',
      );
      const result = (await within(start(['run', '-m', file, '--results-dir', path.join(dir, 'runs')]), 60_000))!;
      expect(result, 'the run did not end within 60 s').not.toBeNull();
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.code).toBe(3);
      const { events } = eventsOf(dir);
      const error = events.find((e) => e.type === 'target-error');
      expect(error).toMatchObject({
        code: 'TARGET_UNREACHABLE',
        message: expect.stringMatching(new RegExp(`docker system dial-stdio on wsl ${PLAIN}\\b`)),
      });
      await expectNothingLeft(runIdOf(events), 10_000);
      console.log(`[wsl, docker] without a docker CLI in the distribution: ${(error as { message: string }).message}`);
    }, 90_000);
  },
);
