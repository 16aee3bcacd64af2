/**
 * Makes what the package ships besides its sources' outputs (run by `pnpm pack` as "prepack"):
 * the bundled CLI (dist/cudamatrix.cjs) and cudaprobe prebuilt for every platform the package
 * serves, each with its sha256, and the hashes of the sources they were built from, in
 * prebuilt/manifest.json (read by probes/binary.ts).
 *
 *   pnpm pack            (or: pnpm exec tsx scripts/prepare-package.ts)
 *
 * "postpack" runs it with --clean, which removes prebuilt/ and dist/ again: a development checkout
 * compiles cudaprobe from its sources (probes/binary.ts), so what runs there is always what
 * the sources say, and the tests see the same checkout whether or not a package was made.
 *
 * Needs the three compilers (Debian: g++, g++-aarch64-linux-gnu, g++-mingw-w64-x86-64-posix):
 * a package without one of its binaries would fail on that platform's targets, so a missing
 * compiler stops the packing instead.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { $, chalk, ProcessOutput } from 'zx';
import { CudamatrixError } from '../core/errors.ts';
import { packageRoot } from '../core/package-root.ts';
import { TOOL_VERSION } from '../core/version.ts';
import { glibcFloor, PREBUILT_DIR, platformKey, sourceHashes, type PrebuiltManifest } from '../probes/binary.ts';
import { buildProbe, probeSourceDir } from '../probes/build.ts';
import type { Platform } from '../transports/transport.ts';

/** The platforms the package serves: x86-64 and Arm Linux servers, Windows workstations. */
const PLATFORMS: [Platform, string][] = [
  ['linux', 'x86_64'],
  ['linux', 'aarch64'],
  ['windows', 'x86_64'],
];

const root = packageRoot();
const out = path.join(root, PREBUILT_DIR);
/** What the package is made of besides the sources: removed after packing, and on a failure. */
const clean = () => {
  rmSync(out, { recursive: true, force: true });
  rmSync(path.join(root, 'dist'), { recursive: true, force: true });
};
if (process.argv.includes('--clean')) {
  // After packing (postpack): a checkout then compiles cudaprobe from its sources, and its
  // bin script runs the sources, never a bundle older than them.
  clean();
  process.exit(0);
}
$.cwd = root;
$.verbose = false;

// Ctrl-C stops the compilers (buildProbe removes its half-built objects) and the half-made package.
// A lasting listener, not a once: execa's exit hook re-raises a signal nobody else listens to.
const stop = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stop.abort());

try {
  console.log('bundling the CLI ...');
  await $`node --import tsx scripts/build-bundle.ts`;
  rmSync(out, { recursive: true, force: true });
  const manifest: PrebuiltManifest = { version: TOOL_VERSION, sources: await sourceHashes(probeSourceDir()), binaries: {} };
  for (const [platform, arch] of PLATFORMS) {
    const key = platformKey(platform, arch);
    const binary = await buildProbe({ platform, arch, onProgress: (message) => console.log(message), signal: stop.signal });
    const name = path.basename(binary.path);
    mkdirSync(path.join(out, key), { recursive: true });
    copyFileSync(binary.path, path.join(out, key, name));
    const bytes = readFileSync(binary.path);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const glibc = platform === 'linux' ? glibcFloor(bytes) : undefined;
    manifest.binaries[key] = { file: `${key}/${name}`, sha256, compiler: binary.compiler, ...(glibc ? { glibc } : {}) };
    console.log(
      `${chalk.green('✓')} ${key}: ${name}, sha256 ${sha256.slice(0, 16)}…, ${binary.compiler}${glibc ? `, needs glibc ${glibc} or newer` : ''}`,
    );
  }
  writeFileSync(path.join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`wrote ${PREBUILT_DIR}/manifest.json`);
} catch (error) {
  clean();
  if (stop.signal.aborted) {
    console.error('interrupted: no package made');
    process.exit(130);
  }
  const message =
    error instanceof CudamatrixError
      ? `error [${error.code}]: ${error.message}`
      : error instanceof ProcessOutput
        ? `bundling the CLI failed:\n${error.stderr}`
        : String(error);
  console.error(`${message}\nno package made`);
  process.exit(1);
}
