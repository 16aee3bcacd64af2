/**
 * The installable package (issue 10): `pnpm pack`, then `npm install -g` of the tarball into an
 * empty prefix, offline, and the installed `cudamatrix` run with a PATH that holds Node.js and
 * nothing else (no compiler, no npm): --version, plan, probes list, doctor and run on the default
 * matrix. Its prebuilt Linux arm64 cudaprobe runs its no-driver path under qemu-aarch64-static,
 * and its Windows one under Wine, both from the installed package.
 */
import { execFileSync, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { PrebuiltManifest } from '../../probes/binary.ts';
import { parseProbeOutput, type SysinfoRecord } from '../../probes/protocol.ts';
import { hasCommand, integrationAvailable, repoRoot, tempDir, testCacheDir, WINE } from '../helpers.ts';
import { installPackage, packCheckout } from '../package.ts';

const ready = integrationAvailable(
  'pnpm, npm and the three cudaprobe compilers (the package ships a binary for each platform)',
  hasCommand('pnpm') &&
    hasCommand('npm') &&
    hasCommand('g++') &&
    hasCommand('aarch64-linux-gnu-g++') &&
    hasCommand('x86_64-w64-mingw32-g++-posix'),
  'npm install -g pnpm@10; apt-get install g++ g++-aarch64-linux-gnu g++-mingw-w64-x86-64-posix',
);

let installed: ReturnType<typeof installPackage>;
let tarball: string;
/** A PATH with Node.js alone: what runs from the package must need nothing else. */
let nodeOnly: string;
let home: string;

beforeAll(() => {
  if (!ready) return;
  tarball = packCheckout();
  installed = installPackage(tarball);
  nodeOnly = tempDir('cm-node-only-');
  symlinkSync(process.execPath, path.join(nodeOnly, 'node'));
  home = tempDir('cm-home-');
}, 900_000);

function cudamatrix(args: string[], cwd = home): SpawnSyncReturns<string> {
  return spawnSync(installed.bin, args, {
    cwd,
    encoding: 'utf8',
    timeout: 300_000,
    env: { PATH: nodeOnly, HOME: home, TMPDIR: process.env.TMPDIR, NO_COLOR: '1', CUDAMATRIX_CACHE: path.join(home, 'cache') },
  });
}

const sysinfo = (stdout: string) =>
  Object.fromEntries(
    parseProbeOutput(stdout).records.flatMap((record) => (record.type === 'sysinfo' ? [[record.name, record as SysinfoRecord]] : [])),
  );

describe.runIf(ready)('the installed package', () => {
  it('holds the bundled CLI, the default matrix, its schema, the example matrices, the Dockerfile and three prebuilt cudaprobes, and depends on nothing', () => {
    const pkg = JSON.parse(readFileSync(path.join(installed.root, 'package.json'), 'utf8'));
    expect(pkg.dependencies ?? {}).toEqual({});
    expect(pkg.engines.node).toBe('>=20.19');
    expect(readdirSync(installed.root).sort()).toEqual([
      'README.md',
      'bin',
      'dist',
      'docker',
      'docs',
      'matrix',
      'package.json',
      'prebuilt',
    ]);
    expect(readdirSync(path.join(installed.root, 'dist'))).toEqual(['cudamatrix.cjs']);
    expect(readdirSync(path.join(installed.root, 'matrix')).sort()).toEqual([
      'default.yaml',
      'examples',
      'known-bad-drivers.schema.json',
      'known-bad-drivers.yaml',
      'schema.json',
    ]);
    const manifest = JSON.parse(readFileSync(path.join(installed.root, 'prebuilt', 'manifest.json'), 'utf8')) as PrebuiltManifest;
    expect(Object.keys(manifest.binaries).sort()).toEqual(['linux-arm64', 'linux-x64', 'windows-x64']);
    for (const binary of Object.values(manifest.binaries)) {
      const content = readFileSync(path.join(installed.root, 'prebuilt', binary.file));
      expect(createHash('sha256').update(content).digest('hex'), binary.file).toBe(binary.sha256);
    }
    expect(manifest.sources['main.cpp']).toMatch(/^[0-9a-f]{64}$/);
    // Each Linux binary's glibc floor, as binutils' objdump reads its dynamic symbols (a peer of
    // the manifest's reading), and never above this machine's glibc, which built it.
    const here = /(\d+\.\d+)\s*$/.exec(execFileSync('ldd', ['--version'], { encoding: 'utf8' }).split('\n')[0]!)![1]!;
    for (const [key, objdump] of [
      ['linux-x64', 'objdump'],
      ['linux-arm64', 'aarch64-linux-gnu-objdump'],
    ] as const) {
      const symbols = execFileSync(objdump, ['-T', path.join(installed.root, 'prebuilt', manifest.binaries[key]!.file)], {
        encoding: 'utf8',
      });
      const floor = [...symbols.matchAll(/GLIBC_(2\.\d+(?:\.\d+)?)/g)]
        .map((match) => match[1]!)
        .sort((left, right) => Number(left.split('.')[1]) - Number(right.split('.')[1]))
        .at(-1);
      expect(manifest.binaries[key]!.glibc, key).toBe(floor);
      expect(Number(floor!.split('.')[1]), `${key} needs glibc ${floor}, this machine has ${here}`).toBeLessThanOrEqual(
        Number(here.split('.')[1]),
      );
    }
    expect(manifest.binaries['windows-x64']!.glibc).toBeUndefined();
  });

  it('answers --version, plan and probes list with Node.js alone on PATH', () => {
    const pkg = JSON.parse(readFileSync(path.join(installed.root, 'package.json'), 'utf8'));
    const version = cudamatrix(['--version']);
    expect(version.stdout.trim()).toBe(pkg.version);
    const plan = cudamatrix(['plan']);
    expect(plan.status, plan.stderr).toBe(0);
    // The embedded default matrix is named by where it is installed, not by a ../.. path from here.
    expect(plan.stdout).toContain(`cells on 1 target from ${path.join(installed.root, 'matrix', 'default.yaml')}\n`);
    const probes = cudamatrix(['probes', 'list']);
    expect(probes.status, probes.stderr).toBe(0);
    expect(probes.stdout).toMatch(/^sysinfo\s+C4/m);
  });

  it('starts when its code cache cannot be written: a HOME under /proc, a read-only cache folder', () => {
    // Node's recursive mkdir spins forever under /proc: the bin script must not use it.
    for (const env of [{ HOME: '/proc/nope' }, { HOME: home, CUDAMATRIX_CACHE: '/proc/nope/cache' }]) {
      const result = spawnSync(installed.bin, ['--version'], { encoding: 'utf8', timeout: 20_000, env: { PATH: nodeOnly, ...env } });
      expect(result.error, JSON.stringify(env)).toBeUndefined();
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    }
  });

  it('run says so when the current folder was removed (a usage error, not "internal error")', () => {
    const gone = tempDir('cm-gone-');
    const result = spawnSync('/bin/sh', ['-c', 'cd "$1" && /bin/rmdir "$1" && exec "$2" run -q', 'sh', gone, installed.bin], {
      encoding: 'utf8',
      timeout: 20_000,
      env: { PATH: nodeOnly, HOME: home },
    });
    expect(result.stderr).toBe(
      'error [USAGE]: the current folder no longer exists (it was removed or moved); cd to one that does and run again\n',
    );
    expect(result.status).toBe(2);
  });

  it('doctor uses the prebuilt cudaprobe and needs no compiler', () => {
    const result = cudamatrix(['doctor']);
    // No driver on this machine: exit 3, but the probe ran.
    expect(result.status, result.stderr).toBe(3);
    expect(result.stdout).toMatch(/✓ cudaprobe\s+the package's prebuilt linux-x64 binary: .*no compiler needed/);
    expect(result.stdout).not.toMatch(/compiler\s+g\+\+/);
    expect(result.stdout).toMatch(/✓ environment\s+linux/);
    expect(result.stdout).toMatch(/i linux-arm64 targets\s+prebuilt cudaprobe/);
    expect(result.stdout).toMatch(/i windows-x64 targets\s+prebuilt cudaprobe/);
  });

  it('runs the default matrix: results written, nothing compiled', () => {
    const work = tempDir('cm-pkg-run-');
    const result = cudamatrix(['run', '--quick'], work);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/No usable NVIDIA driver was found/);
    const runs = path.join(work, 'results', 'runs');
    const [run] = readdirSync(runs);
    expect(readdirSync(path.join(runs, run!)).sort()).toEqual(['events.jsonl', 'junit.xml', 'summary.json']);
    const events = readFileSync(path.join(runs, run!, 'events.jsonl'), 'utf8');
    expect(events).toMatch(/"type":"cell-end"/);
    expect(events).toMatch(/"type":"target-ready".*"probe":\{[^}]*"built":false,"prebuilt":true/);
    // A compiled cudaprobe would sit in the cache's cudaprobe/ folder; only V8's code cache is there.
    expect(readdirSync(path.join(home, 'cache'))).toEqual(['v8']);
  });

  it("writes the report page the sources write: the page's script was bundled into it by pnpm pack (it has no esbuild)", () => {
    // --check: exit 0 only when the committed records/behaviour.html (written from the sources) is what it writes, byte for byte.
    const result = cudamatrix(['report', '--check'], repoRoot);
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/records\/behaviour\.html and \d+ claim files match the records/);
  });

  it('runs from npx too', () => {
    const result = spawnSync(
      'npx',
      ['--yes', '--offline', '--cache', tempDir('cm-npx-cache-'), '--package', tarball, 'cudamatrix', '--version'],
      {
        cwd: home,
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});

describe.runIf(ready)("the package's prebuilt cudaprobe for other platforms", () => {
  const qemu = integrationAvailable(
    'qemu-aarch64-static (runs the arm64 cudaprobe here)',
    hasCommand('qemu-aarch64-static', ['--version']) && existsSync('/usr/aarch64-linux-gnu/lib'),
    'apt-get install qemu-user-static g++-aarch64-linux-gnu',
  );
  const wine = integrationAvailable('Wine (runs cudaprobe.exe here)', hasCommand(WINE, ['--version']), 'apt-get install wine64');

  it.runIf(qemu)('linux-arm64 runs its no-driver path under qemu-aarch64-static', () => {
    // The package's files carry no execute bit (pnpm pack keeps it for bin/ only); cudamatrix
    // copies a binary to the target with it set, and so does this test.
    const exe = path.join(tempDir('cm-arm64-'), 'cudaprobe');
    copyFileSync(path.join(installed.root, 'prebuilt', 'linux-arm64', 'cudaprobe'), exe);
    chmodSync(exe, 0o755);
    // -L: the arm64 C library (the binary links glibc dynamically, libstdc++ statically).
    const result = spawnSync('qemu-aarch64-static', ['-L', '/usr/aarch64-linux-gnu', exe, 'run', 'sysinfo'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(result.status, result.stderr).toBe(3);
    const facts = sysinfo(result.stdout);
    expect(facts.arch!.value).toBe('aarch64');
    expect(facts.os_family!.value).toBe('linux');
    expect(facts.driver_found!.value).toBe(false);
  });

  it.runIf(wine)('windows-x64 runs its no-driver path under Wine', () => {
    const exe = path.join(installed.root, 'prebuilt', 'windows-x64', 'cudaprobe.exe');
    const prefix = path.join(testCacheDir, 'wineprefix');
    mkdirSync(prefix, { recursive: true });
    const result = spawnSync(WINE, [exe, 'run', 'sysinfo'], {
      encoding: 'utf8',
      timeout: 300_000,
      env: { ...process.env, WINEDEBUG: '-all', WINEPREFIX: prefix },
    });
    expect(result.status, result.stderr).toBe(3);
    const facts = sysinfo(result.stdout);
    expect(facts.os_family!.value).toBe('windows');
    expect(facts.cuda_driver_version!.reason).toContain('nvcuda.dll');
  });
});
