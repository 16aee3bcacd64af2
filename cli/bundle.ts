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
  // CommonJS dependencies call require(); give the ES module bundle one.
  banner: { js: "import { createRequire as __cmRequire } from 'node:module'; const require = __cmRequire(import.meta.url);" },
  logLevel: 'warning',
} as const;
await build({ ...common, entryPoints: ['cli/entry.ts'], outfile: 'dist/cudamatrix.mjs' });
// The GPU-machine benchmark travels the same way.
await build({ ...common, entryPoints: ['bench/probe-accuracy.ts'], outfile: 'dist/probe-accuracy.mjs' });
console.log('wrote dist/cudamatrix.mjs and dist/probe-accuracy.mjs');
