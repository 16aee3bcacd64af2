/** Runs the real CLI (TypeScript sources through tsx) as a child process. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from './helpers.ts';

export const cliEntry = path.join(repoRoot, 'cli', 'entry.ts');
/** tsx's loader by its full URL, so that the CLI can start from any working directory. */
export const tsxLoader = import.meta.resolve('tsx');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function startCli(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): { child: ChildProcess; done: Promise<CliResult> } {
  const child = spawn(process.execPath, ['--import', tsxLoader, cliEntry, ...args], {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const done = new Promise<CliResult>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

export function runCli(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return startCli(args, options).done;
}

/** Does `action` (send a signal, kill a server) the first time the CLI prints `pattern` (on stdout, or the stream named). */
export function whenOutput(
  child: ChildProcess,
  pattern: string | RegExp,
  action: () => void,
  stream: 'stdout' | 'stderr' = 'stdout',
): Promise<void> {
  return new Promise((resolve) => {
    let seen = '';
    const source = child[stream]!;
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (typeof pattern === 'string' ? seen.includes(pattern) : pattern.test(seen)) {
        source.off('data', onData);
        action();
        resolve();
      }
    };
    source.on('data', onData);
  });
}
