#!/usr/bin/env node
// Runs the bundled CLI (pnpm build) when it exists, else the TypeScript sources through tsx.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const bundle = fileURLToPath(new URL('../dist/cudamatrix.mjs', import.meta.url));
if (existsSync(bundle)) {
  await import(bundle);
} else {
  await import('tsx/esm');
  await import('../cli/entry.ts');
}
