/**
 * Makes .gpu/, everything a run on the lent GPU machine needs (it has no Node.js, npm, pnpm or
 * node_modules; only .gpu/ is carried):
 *   node.xz              this machine's Node.js (../shared/gpu/pack-node.sh)
 *   npm.tar.xz           npm, to install the package there as a user would
 *   cudamatrix.tgz       the package (pnpm pack)
 *   gpu-suite.mjs        scripts/gpu-suite.ts, bundled with zx
 *   gpu-probes-raw.mjs   scripts/gpu-probes-raw.ts, bundled with zx
 *   probe-accuracy.mjs   bench/probe-accuracy.ts, bundled
 *   memory-checks.mjs    bench/memory-checks.ts, bundled (its peer, bench/memory_peer.py, is read
 *                        from the checkout beside .gpu/)
 *   p2p-check            bench/p2p-check.cu, built with nvcc (static cudart), where nvcc is
 *   behaviour-checks.mjs bench/behaviour-checks.ts, bundled (its peer, bench/behaviour_peer.py,
 *                        is read from the checkout beside .gpu/)
 *   capability-check.mjs bench/capability-check.ts, bundled (its peer, bench/capability_peer.py,
 *                        is read from the checkout beside .gpu/)
 *
 *   pnpm gpu:prepare     then, on the device:  xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && /tmp/node .gpu/gpu-suite.mjs
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { $ } from 'zx';
import { packageRoot } from '../core/package-root.ts';

const root = packageRoot();
const gpu = path.join(root, '.gpu');
mkdirSync(gpu, { recursive: true });
$.cwd = root;
$.verbose = false;

if (!existsSync(path.join(gpu, 'node.xz'))) {
  console.log('packing Node.js ...');
  await $`${path.join(root, '..', 'shared', 'gpu', 'pack-node.sh')}`;
}

console.log('packing npm ...');
const npmRoot = (await $`npm root -g`).stdout.trim();
await $`tar -C ${npmRoot} -cJf ${path.join(gpu, 'npm.tar.xz')} npm`;

console.log('making the package (pnpm pack) ...');
for (const file of readdirSync(gpu).filter((name) => name.endsWith('.tgz'))) rmSync(path.join(gpu, file));
await $`pnpm pack --pack-destination ${gpu}`;
const tarball = readdirSync(gpu).find((name) => /^cudamatrix-.*\.tgz$/.test(name))!;
renameSync(path.join(gpu, tarball), path.join(gpu, 'cudamatrix.tgz'));

console.log('bundling the GPU-side scripts ...');
for (const [entry, out] of [
  ['scripts/gpu-suite.ts', 'gpu-suite.mjs'],
  ['scripts/gpu-probes-raw.ts', 'gpu-probes-raw.mjs'],
  ['bench/probe-accuracy.ts', 'probe-accuracy.mjs'],
  ['bench/memory-checks.ts', 'memory-checks.mjs'],
  ['bench/behaviour-checks.ts', 'behaviour-checks.mjs'],
  ['bench/capability-check.ts', 'capability-check.mjs'],
]) {
  await build({
    entryPoints: [entry!],
    outfile: path.join(gpu, out!),
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    logLevel: 'warning',
    // CommonJS dependencies call require() and use __dirname; give the ES module bundle both.
    banner: {
      js:
        "import { createRequire as __cmRequire } from 'node:module'; import { fileURLToPath as __cmPath } from 'node:url'; " +
        'const require = __cmRequire(import.meta.url); const __filename = __cmPath(import.meta.url); const __dirname = __cmPath(new URL(".", import.meta.url));',
    },
  });
}
// The p2p probe's independent check (gpu-suite --p2p): the CUDA runtime API, compiled here.
if ((await $({ nothrow: true })`command -v nvcc`).exitCode === 0) {
  console.log('building p2p-check (nvcc) ...');
  await $`nvcc -O2 -o ${path.join(gpu, 'p2p-check')} bench/p2p-check.cu`;
} else {
  console.log('nvcc not found: no p2p-check (gpu-suite --p2p needs it)');
}
console.log((await $`ls -la ${gpu}`).stdout);
