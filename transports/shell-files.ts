/**
 * The shell scripts that the transports send to a remote sh (transports/ssh/agent.sh): real .sh
 * files, so that shellcheck reads them (test/shell-files.test.ts). From source they are read
 * from their files; the bundle holds their text (scripts/build-bundle.ts defines CUDAMATRIX_SHELL_FILES).
 */
import { readFileSync } from 'node:fs';

declare const CUDAMATRIX_SHELL_FILES: Record<string, string> | undefined;

/** The script at `name` (relative to transports/), less its comment lines and blank lines. */
export function shellFile(name: string): string {
  const text =
    typeof CUDAMATRIX_SHELL_FILES === 'undefined' ? readFileSync(new URL(name, import.meta.url), 'utf8') : CUDAMATRIX_SHELL_FILES[name];
  if (text === undefined) throw new Error(`the bundle holds no shell file ${name} (scripts/build-bundle.ts)`);
  return text
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'))
    .join('\n');
}
