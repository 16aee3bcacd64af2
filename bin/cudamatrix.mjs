#!/usr/bin/env node
// Runs the bundled CLI (pnpm build) when it exists, else the TypeScript sources through tsx.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const bundle = fileURLToPath(new URL('../dist/cudamatrix.mjs', import.meta.url));
if (existsSync(bundle)) {
  const { main } = await import(bundle);
  process.exitCode = await main(process.argv);
} else {
  await import('tsx/esm');
  const { main } = await import('../cli/main.ts');
  process.exitCode = await main(process.argv);
}
