/**
 * The local transport: probes run as child processes of cudamatrix on this machine, Linux or
 * Windows (cudamatrix itself running as a Windows process: a self-hosted runner, a workstation).
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { chmod, copyFile, mkdtemp, rm } from 'node:fs/promises';
import { arch as osArch, tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import type { Duplex } from 'node:stream';
import { streamProcess } from './stream.ts';
import { supervise } from './supervise.ts';
import type { ConnectContext, ExecOptions, ExecResult, Platform, Session } from './transport.ts';

/**
 * After SIGTERM, how long a process tree gets before SIGKILL. On Windows, where a tree is ended
 * at once (no signals there), how long before a tree that is still running is ended once more.
 */
const KILL_GRACE_MS = 2000;

const isWindows = process.platform === 'win32';

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

  openStream(argv: string[]): Promise<Duplex> {
    return streamProcess(argv);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    // Retried: Windows keeps a just-terminated program's .exe locked for a moment (EBUSY, EPERM).
    await rm(this.workDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
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
      // Not on Windows: there `detached` also takes the child off the console and out of Node's job
      // object, whose closing ends the child when cudamatrix dies in any way (a crash, taskkill /F).
      // So a Ctrl-C in the console reaches the probe too (Windows sends it to every process on the
      // console); cudamatrix still cancels the cell and ends what is left of the tree.
      detached: !isWindows,
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
      if (isWindows) {
        void endTreeWindows(pid);
        // Ended once more if its first process still runs (Node holds its handle until it has
        // exited, so the PID cannot be another process's yet).
        setTimeout(() => {
          if (child.exitCode === null && child.signalCode === null) void endTreeWindows(pid);
        }, KILL_GRACE_MS).unref();
        return;
      }
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
  for (const pid of liveGroups) {
    if (isWindows) endTreeWindowsSync(pid);
    else signalTree(pid, 'SIGKILL');
  }
  for (const dir of liveWorkDirs) rmSync(dir, { recursive: true, force: true, maxRetries: isWindows ? 5 : 0, retryDelay: 100 });
});

/** POSIX: signals the process group the command leads. */
function signalTree(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/*
 * Windows has no process groups and no signals: a tree is ended by terminating each of its
 * processes (TerminateProcess, which process.kill calls there). `taskkill /T /F /PID` does that on
 * Windows, walking the tree by parent PID. Wine's taskkill (8.0, Debian's, where the tests run)
 * has no /T ("Unknown or invalid command line option", exit 1); whenever taskkill fails but for
 * "no such process" (128), the tree is walked here from `wmic process get
 * ParentProcessId,ProcessId` (Wine has it; so does Windows up to 11 23H2, where it is deprecated)
 * and each process terminated. The first process is ended first, so that it starts no more;
 * on the way out (an exit handler, synchronous) the same steps run synchronously.
 */

/** How long taskkill or wmic may take. */
const WINDOWS_TOOL_TIMEOUT_MS = 10_000;
/** taskkill's exit status when no process has that PID. */
const TASKKILL_NOT_FOUND = 128;

function systemTool(...parts: string[]): string {
  return path.win32.join(process.env.SystemRoot || 'C:\\Windows', 'System32', ...parts);
}
const taskkillArgs = (pid: number) => ['/T', '/F', '/PID', String(pid)];
const WMIC_ARGS = ['process', 'get', 'ParentProcessId,ProcessId'];

async function endTreeWindows(pid: number): Promise<void> {
  const taskkill = await execa(systemTool('taskkill.exe'), taskkillArgs(pid), { reject: false, stdin: 'ignore', windowsHide: true, timeout: WINDOWS_TOOL_TIMEOUT_MS });
  if (taskkill.exitCode === 0 || taskkill.exitCode === TASKKILL_NOT_FOUND) return;
  const ended = terminateAll(processTree(new Set([pid]), await processTable()));
  // Once more for a process started while the first list was read (only the new ones: a PID
  // already ended may be another process's by now).
  const later = processTree(ended, await processTable());
  terminateAll(new Set([...later].filter((p) => !ended.has(p))));
}

async function processTable(): Promise<Map<number, number>> {
  const wmic = await execa(systemTool('wbem', 'WMIC.exe'), WMIC_ARGS, { reject: false, stdin: 'ignore', windowsHide: true, timeout: WINDOWS_TOOL_TIMEOUT_MS, encoding: 'buffer' });
  return parseProcessTable(Buffer.from(wmic.stdout ?? new Uint8Array()));
}

function endTreeWindowsSync(pid: number): void {
  const options = { stdio: 'ignore', windowsHide: true, timeout: WINDOWS_TOOL_TIMEOUT_MS } as const;
  const taskkill = spawnSync(systemTool('taskkill.exe'), taskkillArgs(pid), options);
  if (taskkill.status === 0 || taskkill.status === TASKKILL_NOT_FOUND) return;
  const wmic = spawnSync(systemTool('wbem', 'WMIC.exe'), WMIC_ARGS, { ...options, stdio: ['ignore', 'pipe', 'ignore'] });
  terminateAll(processTree(new Set([pid]), parseProcessTable(wmic.stdout ?? Buffer.alloc(0))));
}

/** Terminates each process (the roots first); returns them all. */
function terminateAll(pids: Set<number>): Set<number> {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  return pids;
}

/**
 * The process table wmic prints for `process get ParentProcessId,ProcessId`: PID -> parent PID.
 * Windows' wmic writes the ANSI code page to a pipe (lines end in CR CR LF), Wine's UTF-16LE with
 * a byte order mark; the columns are found by their names in the header, in any order.
 */
export function parseProcessTable(output: Buffer): Map<number, number> {
  const utf16 = (output[0] === 0xff && output[1] === 0xfe) || (output.length > 1 && output[1] === 0);
  const text = (utf16 ? output.toString('utf16le') : output.toString('latin1')).replace(/^\uFEFF/, '');
  const [header, ...rows] = text.split(/\r*\n/).map((line) => line.trim()).filter(Boolean);
  const columns = (header ?? '').toLowerCase().split(/\s+/);
  const pidAt = columns.indexOf('processid');
  const parentAt = columns.indexOf('parentprocessid');
  const table = new Map<number, number>();
  if (pidAt < 0 || parentAt < 0) return table;
  for (const row of rows) {
    const cells = row.split(/\s+/);
    const pid = Number(cells[pidAt]);
    const parent = Number(cells[parentAt]);
    if (Number.isInteger(pid) && Number.isInteger(parent) && cells.length === columns.length) table.set(pid, parent);
  }
  return table;
}

/**
 * The roots and every process descended from them in a process table, roots first. A PID whose
 * parent PID is its own (Windows' System Idle Process, 0) is not followed.
 */
export function processTree(roots: Set<number>, table: Map<number, number>): Set<number> {
  const tree = new Set(roots);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, parent] of table) {
      if (pid !== parent && tree.has(parent) && !tree.has(pid)) {
        tree.add(pid);
        grew = true;
      }
    }
  }
  return tree;
}
