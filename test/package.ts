/**
 * The package as a user gets it: `pnpm pack` run on a copy of this checkout (so that the
 * checkout's own dist/ and prebuilt/ are left alone while other test files run), then
 * `npm install -g` of the tarball into an empty prefix, offline: it has no dependencies to fetch.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { repoRoot, tempDir, testCacheDir } from './helpers.ts';

/** What `pnpm pack` needs of the checkout: the sources, the probe sources, the manifest files. */
const PACK_INPUTS = [
  'bin',
  'cli',
  'core',
  'events',
  'matrix',
  'probes',
  'run',
  'transports',
  'verdicts',
  'reporters',
  'behaviour',
  'report',
  'scripts',
  'docker',
  'package.json',
  'pnpm-lock.yaml',
  'tsconfig.json',
  'README.md',
  'docs',
];

/**
 * Packs a copy of the checkout; returns the tarball's path. Compiles cudaprobe three times (cached).
 * The tarball is kept in the suite's cache under a hash of every packed input, so that the test
 * files that need the package (package, action, the workflow played end to end) pack it once.
 */
export function packCheckout(): string {
  const cached = path.join(testCacheDir, 'packages', `cudamatrix-${packInputsHash()}.tgz`);
  if (existsSync(cached)) return cached;
  const fresh = packFresh();
  mkdirSync(path.dirname(cached), { recursive: true });
  // Two test files packing at once both succeed; the rename makes either tarball the cached one whole.
  const partial = `${cached}.${process.pid}.partial`;
  copyFileSync(fresh, partial);
  renameSync(partial, cached);
  // Packages of older sources are of no more use.
  for (const name of readdirSync(path.dirname(cached)))
    if (/^cudamatrix-[0-9a-f]{16}\.tgz$/.test(name) && name !== path.basename(cached))
      rmSync(path.join(path.dirname(cached), name), { force: true });
  return cached;
}

const packed = (src: string) => !/[/\\](runs|dist|prebuilt|out|node_modules)$/.test(src);

/** sha256 over the packed inputs' paths and contents (and `extra` files'). */
function packInputsHash(extra: string[] = []): string {
  const hash = createHash('sha256');
  const walk = (rel: string) => {
    const full = path.join(repoRoot, rel);
    if (!packed(full) || !existsSync(full)) return;
    if (statSync(full).isDirectory()) {
      for (const name of readdirSync(full).sort()) walk(path.join(rel, name));
    } else {
      hash.update(`${rel}\0`).update(readFileSync(full)).update('\0');
    }
  };
  for (const entry of [...PACK_INPUTS, ...extra]) walk(entry);
  return hash.digest('hex').slice(0, 16);
}

/** A copy of the packed inputs, with the checkout's node_modules. */
function copyCheckout(prefix: string): string {
  const copy = tempDir(prefix);
  for (const entry of PACK_INPUTS) {
    cpSync(path.join(repoRoot, entry), path.join(copy, entry), {
      recursive: true,
      // Run folders and earlier builds are not inputs.
      filter: packed,
    });
  }
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
  return copy;
}

function packFresh(): string {
  const copy = copyCheckout('cm-pack-');
  const out = tempDir('cm-tarball-');
  execFileSync('pnpm', ['pack', '--pack-destination', out], { cwd: copy, stdio: 'pipe', timeout: 600_000 });
  const tarball = readdirSync(out).find((file) => file.endsWith('.tgz'));
  if (!tarball) throw new Error(`pnpm pack wrote no tarball in ${out}`);
  return path.join(out, tarball);
}

/** Installs the tarball into a new, empty prefix with npm, offline; returns the prefix. */
export function installPackage(tarball: string): { prefix: string; root: string; bin: string } {
  const prefix = tempDir('cm-prefix-');
  const cache = tempDir('cm-npm-cache-');
  mkdirSync(prefix, { recursive: true });
  execFileSync('npm', ['install', '--global', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', '--cache', cache, tarball], {
    stdio: 'pipe',
    timeout: 120_000,
  });
  const root = path.join(prefix, 'lib', 'node_modules', 'cudamatrix');
  return { prefix, root, bin: path.join(prefix, 'bin', 'cudamatrix') };
}

/** A copy of the checkout `pnpm build:sea` can run in: the packed inputs, node_modules, tools/sea-node's Node.js binaries. */
export function seaBuildCheckout(seaNodeModules = path.join(repoRoot, 'tools', 'sea-node', 'node_modules')): string {
  const copy = copyCheckout('cm-sea-');
  mkdirSync(path.join(copy, 'tools', 'sea-node'), { recursive: true });
  symlinkSync(seaNodeModules, path.join(copy, 'tools', 'sea-node', 'node_modules'), 'dir');
  return copy;
}

/** What `pnpm build:sea` writes in dist/sea/: the executables and their .sha256 files. */
export interface SeaBuild {
  dir: string;
  linux: string;
  windows: string;
  /** The build's own time in seconds, when this call made it (undefined: it was cached). */
  builtIn?: number;
}

/**
 * The single executables (scripts/build-sea.ts), built by `pnpm build:sea` in a copy of the
 * checkout and kept in the suite's cache under a hash of the packed inputs and the pinned Node.js
 * versions (tools/sea-node), as packCheckout keeps the tarball: a build takes minutes.
 */
export function buildSeaCached(): SeaBuild {
  const version = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
  const names = (dir: string) => ({
    dir,
    linux: path.join(dir, `cudamatrix-${version}-linux-x64`),
    windows: path.join(dir, `cudamatrix-${version}-windows-x64.exe`),
  });
  const cached = path.join(testCacheDir, 'sea', packInputsHash(['tools/sea-node/package.json']));
  if (existsSync(cached)) return names(cached);
  const copy = seaBuildCheckout();
  const started = performance.now();
  execFileSync('pnpm', ['build:sea'], { cwd: copy, stdio: 'pipe', timeout: 900_000 });
  const builtIn = (performance.now() - started) / 1000;
  mkdirSync(path.dirname(cached), { recursive: true });
  // Two test files building at once both succeed; the rename makes either build the cached one whole.
  const partial = `${cached}.${process.pid}.partial`;
  cpSync(path.join(copy, 'dist', 'sea'), partial, { recursive: true });
  try {
    renameSync(partial, cached);
  } catch {
    rmSync(partial, { recursive: true, force: true });
  }
  // Builds of older sources are of no more use.
  for (const name of readdirSync(path.dirname(cached)))
    if (/^[0-9a-f]{16}$/.test(name) && name !== path.basename(cached))
      rmSync(path.join(path.dirname(cached), name), { recursive: true, force: true });
  return { ...names(cached), builtIn };
}
