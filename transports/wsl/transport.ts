/**
 * The `wsl` transport: a WSL distribution of a Windows host, reached through wsl.exe. First in a
 * chain, wsl.exe runs here as a child process (cudamatrix on the Windows machine, or inside WSL
 * with Windows interop); after another hop ([ssh, wsl]), it runs through that hop's session,
 * which quotes it for its own shell. Every command is an argv:
 *
 *   wsl.exe --distribution NAME [--user U] --cd DIR --exec sh -c BOOT SCRIPT ARGS...
 *
 * never a shell command line for wsl.exe's default shell (./scripts.ts says what BOOT is).
 *
 * A session is one long-lived wsl.exe running the agent (scripts.ts AGENT, ../agent/): it
 * looks around (architecture, /dev/dxg, /usr/lib/wsl/lib/libcuda.so.1, TMPDIR, the cache
 * folder; running any command starts a stopped distribution), makes the session's work
 * directory, and runs the session's commands one at a time, each in a process group of its own,
 * for the cost of a fork instead of a wsl.exe start. A command with stdin (copying a file in),
 * one asked for while the agent is busy, and every command where the hop before cannot carry a
 * byte stream (an SSH hop to a Windows host, whose shell is not known to pass bytes unchanged)
 * runs through a wsl.exe of its own under a guard (scripts.ts GUARD); without an agent, a
 * guardian (scripts.ts GUARDIAN) owns the work directory instead.
 *
 * Killing wsl.exe does not end the Linux processes it started (they are reparented to init:
 * microsoft/WSL#2496), so each Linux side watches its own parent, the relay of its wsl.exe, which
 * ends with it (what #2496 shows; not checked on Windows here: none is reachable, and the tests
 * run against a stand-in wsl.exe that behaves so): when cudamatrix is killed or the hop before
 * drops, the running command's process group is killed and the work directory removed.
 *
 * Files go through a command's stdin and stdout as base64 text; the Linux cudaprobe runs in the
 * distribution from a per-hash cache in its home.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { normaliseArch } from '../../core/arch.ts';
import { CudamatrixError, type ErrorCode } from '../../core/errors.ts';
import { oneLine } from '../../core/text.ts';
import { DEADLINE, withDeadline, withTimeout } from '../../core/timeout.ts';
import type { Duplex } from 'node:stream';
import { findOnPath, hopLauncher, localLauncher, type Launcher } from '../launcher.ts';
import { installCached } from '../remote-cache.ts';
import { connectLocal } from '../local.ts';
import type { Connect, ConnectContext, ExecOptions, ExecResult, Session, VmHost } from '../transport.ts';
import { ShellAgent } from '../agent/controller.ts';
import { runOnAgent, withEnv } from '../agent/run.ts';
import { decodeWslOutput, parseWslList, WslToken, type WslDistro } from './list.ts';
import { DEFAULT_CONNECT_TIMEOUT_S, type WslOptions } from './options.ts';
import {
  AGENT,
  GUARD,
  GUARDIAN,
  INFO,
  INFO_LINES,
  MAKE_DIRS,
  MOVE_AND_HASH,
  READ_FILE,
  RM_DIR,
  SHA_OF,
  shArgv,
  WAIT_DIR,
  WRITE_FILE,
} from './scripts.ts';

/** Copying a file through a command: bounded, so that a frozen distribution does not hold the run. */
const COPY_TIMEOUT_MS = 5 * 60_000;
/** Removing the work directory at dispose, then the guardian's or the agent's end; stopping a command's group. */
const DISPOSE_TIMEOUT_MS = 10_000;

function localWsl(target: string): Launcher {
  const wsl = findOnPath('wsl.exe');
  if (!wsl) {
    throw new CudamatrixError(
      'WSL_NOT_FOUND',
      `target "${target}": wsl.exe is not on PATH of this machine. WSL targets run their commands through wsl.exe, which Windows 10 (2004 or later) and Windows 11 have in C:\\Windows\\System32: run cudamatrix on the Windows machine whose distribution you measure, or reach that machine first with a chain, e.g. transport: [{kind: ssh, host: my-workstation}, {kind: wsl, distribution: Ubuntu-24.04}]`,
    );
  }
  // Its bytes go to decodeWslOutput whole: wsl.exe's own messages are UTF-16LE.
  return localLauncher(wsl, { decode: decodeWslOutput });
}

/** `wsl.exe --list --verbose`, decoded (from its bytes, where they are at hand). */
async function wslList(
  launcher: Launcher,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<{ exitCode: number | null; timedOut: boolean; stdout: string; stderr: string }> {
  const result = await launcher.run(['--list', '--verbose'], { timeoutMs, signal, maxOutput: 4 * 1024 * 1024 });
  return {
    exitCode: result.exitCode,
    timedOut: result.timedOut,
    stdout: decodeWslOutput(result.stdout),
    stderr: decodeWslOutput(result.stderr),
  };
}

/** Whether the hop's shell could not find wsl.exe: sh (127), cmd (9009), PowerShell (CommandNotFoundException). */
function notFoundOnHop(outcome: { exitCode: number | null; stderr: string }): boolean {
  return outcome.exitCode === 127 || outcome.exitCode === 9009 || /CommandNotFoundException/.test(outcome.stderr);
}

/** Opens a session in a WSL distribution: this machine's, or through the previous hop. */
export const connectWsl: Connect<WslOptions> = async (options, context) => {
  const timeoutMs = (options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_S) * 1000;
  const runner = context.via ? hopLauncher(context.via, 'wsl.exe') : localWsl(context.target);
  const distros = await listDistros(runner, timeoutMs, context.signal);
  const distro = pickDistro(distros, options.distribution, runner.where);
  if (distro.version === 1) {
    throw new CudamatrixError(
      'WSL_VERSION_1',
      `WSL distribution "${distro.name}" on ${runner.where} runs under WSL 1, which has no GPU: CUDA in WSL needs WSL 2 (/dev/dxg), so its probes cannot run there and nothing was run in it. Convert it with "wsl.exe --set-version ${distro.name} 2", or name a WSL 2 distribution (there: ${describeDistros(distros)})`,
    );
  }
  const vmHost = await windowsHostOf(context);
  try {
    return await WslSession.open(runner, distro, options, context.runId, timeoutMs, vmHost, !context.via, context.signal);
  } catch (error) {
    if (!context.via && 'session' in vmHost) await Promise.resolve(vmHost.session[Symbol.asyncDispose]()).catch(() => undefined);
    throw error;
  }
};

/**
 * The Windows machine the distribution runs on, as a session: the hop before where it is a
 * Windows host ([ssh, wsl]), or this machine where cudamatrix runs on Windows (a local session
 * of its own, disposed with this one).
 */
async function windowsHostOf(context: ConnectContext): Promise<VmHost> {
  if (context.via) {
    return context.via.platform === 'windows'
      ? { session: context.via }
      : {
          unreachable: `the hop before the distribution (${context.via.description}) is a ${context.via.platform} shell, not its Windows host: the VM's GPU counters are read on Windows`,
        };
  }
  if (process.platform !== 'win32')
    return {
      unreachable:
        "cudamatrix runs on Linux here (inside WSL, through wsl.exe and interop): the VM's GPU counters are read by a Windows process on the host, which it does not start",
    };
  return { session: await connectLocal({}, context) };
}

async function listDistros(runner: Launcher, timeoutMs: number, signal?: AbortSignal): Promise<WslDistro[]> {
  const result = await wslList(runner, timeoutMs, signal);
  const said = oneLine(`${result.stdout}\n${result.stderr}`);
  if (result.timedOut) {
    throw new CudamatrixError(
      'TARGET_UNREACHABLE',
      `"wsl.exe --list --verbose" on ${runner.where} did not answer within ${timeoutMs / 1000} s (connectTimeout); it printed: ${said || 'nothing'}`,
    );
  }
  if (notFoundOnHop(result)) {
    throw new CudamatrixError(
      'WSL_NOT_FOUND',
      `wsl.exe is not on PATH on ${runner.where}: WSL runs only on Windows (10 2004 or later, 11), where wsl.exe is in C:\\Windows\\System32. Is that host the Windows machine whose distribution you measure? (${said || 'no output'})`,
    );
  }
  const distros = parseWslList(result.stdout);
  if (result.exitCode === 0 && distros.length > 0) return distros;
  if (WslToken.notInstalled.test(said)) {
    throw new CudamatrixError(
      'WSL_NOT_INSTALLED',
      `WSL is not installed on ${runner.where}; wsl.exe said: ${said}. Install it there from an administrator prompt with "wsl.exe --install", restart Windows, then install a distribution ("wsl.exe --install Ubuntu-24.04")`,
    );
  }
  const otherError = WslToken.anyError.test(said) && !WslToken.noDistros.test(said);
  if (distros.length === 0 && /--exec\b/.test(said) && !otherError) {
    throw new CudamatrixError(
      'WSL_NOT_INSTALLED',
      `the wsl.exe on ${runner.where} does not know "--list --verbose" (it printed its usage): it predates WSL 2, which CUDA needs. Update Windows (Windows 10 2004 or later; GPU support needs Windows 11 or Windows 10 21H2) and WSL ("wsl.exe --update")`,
    );
  }
  if (distros.length === 0 && (WslToken.noDistros.test(said) || ((result.exitCode === 0 || wslFailed(result.exitCode)) && !otherError))) {
    throw new CudamatrixError(
      'WSL_DISTRO_NOT_FOUND',
      `WSL on ${runner.where} lists no distribution ("wsl.exe --list --verbose" exited ${result.exitCode}${said ? `: ${said}` : ''}). Install one there ("wsl.exe --install Ubuntu-24.04") and name it as distribution:`,
    );
  }
  throw new CudamatrixError(
    'TRANSPORT_FAILED',
    `"wsl.exe --list --verbose" failed on ${runner.where} (exit status ${result.exitCode}): ${said || 'no output'}`,
  );
}

/** wsl.exe's own failures exit with -1: 255 from a POSIX view, 4294967295 as a Windows DWORD. */
function wslFailed(code: number | null): boolean {
  return code === 255 || code === -1 || code === 4294967295;
}

function describeDistros(distros: WslDistro[]): string {
  return (
    distros
      .map(
        (distro) =>
          `${distro.name} (WSL ${distro.version}${distro.isDefault ? ', default' : ''}${distro.state ? `, ${distro.state}` : ''})`,
      )
      .join(', ') || 'none'
  );
}

/** The distribution the options name (its name as wsl.exe spells it), or the default one. */
function pickDistro(distros: WslDistro[], name: string | undefined, where: string): WslDistro {
  if (name === undefined) {
    const distro = distros.find((candidate) => candidate.isDefault);
    if (distro) return distro;
    throw new CudamatrixError(
      'WSL_DISTRO_NOT_FOUND',
      `WSL on ${where} has no default distribution (none is marked * by "wsl.exe --list --verbose"); name one as distribution: (there: ${describeDistros(distros)}), or set one with "wsl.exe --set-default NAME"`,
    );
  }
  const found =
    distros.find((candidate) => candidate.name === name) ??
    distros.find((candidate) => candidate.name.toLowerCase() === name.toLowerCase());
  if (found) return found;
  throw new CudamatrixError(
    'WSL_DISTRO_NOT_FOUND',
    `there is no WSL distribution "${name}" on ${where}; there are: ${describeDistros(distros)}. Write one of those as distribution:, or install it there ("wsl.exe --install ${name}", or "wsl.exe --list --online" for the names)`,
  );
}

/** What the look around says (scripts.ts INFO_LINES), checked: the architecture, TMPDIR and the cache folder. */
function readLookAround(lines: string[], where: string, answer: string): { arch: string; tmp: string; cacheBase: string } {
  const [machine, dxg, libcuda, tmp, cacheBase] = lines;
  if (dxg !== '1') {
    throw new CudamatrixError(
      'WSL_NO_GPU',
      `there is no /dev/dxg in ${where}: GPU paravirtualisation is off there, so CUDA cannot reach the GPU. It needs WSL 2 on Windows 11 or Windows 10 21H2 or later, an up-to-date WSL ("wsl.exe --update") and the NVIDIA driver for Windows on the host; then "wsl.exe --shutdown" and try again`,
    );
  }
  if (libcuda !== '1') {
    throw new CudamatrixError(
      'WSL_NO_LIBCUDA',
      `there is no libcuda.so.1 under /usr/lib/wsl/lib in ${where}: the NVIDIA driver for Windows provides it to every WSL 2 distribution. Install (or update) the NVIDIA driver on the Windows host, not a Linux driver inside the distribution; then "wsl.exe --shutdown" and try again`,
    );
  }
  if (!machine || !tmp?.startsWith('/') || !cacheBase?.startsWith('/')) {
    throw new CudamatrixError(
      'TRANSPORT_FAILED',
      `setting up a session in ${where} gave an answer cudamatrix cannot read: ${oneLine(answer)}`,
    );
  }
  const arch = normaliseArch(machine);
  return { arch, tmp, cacheBase };
}

class WslSession implements Session {
  readonly platform = 'linux' as const;
  readonly shell = 'posix' as const;
  readonly description: string;
  readonly hostKey: string;
  /** The agent that runs this session's commands; undefined where the hop cannot carry its stream. */
  private agent: ShellAgent | undefined;
  /** Why the agent ended, once asked (whyAgentEnded). */
  private agentEnd: Promise<Error> | undefined;
  private readonly guardianStop = new AbortController();
  private guardianDone: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly runner: Launcher,
    private readonly distro: WslDistro,
    private readonly user: string | undefined,
    readonly arch: string,
    readonly workDir: string,
    private readonly cacheBase: string,
    readonly vmHost: VmHost,
    /** Whether vmHost's session is this one's own (local), to dispose with it. */
    private readonly ownsHost: boolean,
  ) {
    this.description = runner.where === 'this machine' ? `wsl ${distro.name}` : `${runner.where} → wsl ${distro.name}`;
    this.hostKey = runner.hostKey;
  }

  static async open(
    runner: Launcher,
    distro: WslDistro,
    options: WslOptions,
    runId: string,
    timeoutMs: number,
    vmHost: VmHost,
    owns: boolean,
    signal?: AbortSignal,
  ): Promise<WslSession> {
    const nonce = randomBytes(6).toString('hex');
    const tag = runId.replace(/[^A-Za-z0-9-]/g, '').slice(-12) || 'run';
    const dirName = `cudamatrix-${tag}-${nonce}`;
    const where = `WSL distribution "${distro.name}" on ${runner.where}`;
    const args = wslArgs(distro.name, options.user, '/');
    if (!runner.stream) {
      // Running a command starts the distribution if it is stopped (the first one takes longer).
      const info = await runner.run([...args, '--exec', ...shArgv(INFO, nonce)], { timeoutMs, signal });
      const marker = `cm-wsl-info-${nonce}\n`;
      const at = info.stdout.indexOf(marker);
      if (at < 0 || info.exitCode !== 0)
        throw failure(info, runner, distro, options.user, `setting up a session in ${distro.name}`, timeoutMs);
      const lines = info.stdout
        .slice(at + marker.length)
        .split('\n')
        .map((line) => line.replace(/\r$/, ''));
      const { arch, tmp, cacheBase } = readLookAround(lines, where, info.stdout.slice(at));
      const session = new WslSession(runner, distro, options.user, arch, `${tmp.replace(/\/+$/, '')}/${dirName}`, cacheBase, vmHost, owns);
      await session.startGuardian(timeoutMs, signal);
      return session;
    }

    // The agent: it starts the distribution if it is stopped, looks around and makes the work directory.
    const started = runner.stream([...args, '--exec', ...shArgv(AGENT, nonce, dirName)]);
    const agent = new ShellAgent(
      await started,
      nonce,
      { tag: 'wsl', infoLines: INFO_LINES, trailer: false, name: 'the WSL agent' },
      (cause) =>
        new CudamatrixError(
          'TRANSPORT_FAILED',
          `the wsl.exe that runs the commands of ${where} has ended${cause ? `: ${oneLine(decodeWslOutput(cause.message))}` : ''}`,
          { cause },
        ),
    );
    let hello;
    try {
      hello = await withDeadline(agent.hello, timeoutMs, signal);
    } catch (error) {
      agent.destroy();
      if (error === DEADLINE) {
        throw new CudamatrixError(
          'TARGET_UNREACHABLE',
          `setting up a session in ${distro.name} did not finish within ${timeoutMs / 1000} s (connectTimeout); starting a stopped WSL 2 distribution can take a while, so a larger connectTimeout may help`,
        );
      }
      if (signal?.aborted) throw error;
      // Why it did not start: the same look around through a wsl.exe of its own says it best.
      const info = await runner.run([...args, '--exec', ...shArgv(INFO, nonce)], { timeoutMs, signal });
      if (info.exitCode !== 0 || !info.stdout.includes(`cm-wsl-info-${nonce}\n`))
        throw failure(info, runner, distro, options.user, `setting up a session in ${distro.name}`, timeoutMs);
      throw error;
    }
    try {
      const { arch, cacheBase } = readLookAround(hello.lookAround, where, hello.lookAround.join(' '));
      const session = new WslSession(runner, distro, options.user, arch, hello.workDir, cacheBase, vmHost, owns);
      session.agent = agent;
      return session;
    } catch (error) {
      await agent.close(DISPOSE_TIMEOUT_MS);
      throw error;
    }
  }

  /** Starts the guardian of the work directory (no agent) and waits until it has made it. */
  private async startGuardian(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const guardian = this.runner.run([...this.args('/'), '--exec', ...shArgv(GUARDIAN, this.workDir)], {
      ...this.runner.longLived,
      signal: this.guardianStop.signal,
    });
    this.guardianDone = guardian.catch(() => undefined);
    const ended = guardian.then(
      (result) => result,
      (error: unknown) => error,
    );
    const ready = this.runAlone(shArgv(WAIT_DIR, this.workDir, String(Math.ceil(timeoutMs / 100))), {
      cwd: '/',
      timeoutMs: timeoutMs + 5000,
      signal,
    });
    const first = await Promise.race([ready.then((result) => ({ ready: result })), ended.then((result) => ({ ended: result }))]);
    if ('ready' in first && first.ready.exitCode === 0) return;
    this.guardianStop.abort();
    await withTimeout(this.guardianDone, 5000);
    if ('ended' in first) {
      const outcome = first.ended;
      if (outcome instanceof Error) throw outcome;
      throw failure(
        outcome as ExecResult,
        this.runner,
        this.distro,
        this.user,
        `making the session's work directory ${this.workDir} in ${this.distro.name}`,
        timeoutMs,
      );
    }
    const readyResult = first.ready;
    throw new CudamatrixError(
      'TRANSPORT_FAILED',
      `the session's work directory ${this.workDir} did not appear in WSL distribution "${this.distro.name}" on ${this.runner.where}: ${oneLine(readyResult.stderr) || `exit status ${readyResult.exitCode}`}`,
    );
  }

  private args(cwd: string): string[] {
    return wslArgs(this.distro.name, this.user, cwd);
  }

  /** Through the agent when it is idle and the command needs no stdin; else through a wsl.exe of its own. */
  exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    const agent = this.agent;
    if (agent?.failure) return this.whyAgentEnded(agent.failure).then((error) => Promise.reject(error));
    if (agent && !agent.busy && options.stdin === undefined)
      return runOnAgent(agent, argv, options, options.cwd ?? this.workDir, (error) => this.whyAgentEnded(error));
    return this.runAlone(argv, options);
  }

  /**
   * Why the agent's wsl.exe ended, which ends the session: a wsl.exe of its own says whether the
   * hop before is gone (its error names that hop), the distribution is gone, or WSL broke; when
   * that one runs, the agent's own end is the reason.
   */
  private whyAgentEnded(agentError: Error): Promise<Error> {
    this.agentEnd ??= this.runner.run([...this.args('/'), '--exec', 'true'], { timeoutMs: DISPOSE_TIMEOUT_MS }).then(
      (result) =>
        result.exitCode === 0
          ? agentError
          : failure(result, this.runner, this.distro, this.user, `running a command in ${this.distro.name}`, DISPOSE_TIMEOUT_MS),
      (error: unknown) => (error instanceof Error ? error : agentError),
    );
    return this.agentEnd;
  }

  /** Runs argv in the distribution through a wsl.exe of its own, under the guard (scripts.ts GUARD). */
  private async runAlone(argv: string[], options: ExecOptions): Promise<ExecResult> {
    const nonce = randomBytes(6).toString('hex');
    const cwd = options.cwd ?? this.workDir;
    const result = await this.runner.run([...this.args(cwd), '--exec', ...shArgv(GUARD, nonce, cwd), ...withEnv(argv, options.env)], {
      stdin: options.stdin,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      maxOutput: options.maxOutput,
    });
    const marker = `cm-wsl-run-${nonce}\n`;
    const at = result.stderr.indexOf(marker);
    if (at >= 0) return { ...result, command: argv, stderr: result.stderr.slice(at + marker.length) };
    // Stopped before the command started: the caller's own outcome (a timeout, a cancellation).
    if (result.timedOut || result.cancelled || result.truncated) return { ...result, command: argv };
    throw failure(result, this.runner, this.distro, this.user, `running ${argv[0] ?? 'a command'} in ${this.distro.name}`);
  }

  async put(localPath: string, remotePath: string, options: { executable?: boolean } = {}): Promise<void> {
    const data = await readFile(localPath);
    const result = await this.exec(shArgv(WRITE_FILE, remotePath, options.executable ? '755' : '644'), {
      cwd: '/',
      stdin: data.toString('base64'),
      timeoutMs: COPY_TIMEOUT_MS,
    });
    if (result.exitCode !== 0)
      throw new CudamatrixError(
        'TRANSPORT_FAILED',
        `could not write ${remotePath} in ${this.description}: ${oneLine(result.stderr) || `exit status ${result.exitCode}`}`,
      );
  }

  async get(remotePath: string, localPath: string): Promise<void> {
    const result = await this.exec(shArgv(READ_FILE, remotePath), { cwd: '/', timeoutMs: COPY_TIMEOUT_MS });
    if (result.exitCode !== 0) {
      await rm(localPath, { force: true });
      throw new CudamatrixError(
        'TRANSPORT_FAILED',
        `could not read ${remotePath} in ${this.description}: ${oneLine(result.stderr) || `exit status ${result.exitCode}`}`,
      );
    }
    await writeFile(localPath, Buffer.from(result.stdout, 'base64'));
  }

  joinPath(...parts: string[]): string {
    return parts.join('/').replace(/\/+/g, '/');
  }

  /** Puts a file in the distribution's per-hash probe cache (remote-cache.ts), under $XDG_CACHE_HOME or ~/.cache. */
  installCached(localPath: string, key: string, name: string): Promise<{ path: string; uploaded: boolean }> {
    const inCache = { cwd: '/', timeoutMs: COPY_TIMEOUT_MS };
    return installCached(
      {
        description: this.description,
        lookUp: async (k, fileName) => {
          const dir = `${this.cacheBase.replace(/\/+$/, '')}/cudamatrix/deployed/${k}`;
          const cached = await this.exec(shArgv(SHA_OF, `${dir}/${fileName}`), inCache);
          return { dir, sha: cached.exitCode === 0 ? cached.stdout.trim().split(/\s+/)[0] : undefined };
        },
        makeDir: async (dir) => {
          const made = await this.exec(shArgv(MAKE_DIRS, dir), inCache);
          if (made.exitCode !== 0)
            throw new CudamatrixError(
              'TRANSPORT_FAILED',
              `could not make the probe cache ${dir} in ${this.description}: ${oneLine(made.stderr)}`,
            );
        },
        put: (from, to, options) => this.put(from, to, options),
        moveAndHash: async (from, to) => {
          const moved = await this.exec(shArgv(MOVE_AND_HASH, from, to), inCache);
          return { sha: moved.exitCode === 0 ? (moved.stdout.trim().split(/\s+/)[0] ?? '') : '', said: oneLine(moved.stderr) };
        },
        joinPath: (...parts) => this.joinPath(...parts),
      },
      localPath,
      key,
      name,
    );
  }

  /**
   * A command's stdin and stdout as one byte stream (a Docker engine in the distribution, through
   * `docker system dial-stdio`), through a wsl.exe of its own under the guard.
   */
  openStream(argv: string[]): Promise<Duplex> {
    if (!this.runner.stream) {
      return Promise.reject(
        new CudamatrixError(
          'MATRIX_INVALID',
          `${this.description}: the hop before cannot carry a byte stream to wsl.exe, so a later hop cannot stream through it`,
        ),
      );
    }
    const nonce = randomBytes(6).toString('hex');
    return this.runner.stream([...this.args(this.workDir), '--exec', ...shArgv(GUARD, nonce, this.workDir), ...argv]);
  }

  /**
   * With the agent: ends its stdin, and it removes the work directory and exits. Without: removes
   * the work directory, then ends the guardian (which would remove it too).
   */
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      await this.disposeDistro();
    } finally {
      if (this.ownsHost && 'session' in this.vmHost) await this.vmHost.session[Symbol.asyncDispose]();
    }
  }

  private async disposeDistro(): Promise<void> {
    if (this.agent && !this.agent.failure) return this.agent.close(DISPOSE_TIMEOUT_MS);
    try {
      await this.runAlone(shArgv(RM_DIR, this.workDir), { cwd: '/', timeoutMs: DISPOSE_TIMEOUT_MS }).catch(() => undefined);
    } finally {
      this.guardianStop.abort();
      await withTimeout(this.guardianDone, 5000);
    }
  }
}

function wslArgs(distribution: string, user: string | undefined, cwd: string): string[] {
  return ['--distribution', distribution, ...(user ? ['--user', user] : []), '--cd', cwd];
}

/**
 * Why wsl.exe did not run a command (its marker never came): the distribution vanished, the user
 * does not exist, WSL broke, the hop could not run wsl.exe, or it ran out of time.
 */
function failure(
  result: ExecResult,
  runner: Launcher,
  distro: WslDistro,
  user: string | undefined,
  what: string,
  timeoutMs?: number,
): CudamatrixError {
  const said = oneLine(`${decodeWslOutput(result.stdout)}\n${decodeWslOutput(result.stderr)}`);
  const where = `WSL distribution "${distro.name}" on ${runner.where}`;
  const error = (code: ErrorCode, message: string) => new CudamatrixError(code, message);
  if (result.timedOut)
    return error(
      'TARGET_UNREACHABLE',
      `${what} did not finish within ${(timeoutMs ?? 0) / 1000} s (connectTimeout): ${said || 'no output'}; starting a stopped WSL 2 distribution can take a while, so a larger connectTimeout may help`,
    );
  if (notFoundOnHop(result))
    return error('WSL_NOT_FOUND', `wsl.exe is not on PATH on ${runner.where}: ${said || `exit status ${result.exitCode}`}`);
  if (WslToken.distroNotFound.test(said))
    return error('WSL_DISTRO_NOT_FOUND', `${where} is gone (it was listed a moment ago): wsl.exe said: ${said}`);
  if (WslToken.userNotFound.test(said))
    return error(
      'TARGET_UNREACHABLE',
      `there is no user "${user ?? '(the default user)'}" in ${where}; wsl.exe said: ${said}. Create the user there, or change user: in the matrix`,
    );
  if (WslToken.notInstalled.test(said))
    return error(
      'WSL_NOT_INSTALLED',
      `WSL on ${runner.where} cannot run ${distro.name}; wsl.exe said: ${said}. Install WSL ("wsl.exe --install" as administrator) and restart Windows`,
    );
  return error(
    'TRANSPORT_FAILED',
    `${what}: wsl.exe did not run it (exit status ${result.exitCode}${result.signal ? `, ${result.signal}` : ''}): ${said || 'no output'}`,
  );
}
