/**
 * The package as a user gets it: `pnpm pack` run on a copy of this checkout (so that the
 * checkout's own dist/ and prebuilt/ are left alone while other test files run), then
 * `npm install -g` of the tarball into an empty prefix, offline: it has no dependencies to fetch.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { repoRoot, tempDir } from './helpers.ts';

/** What `pnpm pack` needs of the checkout: the sources, the probe sources, the manifest files. */
const PACK_INPUTS = ['bin', 'cli', 'core', 'events', 'matrix', 'probes', 'results', 'run', 'runners', 'scripts', 'docker', 'package.json', 'pnpm-lock.yaml', 'tsconfig.json', 'README.md'];

/** Packs a copy of the checkout; returns the tarball's path. Compiles cudaprobe three times (cached). */
export function packCheckout(): string {
  const copy = tempDir('cm-pack-');
  for (const entry of PACK_INPUTS) {
    cpSync(path.join(repoRoot, entry), path.join(copy, entry), {
      recursive: true,
      // Run folders and earlier builds are not inputs.
      filter: (src) => !/[/\\](runs|dist|prebuilt|out)$/.test(src),
    });
  }
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
  const out = tempDir('cm-tarball-');
  execFileSync('pnpm', ['pack', '--pack-destination', out], { cwd: copy, stdio: 'pipe', timeout: 600_000 });
  const tarball = readdirSync(out).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error(`pnpm pack wrote no tarball in ${out}`);
  return path.join(out, tarball);
}

/** Installs the tarball into a new, empty prefix with npm, offline; returns the prefix. */
export function installPackage(tarball: string): { prefix: string; root: string; bin: string } {
  const prefix = tempDir('cm-prefix-');
  const cache = tempDir('cm-npm-cache-');
  mkdirSync(prefix, { recursive: true });
  execFileSync('npm', ['install', '--global', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', '--cache', cache, tarball], { stdio: 'pipe', timeout: 120_000 });
  const root = path.join(prefix, 'lib', 'node_modules', 'cudamatrix');
  return { prefix, root, bin: path.join(prefix, 'bin', 'cudamatrix') };
}
