#!/usr/bin/env node
// The process entry of the CLI (pnpm scripts, bin/cudamatrix.cjs and the bundle start here).
import { main } from './main.ts';

// A reader that goes away (`cudamatrix run | head -3`) must stop the printing, never the run:
// the results still go to their files. Without this, the first write after the reader closed
// raises EPIPE and the process dies with nothing written.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    stream.write = (() => true) as typeof stream.write;
  });
}

// No top-level await: the bundle is CommonJS, so that Node 20 can cache its compiled code (bin/).
void main(process.argv).then((code) => {
  process.exitCode = code;
});
