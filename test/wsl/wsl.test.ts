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
function machine(distros: StandinDistro[], o: { locale?: 'en-US' | 'de-DE'; installed?: boolean } = {}): StandinMachine {
  const m = makeStandinMachine(distros, { libsOf, ...o });
  made.push(m);
  return m;
}

afterEach(async () => {
  const machines = made.splice(0);
  await expectNothingLeft(machines);
});

async function expectNothingLeft(machines: StandinMachine[], ms = 8000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const left = machines.map((m) => ({
      processes: standinProcesses(m),
      dirs: m
        .read()
        .distros.flatMap((d) => (existsSync(m.distroRoot(d.name)) ? leftInDistro(m, d.name).map((f) => `${d.name}:/tmp/${f}`) : [])),
    }));
    if (left.every((l) => l.processes.length === 0 && l.dirs.length === 0)) return;
    if (Date.now() > until) throw new Error(`left behind by the WSL stand-in: ${JSON.stringify(left)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The stand-in wsl.exe run directly, with the machine's environment. */
function standin(m: StandinMachine, args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(STANDIN_WSL, args, { env: { ...process.env, ...m.env(env) }, timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
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
  for (const t of targets) {
    lines.push(`  - name: ${t.name}`, `    transport: ${JSON.stringify(t.transport)}`);
    if (t.probes) lines.push(`    probes: ${t.probes}`);
    if (t.timeout) lines.push(`    timeout: ${t.timeout}`);
    if (t.environment) lines.push(`    environment: ${t.environment}`);
  }
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/** `cudamatrix run` with the stand-in on PATH; the events of its run. */
async function run(m: StandinMachine, file: string, dir: string, args: string[] = [], env: Record<string, string> = {}) {
  const r = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs'), ...args], { env: m.env(env) });
  const runs = existsSync(path.join(dir, 'runs')) ? readdirSync(path.join(dir, 'runs')) : [];
  const events: RunEvent[] = runs.length ? readEventLog(path.join(dir, 'runs', runs[0]!, 'events.jsonl')) : [];
  return { ...r, events, runDir: runs.length ? path.join(dir, 'runs', runs[0]!) : '' };
}

const targetErrors = (events: RunEvent[]) => Object.fromEntries(events.flatMap((e) => (e.type === 'target-error' ? [[e.target, e]] : [])));
const cells = (events: RunEvent[], target?: string) =>
  events.flatMap((e) => (e.type === 'cell-end' && e.planned && (!target || e.target === target) ? [e] : []));
const readyEvent = (events: RunEvent[], target: string) => events.find((e) => e.type === 'target-ready' && e.target === target);

describe.skipIf(!ready)('the stand-in wsl.exe answers as the real one does', () => {
  it('lists distributions in UTF-16LE without a BOM, CRLF, a header, the default first and marked *', () => {
    const m = machine([
      { name: 'Debian', version: 2 },
      { name: 'Ubuntu-24.04', version: 2, default: true, state: 'Running' },
    ]);
    const r = standin(m, ['--list', '--verbose']);
    expect(r.code).toBe(0);
    expect([...r.stdout.subarray(0, 4)]).toEqual([0x20, 0x00, 0x20, 0x00]);
    const text = r.stdout.toString('utf16le');
    expect(text).toBe(
      '  NAME            STATE           VERSION\r\n* Ubuntu-24.04    Running         2\r\n  Debian          Stopped         2\r\n',
    );
    expect(standin(m, ['-l', '-v']).stdout.equals(r.stdout)).toBe(true);
    // WSL_UTF8=1: the same text in UTF-8; any other value: still UTF-16LE.
    expect(standin(m, ['--list', '--verbose'], { WSL_UTF8: '1' }).stdout.toString('utf8')).toBe(text);
    expect(standin(m, ['--list', '--verbose'], { WSL_UTF8: 'true' }).stdout.equals(r.stdout)).toBe(true);
  });

  it("speaks the machine's language: German header and states", () => {
    const m = machine([{ name: 'Ubuntu', version: 2, default: true }], { locale: 'de-DE' });
    const text = standin(m, ['-l', '-v']).stdout.toString('utf16le');
    expect(text).toBe('  NAME      STATUS          VERSION\r\n* Ubuntu    Beendet         2\r\n');
  });

  it('refuses a missing distribution with exit status -1 and WSL_E_DISTRO_NOT_FOUND, in UTF-16LE on stderr', () => {
    const m = machine([{ name: 'Ubuntu', version: 2, default: true }]);
    const r = standin(m, ['--distribution', 'Fedora', '--exec', 'true']);
    expect(r.code).toBe(255);
    expect(r.stdout.length).toBe(0);
    expect(r.stderr.toString('utf16le')).toBe(
      'There is no distribution with the supplied name.\r\nError code: Wsl/Service/WSL_E_DISTRO_NOT_FOUND\r\n',
    );
  });

  it('refuses what cudamatrix does not use, as the real one refuses an unknown option', () => {
    const m = machine([{ name: 'Ubuntu', version: 2, default: true }]);
    const unknown = standin(m, ['--distro', 'Ubuntu', '--exec', 'true']);
    expect(unknown.code).toBe(255);
    expect(unknown.stdout.toString('utf16le')).toBe(
      "Invalid command line argument: --distro\r\nPlease use 'wsl.exe --help' to get a list of supported arguments.\r\n",
    );
    expect(standin(m, ['--list', '--quiet']).code).toBe(255);
    expect(standin(m, ['-d']).stdout.toString('utf16le')).toContain('requires a value');
    // A command line for the default shell, a bare --list, or --exec with nothing: refused too.
    for (const args of [['-d', 'Ubuntu', 'echo', 'hi'], ['--list'], ['-d', 'Ubuntu', '--exec']])
      expect(standin(m, args).code, args.join(' ')).toBe(255);
    // What cudamatrix does use: the short and long forms alike.
    const ok = standin(m, ['-d', 'Ubuntu', '-u', 'builder', '--cd', '/tmp', '-e', 'sh', '-c', 'echo "$(id -u) $(pwd) $WSL_DISTRO_NAME"']);
    expect(ok.stdout.toString()).toBe('1000 /tmp Ubuntu\n');
    expect(ok.code).toBe(0);
  });
});

describe.skipIf(!ready)('kind: wsl, first hop (wsl.exe here)', () => {
  it('runs the whole probe suite in the default distribution (stopped, so started), the no-driver path, and leaves nothing', async () => {
    const m = machine([
      { name: 'Debian', version: 2 },
      { name: 'Ubuntu-24.04', version: 2, default: true, state: 'Stopped' },
    ]);
    const dir = tempDir();
    const file = writeMatrix(dir, [{ name: 'wsl2', transport: { kind: 'wsl' } }], 'all');
    const r = await run(m, file, dir, ['--junit', path.join(dir, 'junit.xml')]);
    expect(r.code, r.stderr).toBe(0);
    expect(targetErrors(r.events)).toEqual({});
    const ready = readyEvent(r.events, 'wsl2');
    expect(ready).toMatchObject({
      session: 'wsl Ubuntu-24.04',
      platform: 'linux',
      arch: nodeArch(),
      probe: { uploaded: true, path: expect.stringMatching(/^\/root\/\.cache\/cudamatrix\/deployed\/linux-/) },
    });
    const all = cells(r.events, 'wsl2');
    expect(all.length).toBe(defaultProbeNames().length);
    expect(
      all.every((c) => c.status === 'skipped'),
      JSON.stringify(all.map((c) => [c.probe, c.status, c.reason])),
    ).toBe(true);
    // cudaprobe ran in the distribution: it found WSL 2's /dev/dxg there, and no usable driver.
    const sysinfo = all.find((c) => c.probe === 'sysinfo')!;
    const fact = (name: string) => sysinfo.records.find((x) => x.type === 'sysinfo' && x.name === name)?.value;
    expect(fact('environment')).toBe('wsl2');
    expect(fact('wsl_version')).toBe(2);
    expect(existsSync(path.join(dir, 'junit.xml'))).toBe(true);
    // Started by the first command; the other distribution untouched.
    expect(m.read().distros.map((d) => [d.name, d.state])).toEqual([
      ['Debian', 'Stopped'],
      ['Ubuntu-24.04', 'Running'],
    ]);
    // The probe stays in the distribution's cache: the next run copies nothing, and --strict
    // says that nothing was measured (exit 4), as it does on a machine without a driver.
    const dir2 = tempDir();
    const again = await run(m, writeMatrix(dir2, [{ name: 'wsl2', transport: { kind: 'wsl' } }]), dir2, ['--strict']);
    expect(again.code, again.stderr).toBe(4);
    expect(readyEvent(again.events, 'wsl2')).toMatchObject({ probe: { uploaded: false } });
  });

  it('reads a German, UTF-8 or UTF-16LE list alike and picks the distribution named, whatever its case', async () => {
    const m = machine(
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
      const r = await run(m, file, dir, [], utf8 ? { WSL_UTF8: '1' } : {});
      expect(r.code, r.stderr).toBe(0);
      expect(readyEvent(r.events, 'default')).toMatchObject({ session: 'wsl Ubuntu' });
      expect(readyEvent(r.events, 'named')).toMatchObject({ session: 'wsl Debian' });
    }
  });

  it('names every error a user meets, with what to do, and runs nothing where it cannot', async () => {
    const m = machine([
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
    const r = await run(m, file, dir);
    expect(r.code).toBe(3);
    const errors = targetErrors(r.events);
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
    for (const t of ['missing', 'no-dxg', 'no-libcuda']) {
      expect(cells(r.events, t).map((c) => [c.status, c.errorCode])).toEqual([['error', errors[t]!.code]]);
    }
    expect(cells(r.events, 'wsl1').map((c) => [c.status, c.errorCode, c.reason])).toEqual([
      ['skipped', 'WSL_VERSION_1', errors.wsl1!.message],
    ]);
    // The WSL 1 distribution was not even started: nothing ran in it.
    expect(m.read().distros.find((d) => d.name === 'Legacy')!.state).toBe('Stopped');
    // The user's session ran as that user, in a work folder of its own.
    expect(readyEvent(r.events, 'fine')).toMatchObject({
      probe: { path: expect.stringMatching(/^\/home\/builder\/\.cache\/cudamatrix\/deployed\//) },
    });
  });

  it('skips the cells of a WSL 1 distribution, saying why, and the run beside a WSL 2 one does not fail for it', async () => {
    const m = machine([
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
    const r = await run(m, file, dir, ['--junit', junitFile]);
    // This machine has no driver: everything is skipped, which is exit 0, as without the WSL 1 target.
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const reason = /WSL distribution "Legacy" on this machine runs under WSL 1, which has no GPU.*wsl\.exe --set-version Legacy 2/;
    expect(targetErrors(r.events).wsl1).toMatchObject({ code: 'WSL_VERSION_1', message: expect.stringMatching(reason) });
    const legacy = cells(r.events, 'wsl1');
    expect(legacy.map((c) => [c.probe, c.status, c.errorCode])).toEqual([
      ['sysinfo', 'skipped', 'WSL_VERSION_1'],
      ['pinned-vram', 'skipped', 'WSL_VERSION_1'],
    ]);
    for (const c of legacy) expect(c.reason).toMatch(reason);
    // Nothing ran in it, nor was it started; the WSL 2 target ran as usual (no driver: skipped by cudaprobe).
    expect(r.events.some((e) => e.type === 'cell-start' && e.target === 'wsl1')).toBe(false);
    expect(m.read().distros.find((d) => d.name === 'Legacy')!.state).toBe('Stopped');
    expect(readyEvent(r.events, 'wsl2')).toMatchObject({ session: 'wsl Ubuntu-24.04' });
    expect(cells(r.events, 'wsl2').map((c) => [c.probe, c.status, c.errorCode])).toEqual([
      ['sysinfo', 'skipped', undefined],
      ['pinned-vram', 'skipped', undefined],
    ]);
    // The Windows host's view of the VM (C27): declared for pinned-vram, not sysinfo; cudamatrix
    // runs on Linux here, so it is null with the reason, for both counters.
    const hostVm = (c: CellEndEvent) => c.records.filter((x) => x.type === 'metric' && x.name.startsWith('host_vm_'));
    const [sysinfo, pinned] = cells(r.events, 'wsl2');
    expect(hostVm(sysinfo!)).toEqual([]);
    expect(hostVm(pinned!).map((x) => x.type === 'metric' && [x.name, x.attrs?.counter, x.value])).toEqual(
      ['shared', 'dedicated'].flatMap((c) => ['baseline', 'peak', 'growth'].map((m) => [`host_vm_${m}_bytes`, c, null])),
    );
    for (const x of hostVm(pinned!))
      expect(x).toMatchObject({ reason: expect.stringMatching(/^cudamatrix runs on Linux here \(inside WSL/) });
    // Said as a skip, with the reason, in the console, JUnit and the JSON summary.
    expect(r.stdout).toMatch(/- wsl1 skipped: WSL_VERSION_1: WSL distribution "Legacy" on this machine runs under WSL 1/);
    expect(r.stdout).not.toMatch(/✗/);
    const xml = readFileSync(junitFile, 'utf8');
    await validateJunit(xml);
    const suite = /<testsuite name="wsl1"[^>]*>[\s\S]*?<\/testsuite>/.exec(xml)![0];
    expect(suite).toMatch(/errors="0" skipped="2"/);
    expect(suite).toMatch(
      /<testcase classname="wsl1.probes" name="probe sysinfo runs" time="0">\s*<skipped message="WSL distribution &quot;Legacy&quot; on this machine runs under WSL 1, which has no GPU[^"]*" type="WSL_VERSION_1"\/>/,
    );
    const summary = JSON.parse(readFileSync(path.join(r.runDir, 'summary.json'), 'utf8')) as {
      targets: { name: string; error: unknown; skipped: { code: string; reason: string } | null }[];
    };
    expect(summary.targets.find((t) => t.name === 'wsl1')).toMatchObject({
      error: null,
      skipped: { code: 'WSL_VERSION_1', reason: expect.stringMatching(reason) },
    });
    // --strict: nothing was measured anywhere (exit 4), as on a machine without a driver.
    const dir2 = tempDir();
    const strict = await run(m, writeMatrix(dir2, [{ name: 'wsl1', transport: { kind: 'wsl', distribution: 'Legacy' } }]), dir2, [
      '--strict',
    ]);
    expect(strict.code, strict.stdout + strict.stderr).toBe(4);
  });

  it('says when wsl.exe is not on PATH, when WSL is not installed, and when it has no distribution', async () => {
    const dir = tempDir();
    const file = writeMatrix(dir, [{ name: 'wsl', transport: { kind: 'wsl' } }]);
    const m = machine([{ name: 'Ubuntu', version: 2, default: true }]);
    const noExe = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs1')], {
      env: { CUDAMATRIX_WSL_STANDIN_ROOT: m.root },
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
    const m = machine([{ name: 'Ubuntu', version: 2, default: true }]);
    const dir = tempDir();
    const file = writeMatrix(dir, [{ name: 'slow', transport: { kind: 'wsl' }, timeout: '2s' }]);
    // The test hook reaches the distribution as WSL passes variables in: through WSLENV.
    const started = Date.now();
    const r = await run(m, file, dir, [], { CUDAPROBE_TEST_DELAY_MS: '60000', WSLENV: 'CUDAPROBE_TEST_DELAY_MS' });
    expect(r.code).toBe(3);
    expect(cells(r.events, 'slow').map((c) => [c.status, c.errorCode])).toEqual([['error', 'PROBE_TIMEOUT']]);
    expect(Date.now() - started).toBeLessThan(30_000);
    // afterEach: no cudaprobe (or anything else) left running in the distribution, no folder left.
  });
});

describe.skipIf(!ready)('a WSL session through the transport API', () => {
  it('moves files both ways byte for byte, passes env and stdin, runs as the user, and cleans up on dispose', async () => {
    const m = machine([{ name: 'Ubuntu', version: 2, default: true }]);
    Object.assign(process.env, m.env());
    const session = await connectWsl({ user: 'builder' }, { target: 't', runId: 'api-000000000001' });
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 256));
    const dir = tempDir();
    writeFileSync(path.join(dir, 'in.bin'), bytes);
    const remote = session.joinPath(session.workDir, 'in.bin');
    await session.put(path.join(dir, 'in.bin'), remote);
    await session.get(remote, path.join(dir, 'out.bin'));
    expect(readFileSync(path.join(dir, 'out.bin')).equals(bytes)).toBe(true);
    const r = await session.exec(['sh', '-c', 'echo "$(id -u) $GREETING $(pwd)"; cat; echo to-stderr >&2; exit 7'], {
      env: { GREETING: 'a b  c' },
      stdin: 'from stdin\n',
    });
    expect(r).toMatchObject({ exitCode: 7, stdout: `1000 a b  c ${session.workDir}\nfrom stdin\n`, stderr: 'to-stderr\n' });
    // An argument with quotes, spaces, a newline and shell syntax arrives as it was.
    const odd = ['it\'s "quoted"', ' two  spaces ', 'line\nbreak', '$(nope) `nope` *', '-n'];
    const echoed = await session.exec(['sh', '-c', 'for a in "$@"; do printf "[%s]" "$a"; done', 'sh', ...odd]);
    expect(echoed.stdout).toBe(odd.map((a) => `[${a}]`).join(''));
    expect(statSync(path.join(m.distroRoot('Ubuntu'), session.workDir)).uid).toBe(1000);
    await session[Symbol.asyncDispose]();
    expect(leftInDistro(m, 'Ubuntu')).toEqual([]);
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
      const m = machine([{ name: 'Ubuntu', version: 2, default: true }]);
      m.write({ ...m.read(), locale, messageEncoding: messageEncoding === 'UTF-16LE' ? undefined : messageEncoding });
      Object.assign(process.env, m.env());
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
    const m = machine([{ name: 'Ubuntu', version: 2, default: true }]);
    m.write({ ...m.read(), locale: 'zh-CN', initSays: true });
    const dir = tempDir();
    const r = await run(m, writeMatrix(dir, [{ name: 'no-user', transport: { kind: 'wsl', user: 'nobody-here' } }]), dir);
    expect(r.code).toBe(3);
    const said =
      'wsl.exe said: <3>WSL (11) ERROR: CreateProcessParseCommon:740: getpwnam(nobody-here) failed 17 | 找不到用户。 | 错误代码: Wsl/Service/CreateInstance/WSL_E_USER_NOT_FOUND';
    expect(r.stdout).toContain(said);
    expect(targetErrors(r.events)['no-user']).toMatchObject({ code: 'TARGET_UNREACHABLE', message: expect.stringContaining(said) });
    expect(`${r.stdout}${r.stderr}${readFileSync(path.join(r.runDir, 'events.jsonl'), 'utf8')}`).not.toMatch(/~b|\u0000|\uFFFD/);
  });

  it('says when the distribution is gone between connecting and a command, and still removes the work folder', async () => {
    const m = machine([
      { name: 'Ubuntu', version: 2, default: true },
      { name: 'Other', version: 2 },
    ]);
    Object.assign(process.env, m.env());
    const session = await connectWsl({ distribution: 'Ubuntu' }, { target: 't', runId: 'api-000000000002' });
    expect(leftInDistro(m, 'Ubuntu')).toHaveLength(1);
    // "wsl.exe --unregister Ubuntu": its processes end (the session's agent among them) and its files go.
    const now = m.read();
    m.write({ ...now, distros: now.distros.filter((d) => d.name !== 'Ubuntu') });
    terminateDistro(m, 'Ubuntu');
    rmSync(m.distroRoot('Ubuntu'), { recursive: true, force: true });
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
    const r = await runCli(['plan', '-m', path.join(repoRoot, 'matrix', 'examples', 'wsl2-workstation.yaml'), '--json']);
    expect(r.code, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout) as { cells: { name: string; transport?: string[] }[] };
    const names = plan.cells.map((c) => c.name);
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
    const r = await runCli(['plan', '-m', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/"Ubuntu 24\.04" is not a WSL distribution name: names have no spaces/);
    expect(r.stderr).toMatch(/"-d" is not a WSL distribution name but a wsl\.exe option/);
  });
});

afterEach(() => {
  // Tests that pointed this process at a machine (the API tests) leave PATH as it was for the next.
  if (process.env.CUDAMATRIX_WSL_STANDIN_ROOT) {
    delete process.env.CUDAMATRIX_WSL_STANDIN_ROOT;
    process.env.PATH = (process.env.PATH ?? '')
      .split(path.delimiter)
      .filter((d) => d !== path.dirname(STANDIN_WSL))
      .join(path.delimiter);
  }
});
