/** The local transport: probes run as child processes of cudamatrix on this machine. */
import { rmSync } from 'node:fs';
import { chmod, copyFile, mkdtemp, rm } from 'node:fs/promises';
import { arch as osArch, tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { supervise } from './supervise.ts';
import type { ConnectContext, ExecOptions, ExecResult, Platform, Session } from './transport.ts';

/** After SIGTERM, how long a process tree gets before SIGKILL. */
const KILL_GRACE_MS = 2000;

/** Opens a session on this machine (the `local` transport; its options are in ./kinds.ts). */
export async function connectLocal(_options: object, context: ConnectContext): Promise<Session> {
  const workDir = await mkdtemp(path.join(tmpdir(), `cudamatrix-${context.runId}-`));
  liveWorkDirs.add(workDir);
  return new LocalSession(workDir);
}

export function nodeArch(): string {
  return ({ x64: 'x86_64', arm64: 'aarch64' } as Record<string, string>)[osArch()] ?? osArch();
}

class LocalSession implements Session {
  readonly description = 'local';
  readonly hostKey = 'local';
  readonly platform: Platform = process.platform === 'win32' ? 'windows' : 'linux';
  readonly arch = nodeArch();
  readonly shell = process.platform === 'win32' ? ('cmd' as const) : ('posix' as const);

  constructor(readonly workDir: string) {}

  exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    return execProcessTree(argv, options);
  }

  async put(localPath: string, remotePath: string, options: { executable?: boolean } = {}): Promise<void> {
    await copyFile(localPath, remotePath);
    if (options.executable) await chmod(remotePath, 0o755);
  }

  async get(remotePath: string, localPath: string): Promise<void> {
    await copyFile(remotePath, localPath);
  }

  joinPath(...parts: string[]): string {
    return path.join(...parts);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await rm(this.workDir, { recursive: true, force: true });
    liveWorkDirs.delete(this.workDir);
  }
}

/**
 * Runs argv (no shell) in its own process group, so that a timeout, an output flood or a
 * cancellation kills the whole tree the command started, not just its first process.
 */
export function execProcessTree(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
  const [file, ...args] = argv;
  if (!file) return Promise.reject(new Error('execProcessTree needs a command'));
  return supervise(argv, options, (io) => {
    const child = execa(file, args, {
      cwd: options.cwd,
      env: options.env,
      input: options.stdin,
      stdin: options.stdin === undefined ? 'ignore' : 'pipe',
      reject: false,
      // The output goes to supervise(), which keeps it up to the cap.
      buffer: false,
      // Its own process group (POSIX): the tree can be killed as one, and a Ctrl-C typed at the
      // terminal reaches cudamatrix only, which then stops probes in order and still writes results.
      detached: process.platform !== 'win32',
      windowsHide: true,
    });
    child.stdout?.setEncoding('utf8').on('data', io.stdout);
    child.stderr?.setEncoding('utf8').on('data', io.stderr);
    const done = child.then((r) => {
      // Not started at all (no such file, not executable): say why where its errors would go.
      if (r.failed && r.exitCode === undefined && r.signal === undefined) io.stderr(r.shortMessage ?? r.message ?? '');
      return { exitCode: r.exitCode ?? null, signal: r.signal ?? null };
    });
    const stop = (): void => {
      const pid = child.pid;
      if (pid === undefined) return;
      signalTree(pid, 'SIGTERM');
      setTimeout(() => signalTree(pid, 'SIGKILL'), KILL_GRACE_MS).unref();
    };
    if (child.pid !== undefined) {
      const pid = child.pid;
      liveGroups.add(pid);
      void done.finally(() => liveGroups.delete(pid));
    }
    return { done, stop };
  });
}

/**
 * Process groups of commands still running, and work folders of sessions not yet disposed. Each
 * command runs in a group of its own, so a cudamatrix that quits at once (a second Ctrl-C, a
 * crash) would leave them running and their folders behind: both go on the way out,
 * synchronously, since nothing asynchronous runs in an exit handler.
 */
const liveGroups = new Set<number>();
const liveWorkDirs = new Set<string>();
process.on('exit', () => {
  for (const pid of liveGroups) signalTree(pid, 'SIGKILL');
  for (const dir of liveWorkDirs) rmSync(dir, { recursive: true, force: true });
});

function signalTree(pid: number, signal: NodeJS.Signals): void {
  try {
    if (process.platform === 'win32') {
      void execa('taskkill', ['/T', '/F', '/PID', String(pid)], { reject: false });
    } else {
      process.kill(-pid, signal);
    }
  } catch {
    // Already gone.
  }
}
