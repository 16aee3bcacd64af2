/**
 * The WSL transport (kind: wsl) as the first hop, end to end through the real CLI, against a
 * STAND-IN wsl.exe (test/wsl/wsl-standin): no Windows machine is reachable from this project's
 * machines, so the tests put a program named wsl.exe on PATH that takes the real one's argv
 * forms (and refuses others with its usage error), prints `--list --verbose` as it does
 * (UTF-16LE without a BOM, CRLF, the default marked *, a header; UTF-8 under WSL_UTF8=1; English
 * or German words), returns its exit status (-1) and messages for a missing distribution, and
 * runs --exec commands chrooted into a root filesystem per distribution. Its header says where
 * each of those facts comes from. The chain [ssh, wsl] is in test/wsl/wsl-chain.test.ts.
 *
 * Needs root (the stand-in runs distributions with chroot), busybox-static (their root
 * filesystems), ldd and ps; without them these tests skip, saying so.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type CellEndEvent, type RunEvent } from '../../events/events.ts';
import { buildProbe } from '../../probes/build.ts';
import { defaultProbeNames } from '../../probes/catalogue.ts';
import { nodeArch } from '../../transports/local.ts';
import { connectWsl } from '../../transports/wsl/transport.ts';
import { runCli } from '../cli.ts';
import { commandsAvailable, integrationAvailable, repoRoot, tempDir, testCacheDir, validateJunit } from '../helpers.ts';
import {
  leftInDistro,
  makeStandinMachine,
  STANDIN_TOOLS,
  STANDIN_WSL,
  standinProcesses,
  terminateDistro,
  type StandinDistro,
  type StandinMachine,
} from './wsl-standin/machine.ts';

const ready =
  commandsAvailable('the WSL tests (a stand-in wsl.exe that runs distributions with chroot)', { ...STANDIN_TOOLS, ps: 'procps' }) &&
  integrationAvailable(
    'root, for the WSL tests (the stand-in wsl.exe runs distributions with chroot)',
    process.getuid?.() === 0,
    'run the tests as root',
  );

let libsOf = '';
beforeAll(async () => {
  if (!ready) return;
  libsOf = (await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir })).path;
}, 180_000);

/** Machines made by a test, checked after it: nothing running from them, no work folder left. */
const made: StandinMachine[] = [];
function machine(distros: StandinDistro[], options: { locale?: 'en-US' | 'de-DE'; installed?: boolean } = {}): StandinMachine {
  const host = makeStandinMachine(distros, { libsOf, ...options });
  made.push(host);
  return host;
}

afterEach(async () => {
  const machines = made.splice(0);
  await expectNothingLeft(machines);
});

async function expectNothingLeft(machines: StandinMachine[], ms = 8000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const left = machines.map((host) => ({
      processes: standinProcesses(host),
      dirs: host
        .read()
        .distros.flatMap((distro) =>
          existsSync(host.distroRoot(distro.name)) ? leftInDistro(host, distro.name).map((folder) => `${distro.name}:/tmp/${folder}`) : [],
        ),
    }));
    if (left.every((leftOnHost) => leftOnHost.processes.length === 0 && leftOnHost.dirs.length === 0)) return;
    if (Date.now() > until) throw new Error(`left behind by the WSL stand-in: ${JSON.stringify(left)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The stand-in wsl.exe run directly, with the machine's environment. */
function standin(host: StandinMachine, args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(STANDIN_WSL, args, { env: { ...process.env, ...host.env(env) }, timeout: 30_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

interface WslTarget {
  name: string;
  transport: unknown;
  probes?: string;
  timeout?: string;
  environment?: string;
}

function writeMatrix(dir: string, targets: WslTarget[], probes = '[sysinfo]'): string {
  const file = path.join(dir, 'matrix.yaml');
  const lines = ['version: 1', 'concurrency: 4', `defaults: {probes: ${probes}}`, 'targets:'];
  for (const target of targets) {
    lines.push(`  - name: ${target.name}`, `    transport: ${JSON.stringify(target.transport)}`);
    if (target.probes) lines.push(`    probes: ${target.probes}`);
    if (target.timeout) lines.push(`    timeout: ${target.timeout}`);
    if (target.environment) lines.push(`    environment: ${target.environment}`);
  }
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/** `cudamatrix run` with the stand-in on PATH; the events of its run. */
async function run(host: StandinMachine, file: string, dir: string, args: string[] = [], env: Record<string, string> = {}) {
  const result = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs'), ...args], { env: host.env(env) });
  const runs = existsSync(path.join(dir, 'runs')) ? readdirSync(path.join(dir, 'runs')) : [];
  const events: RunEvent[] = runs.length ? readEventLog(path.join(dir, 'runs', runs[0]!, 'events.jsonl')) : [];
  return { ...result, events, runDir: runs.length ? path.join(dir, 'runs', runs[0]!) : '' };
}

const targetErrors = (events: RunEvent[]) => Object.fromEntries(events.flatMap((e) => (e.type === 'target-error' ? [[e.target, e]] : [])));
const cells = (events: RunEvent[], target?: string) =>
  events.flatMap((e) => (e.type === 'cell-end' && e.planned && (!target || e.target === target) ? [e] : []));
const readyEvent = (events: RunEvent[], target: string) => events.find((e) => e.type === 'target-ready' && e.target === target);

describe.skipIf(!ready)('the stand-in wsl.exe answers as the real one does', () => {
  it('lists distributions in UTF-16LE without a BOM, CRLF, a header, the default first and marked *', () => {
    const host = machine([
      { name: 'Debian', version: 2 },
      { name: 'Ubuntu-24.04', version: 2, default: true, state: 'Running' },
    ]);
    const result = standin(host, ['--list', '--verbose']);
    expect(result.code).toBe(0);
    expect([...result.stdout.subarray(0, 4)]).toEqual([0x20, 0x00, 0x20, 0x00]);
    const text = result.stdout.toString('utf16le');
    expect(text).toBe(
      '  NAME            STATE           VERSION\r\n* Ubuntu-24.04    Running         2\r\n  Debian          Stopped         2\r\n',
    );
    expect(standin(host, ['-l', '-v']).stdout.equals(result.stdout)).toBe(true);
    // WSL_UTF8=1: the same text in UTF-8; any other value: still UTF-16LE.
    expect(standin(host, ['--list', '--verbose'], { WSL_UTF8: '1' }).stdout.toString('utf8')).toBe(text);
    expect(standin(host, ['--list', '--verbose'], { WSL_UTF8: 'true' }).stdout.equals(result.stdout)).toBe(true);
  });

  it("speaks the machine's language: German header and states", () => {
    const host = machine([{ name: 'Ubuntu', version: 2, default: true }], { locale: 'de-DE' });
    const text = standin(host, ['-l', '-v']).stdout.toString('utf16le');
    expect(text).toBe('  NAME      STATUS          VERSION\r\n* Ubuntu    Beendet         2\r\n');
  });

  it('refuses a missing distribution with exit status -1 and WSL_E_DISTRO_NOT_FOUND, in UTF-16LE on stderr', () => {
    const host = machine([{ name: 'Ubuntu', version: 2, default: true }]);
    const result = standin(host, ['--distribution', 'Fedora', '--exec', 'true']);
    expect(result.code).toBe(255);
    expect(result.stdout.length).toBe(0);
    expect(result.stderr.toString('utf16le')).toBe(
      'There is no distribution with the supplied name.\r\nError code: Wsl/Service/WSL_E_DISTRO_NOT_FOUND\r\n',
    );
  });

  it('refuses what cudamatrix does not use, as the real one refuses an unknown option', () => {
    const host = machine([{ name: 'Ubuntu', version: 2, default: true }]);
    const unknown = standin(host, ['--distro', 'Ubuntu', '--exec', 'true']);
    expect(unknown.code).toBe(255);
    expect(unknown.stdout.toString('utf16le')).toBe(
      "Invalid command line argument: --distro\r\nPlease use 'wsl.exe --help' to get a list of supported arguments.\r\n",
    );
    expect(standin(host, ['--list', '--quiet']).code).toBe(255);
    expect(standin(host, ['-d']).stdout.toString('utf16le')).toContain('requires a value');
    // A command line for the default shell, a bare --list, or --exec with nothing: refused too.
    for (const args of [['-d', 'Ubuntu', 'echo', 'hi'], ['--list'], ['-d', 'Ubuntu', '--exec']])
      expect(standin(host, args).code, args.join(' ')).toBe(255);
    // What cudamatrix does use: the short and long forms alike.
    const ok = standin(host, [
      '-d',
      'Ubuntu',
      '-u',
      'builder',
      '--cd',
      '/tmp',
      '-e',
      'sh',
      '-c',
      'echo "$(id -u) $(pwd) $WSL_DISTRO_NAME"',
    ]);
    expect(ok.stdout.toString()).toBe('1000 /tmp Ubuntu\n');
    expect(ok.code).toBe(0);
  });
});

describe.skipIf(!ready)('kind: wsl, first hop (wsl.exe here)', () => {
  it('runs the whole probe suite in the default distribution (stopped, so started), the no-driver path, and leaves nothing', async () => {
    const host = machine([
      { name: 'Debian', version: 2 },
      { name: 'Ubuntu-24.04', version: 2, default: true, state: 'Stopped' },
    ]);
    const dir = tempDir();
    const file = writeMatrix(dir, [{ name: 'wsl2', transport: { kind: 'wsl' } }], 'all');
    const result = await run(host, file, dir, ['--junit', path.join(dir, 'junit.xml')]);
    expect(result.code, result.stderr).toBe(0);
    expect(targetErrors(result.events)).toEqual({});
    const ready = readyEvent(result.events, 'wsl2');
    expect(ready).toMatchObject({
      session: 'wsl Ubuntu-24.04',
      platform: 'linux',
      arch: nodeArch(),
      probe: { uploaded: true, path: expect.stringMatching(/^\/root\/\.cache\/cudamatrix\/deployed\/linux-/) },
    });
    const all = cells(result.events, 'wsl2');
    expect(all.length).toBe(defaultProbeNames().length);
    expect(
      all.every((cell) => cell.status === 'skipped'),
      JSON.stringify(all.map((cell) => [cell.probe, cell.status, cell.reason])),
    ).toBe(true);
    // cudaprobe ran in the distribution: it found WSL 2's /dev/dxg there, and no usable driver.
    const sysinfo = all.find((cell) => cell.probe === 'sysinfo')!;
    const fact = (name: string) => sysinfo.records.find((record) => record.type === 'sysinfo' && record.name === name)?.value;
    expect(fact('environment')).toBe('wsl2');
    expect(fact('wsl_version')).toBe(2);
    expect(existsSync(path.join(dir, 'junit.xml'))).toBe(true);
    // Started by the first command; the other distribution untouched.
    expect(host.read().distros.map((distro) => [distro.name, distro.state])).toEqual([
      ['Debian', 'Stopped'],
      ['Ubuntu-24.04', 'Running'],
    ]);
    // The probe stays in the distribution's cache: the next run copies nothing, and --strict
    // says that nothing was measured (exit 4), as it does on a machine without a driver.
    const dir2 = tempDir();
    const again = await run(host, writeMatrix(dir2, [{ name: 'wsl2', transport: { kind: 'wsl' } }]), dir2, ['--strict']);
    expect(again.code, again.stderr).toBe(4);
    expect(readyEvent(again.events, 'wsl2')).toMatchObject({ probe: { uploaded: false } });
  });

  it('reads a German, UTF-8 or UTF-16LE list alike and picks the distribution named, whatever its case', async () => {
    const host = machine(
      [
        { name: 'Debian', version: 2, state: 'Running' },
        { name: 'Ubuntu', version: 2, default: true },
      ],
      { locale: 'de-DE' },
    );
    for (const utf8 of [false, true]) {
      const dir = tempDir();
      const file = writeMatrix(dir, [
        { name: 'default', transport: { kind: 'wsl' } },
        { name: 'named', transport: [{ kind: 'wsl', distribution: 'debian' }] },
      ]);
      const result = await run(host, file, dir, [], utf8 ? { WSL_UTF8: '1' } : {});
      expect(result.code, result.stderr).toBe(0);
      expect(readyEvent(result.events, 'default')).toMatchObject({ session: 'wsl Ubuntu' });
      expect(readyEvent(result.events, 'named')).toMatchObject({ session: 'wsl Debian' });
    }
  });

  it('names every error a user meets, with what to do, and runs nothing where it cannot', async () => {
    const host = machine([
      { name: 'Ubuntu-24.04', version: 2, default: true },
      { name: 'Legacy', version: 1 },
      { name: 'NoGpu', version: 2, gpu: { dxg: false, libcuda: false } },
      { name: 'NoDriver', version: 2, gpu: { dxg: true, libcuda: false } },
    ]);
    const dir = tempDir();
    const file = writeMatrix(dir, [
      { name: 'missing', transport: { kind: 'wsl', distribution: 'Fedora-42' } },
      { name: 'wsl1', transport: { kind: 'wsl', distribution: 'Legacy' } },
      { name: 'no-dxg', transport: { kind: 'wsl', distribution: 'NoGpu' } },
      { name: 'no-libcuda', transport: { kind: 'wsl', distribution: 'NoDriver' } },
      { name: 'no-user', transport: { kind: 'wsl', distribution: 'Ubuntu-24.04', user: 'nobody-here' } },
      { name: 'fine', transport: { kind: 'wsl', user: 'builder' } },
    ]);
    const result = await run(host, file, dir);
    expect(result.code).toBe(3);
    const errors = targetErrors(result.events);
    expect(errors.missing).toMatchObject({
      code: 'WSL_DISTRO_NOT_FOUND',
      message: expect.stringMatching(
        /no WSL distribution "Fedora-42" on this machine; there are: Ubuntu-24\.04 \(WSL 2, default, Stopped\), Legacy \(WSL 1, Stopped\), NoGpu .*wsl\.exe --install Fedora-42/,
      ),
    });
    // WSL 1 is recorded with its code too, but it is a skip, not an error (the test below).
    expect(errors.wsl1).toMatchObject({
      code: 'WSL_VERSION_1',
      message: expect.stringMatching(/"Legacy" on this machine runs under WSL 1, which has no GPU.*wsl\.exe --set-version Legacy 2/),
    });
    expect(errors['no-dxg']).toMatchObject({
      code: 'WSL_NO_GPU',
      message: expect.stringMatching(/no \/dev\/dxg in WSL distribution "NoGpu".*GPU paravirtualisation is off/),
    });
    expect(errors['no-libcuda']).toMatchObject({
      code: 'WSL_NO_LIBCUDA',
      message: expect.stringMatching(/no libcuda\.so\.1 under \/usr\/lib\/wsl\/lib in WSL distribution "NoDriver".*NVIDIA driver/),
    });
    expect(errors['no-user']).toMatchObject({
      code: 'TARGET_UNREACHABLE',
      message: expect.stringMatching(/no user "nobody-here" in WSL distribution "Ubuntu-24\.04".*WSL_E_USER_NOT_FOUND/),
    });
    expect(errors.fine).toBeUndefined();
    for (const target of ['missing', 'no-dxg', 'no-libcuda']) {
      expect(cells(result.events, target).map((cell) => [cell.status, cell.errorCode])).toEqual([['error', errors[target]!.code]]);
    }
    expect(cells(result.events, 'wsl1').map((cell) => [cell.status, cell.errorCode, cell.reason])).toEqual([
      ['skipped', 'WSL_VERSION_1', errors.wsl1!.message],
    ]);
    // The WSL 1 distribution was not even started: nothing ran in it.
    expect(host.read().distros.find((distro) => distro.name === 'Legacy')!.state).toBe('Stopped');
    // The user's session ran as that user, in a work folder of its own.
    expect(readyEvent(result.events, 'fine')).toMatchObject({
      probe: { path: expect.stringMatching(/^\/home\/builder\/\.cache\/cudamatrix\/deployed\//) },
    });
  });

  it('skips the cells of a WSL 1 distribution, saying why, and the run beside a WSL 2 one does not fail for it', async () => {
    const host = machine([
      { name: 'Ubuntu-24.04', version: 2, default: true },
      { name: 'Legacy', version: 1 },
    ]);
    const dir = tempDir();
    const junitFile = path.join(dir, 'junit.xml');
    const file = writeMatrix(
      dir,
      [
        { name: 'wsl2', transport: { kind: 'wsl' } },
        { name: 'wsl1', transport: { kind: 'wsl', distribution: 'Legacy' } },
      ],
      '[sysinfo, pinned-vram]',
    );
    const result = await run(host, file, dir, ['--junit', junitFile]);
    // This machine has no driver: everything is skipped, which is exit 0, as without the WSL 1 target.
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const reason = /WSL distribution "Legacy" on this machine runs under WSL 1, which has no GPU.*wsl\.exe --set-version Legacy 2/;
    expect(targetErrors(result.events).wsl1).toMatchObject({ code: 'WSL_VERSION_1', message: expect.stringMatching(reason) });
    const legacy = cells(result.events, 'wsl1');
    expect(legacy.map((cell) => [cell.probe, cell.status, cell.errorCode])).toEqual([
      ['sysinfo', 'skipped', 'WSL_VERSION_1'],
      ['pinned-vram', 'skipped', 'WSL_VERSION_1'],
    ]);
    for (const cell of legacy) expect(cell.reason).toMatch(reason);
    // Nothing ran in it, nor was it started; the WSL 2 target ran as usual (no driver: skipped by cudaprobe).
    expect(result.events.some((e) => e.type === 'cell-start' && e.target === 'wsl1')).toBe(false);
    expect(host.read().distros.find((distro) => distro.name === 'Legacy')!.state).toBe('Stopped');
    expect(readyEvent(result.events, 'wsl2')).toMatchObject({ session: 'wsl Ubuntu-24.04' });
    expect(cells(result.events, 'wsl2').map((cell) => [cell.probe, cell.status, cell.errorCode])).toEqual([
      ['sysinfo', 'skipped', undefined],
      ['pinned-vram', 'skipped', undefined],
    ]);
    // The Windows host's view of the VM (C27): declared for pinned-vram, not sysinfo; cudamatrix
    // runs on Linux here, so it is null with the reason, for both counters.
    const hostVm = (cell: CellEndEvent) => cell.records.filter((record) => record.type === 'metric' && record.name.startsWith('host_vm_'));
    const [sysinfo, pinned] = cells(result.events, 'wsl2');
    expect(hostVm(sysinfo!)).toEqual([]);
    expect(hostVm(pinned!).map((metric) => metric.type === 'metric' && [metric.name, metric.attrs?.counter, metric.value])).toEqual(
      ['shared', 'dedicated'].flatMap((counter) => ['baseline', 'peak', 'growth'].map((kind) => [`host_vm_${kind}_bytes`, counter, null])),
    );
    for (const metric of hostVm(pinned!))
      expect(metric).toMatchObject({ reason: expect.stringMatching(/^cudamatrix runs on Linux here \(inside WSL/) });
    // Said as a skip, with the reason, in the console, JUnit and the JSON summary.
    expect(result.stdout).toMatch(/- wsl1 skipped: WSL_VERSION_1: WSL distribution "Legacy" on this machine runs under WSL 1/);
    expect(result.stdout).not.toMatch(/✗/);
    const xml = readFileSync(junitFile, 'utf8');
    await validateJunit(xml);
    const suite = /<testsuite name="wsl1"[^>]*>[\s\S]*?<\/testsuite>/.exec(xml)![0];
    expect(suite).toMatch(/errors="0" skipped="2"/);
    expect(suite).toMatch(
      /<testcase classname="wsl1.probes" name="probe sysinfo runs" time="0">\s*<skipped message="WSL distribution &quot;Legacy&quot; on this machine runs under WSL 1, which has no GPU[^"]*" type="WSL_VERSION_1"\/>/,
    );
    const summary = JSON.parse(readFileSync(path.join(result.runDir, 'summary.json'), 'utf8')) as {
      targets: { name: string; error: unknown; skipped: { code: string; reason: string } | null }[];
    };
    expect(summary.targets.find((target) => target.name === 'wsl1')).toMatchObject({
      error: null,
      skipped: { code: 'WSL_VERSION_1', reason: expect.stringMatching(reason) },
    });
    // --strict: nothing was measured anywhere (exit 4), as on a machine without a driver.
    const dir2 = tempDir();
    const strict = await run(host, writeMatrix(dir2, [{ name: 'wsl1', transport: { kind: 'wsl', distribution: 'Legacy' } }]), dir2, [
      '--strict',
    ]);
    expect(strict.code, strict.stdout + strict.stderr).toBe(4);
  });

  it('says when wsl.exe is not on PATH, when WSL is not installed, and when it has no distribution', async () => {
    const dir = tempDir();
    const file = writeMatrix(dir, [{ name: 'wsl', transport: { kind: 'wsl' } }]);
    const host = machine([{ name: 'Ubuntu', version: 2, default: true }]);
    const noExe = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs1')], {
      env: { CUDAMATRIX_WSL_STANDIN_ROOT: host.root },
    });
    expect(noExe.code).toBe(3);
    expect(noExe.stdout + noExe.stderr).toMatch(/WSL_NOT_FOUND/);
    const events1 = readEventLog(path.join(dir, 'runs1', readdirSync(path.join(dir, 'runs1'))[0]!, 'events.jsonl'));
    expect(targetErrors(events1).wsl).toMatchObject({
      code: 'WSL_NOT_FOUND',
      message: expect.stringMatching(/wsl\.exe is not on PATH of this machine.*\[\{kind: ssh, host: my-workstation\}, \{kind: wsl/),
    });

    const absent = machine([], { installed: false });
    const notInstalled = await run(absent, file, tempDir());
    expect(notInstalled.code).toBe(3);
    expect(targetErrors(notInstalled.events).wsl).toMatchObject({
      code: 'WSL_NOT_INSTALLED',
      message: expect.stringMatching(
        /WSL is not installed on this machine; wsl\.exe said: The Windows Subsystem for Linux is not installed.*aka\.ms\/wslinstall.*wsl\.exe --install/,
      ),
    });

    const empty = machine([], { locale: 'de-DE' });
    const none = await run(empty, file, tempDir());
    expect(none.code).toBe(3);
    expect(targetErrors(none.events).wsl).toMatchObject({
      code: 'WSL_DISTRO_NOT_FOUND',
      message: expect.stringMatching(
        /WSL on this machine lists no distribution \("wsl\.exe --list --verbose" exited 255: Für das Windows-Subsystem/,
      ),
    });
  });

  it('kills a probe that runs past its timeout inside the distribution, and removes the work folder', async () => {
    const host = machine([{ name: 'Ubuntu', version: 2, default: true }]);
    const dir = tempDir();
    const file = writeMatrix(dir, [{ name: 'slow', transport: { kind: 'wsl' }, timeout: '2s' }]);
    // The test hook reaches the distribution as WSL passes variables in: through WSLENV.
    const started = Date.now();
    const result = await run(host, file, dir, [], { CUDAPROBE_TEST_DELAY_MS: '60000', WSLENV: 'CUDAPROBE_TEST_DELAY_MS' });
    expect(result.code).toBe(3);
    expect(cells(result.events, 'slow').map((cell) => [cell.status, cell.errorCode])).toEqual([['error', 'PROBE_TIMEOUT']]);
    expect(Date.now() - started).toBeLessThan(30_000);
    // afterEach: no cudaprobe (or anything else) left running in the distribution, no folder left.
  });
});

describe.skipIf(!ready)('a WSL session through the transport API', () => {
  it('moves files both ways byte for byte, passes env and stdin, runs as the user, and cleans up on dispose', async () => {
    const host = machine([{ name: 'Ubuntu', version: 2, default: true }]);
    Object.assign(process.env, host.env());
    const session = await connectWsl({ user: 'builder' }, { target: 't', runId: 'api-000000000001' });
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 256));
    const dir = tempDir();
    writeFileSync(path.join(dir, 'in.bin'), bytes);
    const remote = session.joinPath(session.workDir, 'in.bin');
    await session.put(path.join(dir, 'in.bin'), remote);
    await session.get(remote, path.join(dir, 'out.bin'));
    expect(readFileSync(path.join(dir, 'out.bin')).equals(bytes)).toBe(true);
    const result = await session.exec(['sh', '-c', 'echo "$(id -u) $GREETING $(pwd)"; cat; echo to-stderr >&2; exit 7'], {
      env: { GREETING: 'a b  c' },
      stdin: 'from stdin\n',
    });
    expect(result).toMatchObject({ exitCode: 7, stdout: `1000 a b  c ${session.workDir}\nfrom stdin\n`, stderr: 'to-stderr\n' });
    // An argument with quotes, spaces, a newline and shell syntax arrives as it was.
    const odd = ['it\'s "quoted"', ' two  spaces ', 'line\nbreak', '$(nope) `nope` *', '-n'];
    const echoed = await session.exec(['sh', '-c', 'for a in "$@"; do printf "[%s]" "$a"; done', 'sh', ...odd]);
    expect(echoed.stdout).toBe(odd.map((arg) => `[${arg}]`).join(''));
    expect(statSync(path.join(host.distroRoot('Ubuntu'), session.workDir)).uid).toBe(1000);
    await session[Symbol.asyncDispose]();
    expect(leftInDistro(host, 'Ubuntu')).toEqual([]);
  });

  it.each([
    ['zh-CN', 'UTF-16LE', '找不到用户。'],
    ['de-DE', 'cp850', 'Kein Benutzer für diesen Namen gefunden.'],
    ['de-DE', 'windows-1252', 'Kein Benutzer für diesen Namen gefunden.'],
  ])(
    'keeps a %s message of wsl.exe in %s whole when it comes back through a command (issue 22.7)',
    async (locale, messageEncoding, said) => {
      // The STAND-IN wsl.exe says "user not found" in that language: in UTF-16LE as wsl.exe does,
      // or, to test the decoder, in a legacy code page. The message reaches cudamatrix through a
      // command's stderr (the agent's start), not through --list.
      const host = machine([{ name: 'Ubuntu', version: 2, default: true }]);
      host.write({ ...host.read(), locale, messageEncoding: messageEncoding === 'UTF-16LE' ? undefined : messageEncoding });
      Object.assign(process.env, host.env());
      const connecting = connectWsl({ user: 'nobody-here' }, { target: 't', runId: 'api-000000000003' });
      await expect(connecting).rejects.toMatchObject({
        code: 'TARGET_UNREACHABLE',
        message: expect.stringContaining(`wsl.exe said: ${said}`),
      });
      await expect(connecting).rejects.toMatchObject({ message: expect.stringContaining('WSL_E_USER_NOT_FOUND') });
      await expect(connecting).rejects.not.toMatchObject({ message: expect.stringMatching(/\uFFFD|\u0000/) });
    },
  );

  it("decodes init's UTF-8 line and wsl.exe's UTF-16LE message in one stream each in its own encoding, in the console and the event log (issue 33.6)", async () => {
    // The STAND-IN wsl.exe, as a Chinese Windows with a WSL 2 distribution: init says in UTF-8
    // that the user is not there, then wsl.exe says so in UTF-16LE, both on stderr.
    const host = machine([{ name: 'Ubuntu', version: 2, default: true }]);
    host.write({ ...host.read(), locale: 'zh-CN', initSays: true });
    const dir = tempDir();
    const result = await run(host, writeMatrix(dir, [{ name: 'no-user', transport: { kind: 'wsl', user: 'nobody-here' } }]), dir);
    expect(result.code).toBe(3);
    const said =
      'wsl.exe said: <3>WSL (11) ERROR: CreateProcessParseCommon:740: getpwnam(nobody-here) failed 17 | 找不到用户。 | 错误代码: Wsl/Service/CreateInstance/WSL_E_USER_NOT_FOUND';
    expect(result.stdout).toContain(said);
    expect(targetErrors(result.events)['no-user']).toMatchObject({ code: 'TARGET_UNREACHABLE', message: expect.stringContaining(said) });
    expect(`${result.stdout}${result.stderr}${readFileSync(path.join(result.runDir, 'events.jsonl'), 'utf8')}`).not.toMatch(
      /~b|\u0000|\uFFFD/,
    );
  });

  it('says when the distribution is gone between connecting and a command, and still removes the work folder', async () => {
    const host = machine([
      { name: 'Ubuntu', version: 2, default: true },
      { name: 'Other', version: 2 },
    ]);
    Object.assign(process.env, host.env());
    const session = await connectWsl({ distribution: 'Ubuntu' }, { target: 't', runId: 'api-000000000002' });
    expect(leftInDistro(host, 'Ubuntu')).toHaveLength(1);
    // "wsl.exe --unregister Ubuntu": its processes end (the session's agent among them) and its files go.
    const now = host.read();
    host.write({ ...now, distros: now.distros.filter((distro) => distro.name !== 'Ubuntu') });
    terminateDistro(host, 'Ubuntu');
    rmSync(host.distroRoot('Ubuntu'), { recursive: true, force: true });
    await expect(session.exec(['true'])).rejects.toMatchObject({
      code: 'WSL_DISTRO_NOT_FOUND',
      message: expect.stringMatching(/"Ubuntu" on this machine is gone.*WSL_E_DISTRO_NOT_FOUND/),
    });
    await session[Symbol.asyncDispose]();
    // Nothing of the session is left running (afterEach).
  });
});

describe('matrix/examples/wsl2-workstation.yaml', () => {
  it('is accepted by plan: a wsl target, and one through ssh', async () => {
    const result = await runCli(['plan', '-m', path.join(repoRoot, 'matrix', 'examples', 'wsl2-workstation.yaml'), '--json']);
    expect(result.code, result.stderr).toBe(0);
    const plan = JSON.parse(result.stdout) as { cells: { name: string; transport?: string[] }[] };
    const names = plan.cells.map((cell) => cell.name);
    expect(names).toContain('workstation-wsl2/sysinfo');
    expect(names).toContain('workstation-wsl2-over-ssh/pinned-vram');
  });

  it('a distribution name with a space, or a wsl.exe option for one, is refused when the matrix is loaded', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'm.yaml');
    writeFileSync(
      file,
      'version: 1\ntargets:\n  - name: a\n    transport: {kind: wsl, distribution: "Ubuntu 24.04"}\n  - name: b\n    transport: {kind: wsl, distribution: "-d"}\n',
    );
    const result = await runCli(['plan', '-m', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/"Ubuntu 24\.04" is not a WSL distribution name: names have no spaces/);
    expect(result.stderr).toMatch(/"-d" is not a WSL distribution name but a wsl\.exe option/);
  });
});

afterEach(() => {
  // Tests that pointed this process at a machine (the API tests) leave PATH as it was for the next.
  if (process.env.CUDAMATRIX_WSL_STANDIN_ROOT) {
    delete process.env.CUDAMATRIX_WSL_STANDIN_ROOT;
    process.env.PATH = (process.env.PATH ?? '')
      .split(path.delimiter)
      .filter((folder) => folder !== path.dirname(STANDIN_WSL))
      .join(path.delimiter);
  }
});
