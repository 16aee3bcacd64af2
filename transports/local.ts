/**
 * The local transport: probes run as child processes of cudamatrix on this machine, Linux or
 * Windows (cudamatrix itself running as a Windows process: a self-hosted runner, a workstation).
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import { chmod, copyFile, mkdtemp, rm } from 'node:fs/promises';
import { arch as osArch, tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import type { Duplex, Writable } from 'node:stream';
import { normaliseArch } from '../core/arch.ts';
import { streamProcess } from './stream.ts';
import { DEFAULT_MAX_OUTPUT, supervise, type ExecIo } from './supervise.ts';
import type { ConnectContext, ExecOptions, ExecResult, Platform, Session, StreamOptions } from './transport.ts';

/**
 * After SIGTERM, how long a process tree gets before SIGKILL. On Windows, where a tree is ended
 * at once (no signals there), how long before a tree that is still running is ended once more.
 */
const KILL_GRACE_MS = 2000;

const isWindows = process.platform === 'win32';

/** Opens a session on this machine (the `local` transport; its kind is in ./local-kind.ts). */
export async function connectLocal(_options: object, context: ConnectContext): Promise<Session> {
  const workDir = await mkdtemp(path.join(tmpdir(), `cudamatrix-${context.runId}-`));
  liveWorkDirs.add(workDir);
  tellGuardian(`d${workDir}`);
  return new LocalSession(workDir);
}

export function nodeArch(): string {
  return normaliseArch(osArch());
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

  openStream(argv: string[], options?: StreamOptions): Promise<Duplex> {
    return streamProcess(argv, options);
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
    const decoded = options.decode ? keepBytes(options.decode, options.maxOutput ?? DEFAULT_MAX_OUTPUT, io) : undefined;
    if (decoded) {
      child.stdout?.on('data', decoded.stdout);
      child.stderr?.on('data', decoded.stderr);
    } else {
      child.stdout?.setEncoding('utf8').on('data', io.stdout);
      child.stderr?.setEncoding('utf8').on('data', io.stderr);
    }
    const done = child.then((result) => {
      decoded?.flush();
      // Not started at all (no such file, not executable): say why where its errors would go.
      if (result.failed && result.exitCode === undefined && result.signal === undefined)
        io.stderr(result.shortMessage ?? result.message ?? '');
      return { exitCode: result.exitCode ?? null, signal: result.signal ?? null };
    });
    const stop = (): void => {
      const pid = child.pid;
      if (pid === undefined) return;
      if (isWindows) {
        // Only while it runs: Node holds its handle until it has exited, so until then the PID
        // cannot be another process's. Once more after the grace if it still runs.
        if (running()) void endTreeWindows(pid, io.stderr);
        setTimeout(() => {
          if (running()) void endTreeWindows(pid);
        }, KILL_GRACE_MS).unref();
        return;
      }
      signalTree(pid, 'SIGTERM');
      setTimeout(() => signalTree(pid, 'SIGKILL'), KILL_GRACE_MS).unref();
    };
    const running = () => child.exitCode === null && child.signalCode === null;
    if (child.pid !== undefined) {
      const pid = child.pid;
      liveGroups.set(pid, running);
      tellGuardian(`+${pid}`);
      void done.finally(() => {
        liveGroups.delete(pid);
        tellGuardian(`-${pid}`);
      });
    }
    return { done, stop };
  });
}

/**
 * The output kept as bytes, decoded whole at the end (ExecOptions.decode): the decoder tells the
 * encoding from all of it, and a chunk may end inside a character. At most 4 bytes a character
 * of the cap are kept (UTF-8's longest); past that the command is stopped as a flood.
 */
function keepBytes(decode: (bytes: Buffer) => string, maxChars: number, io: ExecIo) {
  const maxBytes = 4 * maxChars;
  const keeper = (push: (text: string) => void) => {
    const chunks: Buffer[] = [];
    let size = 0;
    return {
      take: (chunk: Buffer): void => {
        if (size >= maxBytes) return;
        const kept = chunk.subarray(0, maxBytes - size);
        chunks.push(kept);
        size += kept.length;
        if (size >= maxBytes) io.overflow();
      },
      flush: () => push(decode(Buffer.concat(chunks))),
    };
  };
  const out = keeper(io.stdout);
  const err = keeper(io.stderr);
  return {
    stdout: out.take,
    stderr: err.take,
    flush: () => {
      out.flush();
      err.flush();
    },
  };
}

/**
 * Process groups of commands still running, and work folders of sessions not yet disposed. Each
 * command runs in a group of its own, so a cudamatrix that quits at once (a second Ctrl-C, a
 * crash) would leave them running and their folders behind: both go on the way out,
 * synchronously, since nothing asynchronous runs in an exit handler.
 */
const liveGroups = new Map<number, () => boolean>();
const liveWorkDirs = new Set<string>();
process.on('exit', () => {
  for (const [pid, running] of liveGroups) {
    if (!isWindows) signalTree(pid, 'SIGKILL');
    else if (running()) endTreeWindowsSync(pid);
  }
  for (const dir of liveWorkDirs) rmSync(dir, { recursive: true, force: true, maxRetries: isWindows ? 5 : 0, retryDelay: 100 });
});

/*
 * The exit handler above does not run when cudamatrix is killed (SIGKILL, the OOM killer, a CI
 * runner ending the job): its probes went on measuring on the GPU, in groups of their own, and
 * their folders stayed. So on POSIX a guardian, a shell of its own session, is told each group
 * ("+PGID", "-PGID" when it ends) and work folder ("dPATH"), one a line on its stdin; the end of
 * its stdin, which the kernel closes when cudamatrix dies in any way, makes it SIGKILL the groups
 * still listed and remove the folders. A probe's subjects are in its group. (Windows needs none:
 * the children are in Node's job object, which ends them when cudamatrix dies.)
 */
const GUARDIAN = [
  'trap "" INT HUP TERM',
  'g=" " d=""',
  'while IFS= read -r l; do',
  '  case $l in',
  '    +*) g="$g${l#+} " ;;',
  '    -*) n=" "; for p in $g; do [ "$p" = "${l#-}" ] || n="$n$p "; done; g=$n ;;',
  '    d*) d="$d${l#d}',
  '" ;;',
  '  esac',
  'done',
  'for p in $g; do kill -KILL -"$p" 2>/dev/null; done',
  'printf %s "$d" | while IFS= read -r p; do [ -n "$p" ] && rm -rf -- "$p"; done',
].join('\n');

let guardian: Writable | undefined;

function tellGuardian(line: string): void {
  if (isWindows) return;
  if (!guardian) {
    const child = spawn('/bin/sh', ['-c', GUARDIAN], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    child.on('error', () => undefined);
    child.unref();
    const stdin = child.stdin!;
    // A guardian that is gone (killed by hand) costs the protection, not the run.
    stdin.on('error', () => undefined);
    (stdin as Writable & { unref?: () => void }).unref?.();
    guardian = stdin;
  }
  guardian.write(`${line}\n`);
}

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
 * Windows. Wine's taskkill (8.0, Debian's, where the tests run) has no /T ("Unknown or invalid
 * command line option", exit 1), so whenever taskkill fails, but for "no such process" (128), the
 * tree is walked here from a process table (processTableCommands: PowerShell's
 * Get-CimInstance Win32_Process, then wmic where it is still installed), and each process of it
 * is terminated, the first one first so that it starts no more. The same steps run synchronously
 * on the way out (an exit handler). The walk is only started while the first process runs (its
 * PID is then its own), and it follows a parent PID only to processes listed after the parent:
 * both tables list processes in the order they were created, and a process older than the one
 * whose PID it names as its parent was started by an earlier holder of that PID (Wine reuses PIDs
 * at once: its own services.exe, whose parent has exited, would otherwise be taken for a child of
 * a probe).
 */

/** How long taskkill, or a program that lists the processes, may take. */
const WINDOWS_TOOL_TIMEOUT_MS = 10_000;
/** taskkill's exit status when no process has that PID. */
const TASKKILL_NOT_FOUND = 128;

function systemTool(...parts: string[]): string {
  return path.win32.join(process.env.SystemRoot || 'C:\\Windows', 'System32', ...parts);
}
const taskkillArgs = (pid: number) => ['/T', '/F', '/PID', String(pid)];

/** The process table as wmic's `process get ParentProcessId,ProcessId` prints it, oldest process first. */
const PROCESS_TABLE_SCRIPT =
  "'ParentProcessId ProcessId'; Get-CimInstance Win32_Process | Sort-Object CreationDate | ForEach-Object { '{0} {1}' -f $_.ParentProcessId, $_.ProcessId }";

/**
 * The programs that list the processes, in the order they are tried until one gives a table:
 * PowerShell's CIM (Windows 8 on; Windows 11 24H2 no longer installs wmic by default), then wmic
 * (older Windows, and Wine, whose powershell.exe is a stub that prints nothing). Both print
 * "ParentProcessId ProcessId" rows under that header, oldest process first (parseProcessTable).
 */
export function processTableCommands(): { what: string; file: string; args: string[] }[] {
  return [
    {
      what: 'PowerShell (Get-CimInstance Win32_Process)',
      file: systemTool('WindowsPowerShell', 'v1.0', 'powershell.exe'),
      args: ['-NoProfile', '-NonInteractive', '-Command', PROCESS_TABLE_SCRIPT],
    },
    { what: 'wmic', file: systemTool('wbem', 'WMIC.exe'), args: ['process', 'get', 'ParentProcessId,ProcessId'] },
  ];
}

/** `say`: where a tree that could not be walked is reported (the command's stderr). */
async function endTreeWindows(pid: number, say?: (text: string) => void): Promise<void> {
  const taskkill = await execa(systemTool('taskkill.exe'), taskkillArgs(pid), {
    reject: false,
    stdin: 'ignore',
    windowsHide: true,
    timeout: WINDOWS_TOOL_TIMEOUT_MS,
  });
  if (taskkill.exitCode === 0 || taskkill.exitCode === TASKKILL_NOT_FOUND) return;
  let table: [pid: number, parent: number][] = [];
  for (const command of processTableCommands()) {
    table = parseProcessTable(await readProcessTable(command));
    if (table.length) break;
  }
  if (!table.length) {
    const why = taskkill.exitCode === undefined ? taskkill.shortMessage : `exit status ${taskkill.exitCode}`;
    say?.(
      `\ncudamatrix: taskkill /T /F /PID ${pid} failed (${why}), and neither PowerShell's Get-CimInstance nor wmic gave a process table to walk the tree: only PID ${pid} was ended, its child processes may still run\n`,
    );
  }
  terminateAll(processTree(pid, table));
}

/**
 * What a process-table program prints, once its output ends, a moment after it exits, or at
 * the timeout. Not execa's wait: a process it started may hold its output open (under Wine wmic
 * starts the desktop process, explorer.exe, when there is none), and a wmic that hangs after
 * printing its table (seen under Wine) has still printed it.
 */
function readProcessTable(command: { file: string; args: string[] }): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const finish = (): void => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    };
    const lister = spawn(command.file, command.args, { stdio: ['ignore', 'pipe', 'ignore'], windowsHide: true });
    const timer = setTimeout(() => {
      lister.kill();
      finish();
    }, WINDOWS_TOOL_TIMEOUT_MS);
    lister.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    lister.stdout.on('end', finish);
    lister.on('error', finish);
    lister.on('exit', () => setTimeout(finish, 200).unref());
  });
}

function endTreeWindowsSync(pid: number): void {
  const options = { stdio: 'ignore', windowsHide: true, timeout: WINDOWS_TOOL_TIMEOUT_MS } as const;
  const taskkill = spawnSync(systemTool('taskkill.exe'), taskkillArgs(pid), options);
  if (taskkill.status === 0 || taskkill.status === TASKKILL_NOT_FOUND) return;
  let table: [pid: number, parent: number][] = [];
  for (const command of processTableCommands()) {
    table = parseProcessTable(readProcessTableSync(command, pid));
    if (table.length) break;
  }
  terminateAll(processTree(pid, table));
}

/**
 * readProcessTable on the way out. The output goes to a file: a pipe that a process the program
 * started holds open would keep spawnSync waiting past the timeout.
 */
function readProcessTableSync(command: { file: string; args: string[] }, pid: number): Buffer {
  const file = path.join(tmpdir(), `cudamatrix-processes-${process.pid}-${pid}.txt`);
  try {
    const fd = openSync(file, 'w');
    try {
      spawnSync(command.file, command.args, { stdio: ['ignore', fd, 'ignore'], windowsHide: true, timeout: WINDOWS_TOOL_TIMEOUT_MS });
    } finally {
      closeSync(fd);
    }
    return readFileSync(file);
  } catch {
    return Buffer.alloc(0); // No table: the first process alone is ended.
  } finally {
    rmSync(file, { force: true });
  }
}

function terminateAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/**
 * The process table wmic prints for `process get ParentProcessId,ProcessId` (and PowerShell for
 * PROCESS_TABLE_SCRIPT, in the OEM code page), in its order: [PID, parent PID] rows. Windows' wmic writes the ANSI code page to a pipe (lines end in CR CR
 * LF), Wine's UTF-16LE with a byte order mark. The column order is read from the header, by where
 * each name stands in it (Wine 8 leaves no space after a name wider than its values:
 * "ParentProcessIDProcessID").
 */
export function parseProcessTable(output: Buffer): [pid: number, parent: number][] {
  const utf16 = (output[0] === 0xff && output[1] === 0xfe) || (output.length > 1 && output[1] === 0);
  const text = (utf16 ? output.toString('utf16le') : output.toString('latin1')).replace(/^\uFEFF/, '');
  const [header = '', ...rows] = text
    .split(/\r*\n/)
    .map((line) => line.trim())
    .filter(Boolean);
  const parentAt = header.search(/parentprocessid/i);
  const pidAt = header.search(/(?<!parent)processid/i);
  if (parentAt < 0 || pidAt < 0) return [];
  return rows.flatMap((row) => {
    const cells = row.split(/\s+/);
    if (cells.length !== 2 || !cells.every((cell) => /^\d+$/.test(cell))) return [];
    const [first, second] = cells.map(Number) as [number, number];
    return [parentAt < pidAt ? [second, first] : [first, second]];
  });
}

/**
 * The root and the processes descended from it, root first, from a process table in creation
 * order: a process counts as a child only when it is listed after its parent (see above). Just
 * the root when it is not in the table (the table could not be read).
 */
export function processTree(root: number, table: [pid: number, parent: number][]): number[] {
  const tree = [root];
  const inTree = new Set(tree);
  const from = table.findIndex(([pid]) => pid === root);
  if (from < 0) return tree;
  for (const [pid, parent] of table.slice(from + 1)) {
    if (inTree.has(parent) && !inTree.has(pid)) {
      inTree.add(pid);
      tree.push(pid);
    }
  }
  return tree;
}
