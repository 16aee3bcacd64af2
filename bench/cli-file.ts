/** The CLI a bench runs as a child process: --cli FILE, or this checkout's built one. */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../core/package-root.ts';

/**
 * `given` (--cli FILE: a JavaScript file run with this node, e.g. an installed package's bin
 * script), else bin/cudamatrix.cjs when `pnpm build` has made the bundle it runs; `usage` exits.
 */
export function cliFile(given: string | undefined, usage: (message: string) => never): string {
  if (given) {
    const file = path.resolve(given);
    if (!existsSync(file)) usage(`--cli ${given}: no such file`);
    return file;
  }
  const root = packageRoot();
  if (!existsSync(path.join(root, 'dist', 'cudamatrix.cjs'))) {
    usage(`no built CLI in ${path.join(root, 'dist')}: run \`pnpm build\` first, or name the CLI to run with --cli FILE`);
  }
  return path.join(root, 'bin', 'cudamatrix.cjs');
}
