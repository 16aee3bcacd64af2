#!/usr/bin/env node
// The process entry of the CLI (pnpm scripts, bin/cudamatrix.mjs and the bundle start here).
import { main } from './main.ts';

process.exitCode = await main(process.argv);
