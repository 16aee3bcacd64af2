/**
 * Bundles the CLI into dist/cudamatrix.mjs (pnpm build): one file that runs with plain Node.js,
 * for machines that get a copy of the tree without node_modules (the GPU machine). It still
 * reads matrix/default.yaml, package.json and the cudaprobe sources from the tree around it.
 */
import { build } from 'esbuild';

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  // CommonJS dependencies call require() and use __dirname; give the ES module bundle both.
  banner: {
    js:
      "import { createRequire as __cmRequire } from 'node:module'; import { fileURLToPath as __cmPath } from 'node:url'; " +
      'const require = __cmRequire(import.meta.url); const __filename = __cmPath(import.meta.url); const __dirname = __cmPath(new URL(".", import.meta.url));',
  },
  // ssh2's optional native speed-up: pnpm does not build it, and ssh2 does without it.
  external: ['cpu-features', '*.node'] as string[],
  logLevel: 'warning',
} as const;
await build({ ...common, entryPoints: ['cli/entry.ts'], outfile: 'dist/cudamatrix.mjs' });
// The GPU-machine benchmark travels the same way.
await build({ ...common, entryPoints: ['bench/probe-accuracy.ts'], outfile: 'dist/probe-accuracy.mjs' });
console.log('wrote dist/cudamatrix.mjs and dist/probe-accuracy.mjs');
