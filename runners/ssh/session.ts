/**
 * A session on a host reached over SSH. Commands are argv arrays quoted for the remote shell
 * (detected: POSIX sh, PowerShell or cmd). On POSIX hosts every command runs in its own process
 * group watched through its stdin: a timeout, a cancellation or a dropped connection closes that
 * stdin and the whole remote tree is killed. The run directory is watched the same way: a
 * guardian removes it when this session ends, however it ends.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import type { Client, ClientChannel, SFTPWrapper } from 'ssh2';
import { CudamatrixError } from '../../core/errors.ts';
import type { ExecOptions, ExecResult, Platform, Session, Shell } from '../transport.ts';
import { quoteArgv, quotePosix, quotePowerShell } from './quote.ts';

const DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024;

/**
 * Runs `"$@"` in a session (and process group) of its own, and kills that group when the
 * channel's stdin
 * closes: at a timeout or cancellation (we close it), or when the connection drops (sshd does).
 * A background job of a non-interactive sh is not a group leader, so setsid needs no fork and
 * the job's pid is its group id. Without setsid (rare), only the command itself is killed.
 */
const POSIX_WRAPPER = [
  'cd "$1" || exit 125',
  'shift',
  // Background jobs get /dev/null as stdin; keep the channel's stdin on fd 3 for the watcher.
  'exec 3<&0',
  'if command -v setsid >/dev/null 2>&1; then setsid "$@" </dev/null 3<&- & else "$@" </dev/null 3<&- & fi',
  'pid=$!',
  // The watcher writes nothing, so the channel closes as soon as the command is gone.
  '( cat <&3 >/dev/null; kill -TERM -"$pid" "$pid"; sleep 2; kill -KILL -"$pid" "$pid" ) >/dev/null 2>&1 &',
  'watch=$!',
  'wait "$pid"',
  'code=$?',
  'kill "$watch" 2>/dev/null',
  'exit "$code"',
].join('\n');

export interface RawResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** Runs a command line on the connection and collects its output (for setup commands). */
export function run(client: Client, command: string, stdin?: string): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    client.exec(command, (err, stream) => {
      if (err) return reject(transportFailed(err));
      let stdout = '';
      let stderr = '';
      stream.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
      stream.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
      stream.on('close', (code: number | null, signal?: string) => resolve({ code: code ?? null, signal: signal ?? null, stdout, stderr }));
      stream.end(stdin);
    });
  });
}

function transportFailed(err: Error): CudamatrixError {
  return new CudamatrixError('TRANSPORT_FAILED', `the SSH connection failed: ${err.message}`, { cause: err });
}

export class SshSession implements Session {
  readonly hostKey: string;
  private guardian?: ClientChannel;
  private sftpChannel?: Promise<SFTPWrapper>;
  private lost?: Error;

  private constructor(
    private readonly client: Client,
    readonly description: string,
    readonly platform: Platform,
    readonly arch: string,
    readonly shell: Shell,
    readonly workDir: string,
    private readonly onDispose: () => Promise<void>,
  ) {
    this.hostKey = description;
    client.on('close', () => (this.lost ??= new Error('the connection closed')));
    client.on('error', (e: Error) => (this.lost ??= e));
  }

  /** Detects the remote shell and platform, and makes the run directory. */
  static async open(client: Client, label: string, runId: string, shellHint: Shell | 'auto', onDispose: () => Promise<void>): Promise<SshSession> {
    const shell = shellHint === 'auto' ? await detectShell(client) : shellHint;
    let platform: Platform;
    let arch: string;
    let workDir: string;
    if (shell === 'posix') {
      // One round trip: the platform, and the run directory.
      const tag = runId.replace(/[^A-Za-z0-9-]/g, '').slice(-12);
      const u = await run(client, `uname -sm && mktemp -d "\${TMPDIR:-/tmp}/cudamatrix-${tag}-XXXXXX"`);
      const [unameLine = '', dirLine = ''] = u.stdout.trim().split('\n');
      const [os, machine] = unameLine.split(/\s+/);
      if (os !== 'Linux') {
        throw new CudamatrixError('TARGET_UNREACHABLE', `${label} runs ${os ?? 'an unknown OS'}; cudaprobe targets Linux and Windows`);
      }
      platform = 'linux';
      arch = machine === 'amd64' ? 'x86_64' : machine === 'arm64' ? 'aarch64' : (machine ?? 'unknown');
      workDir = dirLine.trim();
      if (u.code !== 0 || !workDir.startsWith('/')) throw new CudamatrixError('TRANSPORT_FAILED', `could not make a run directory on ${label}: ${u.stderr.trim()}`);
    } else {
      platform = 'windows';
      const a = await run(client, powershell(shell, '$env:PROCESSOR_ARCHITECTURE'));
      arch = /ARM64/i.test(a.stdout) ? 'aarch64' : 'x86_64';
      const d = await run(client, powershell(shell, `$d = Join-Path $env:TEMP ('cudamatrix-' + [guid]::NewGuid()); New-Item -ItemType Directory -Path $d | Out-Null; $d`));
      workDir = d.stdout.trim();
      if (d.code !== 0 || !/^[A-Za-z]:\\/.test(workDir)) throw new CudamatrixError('TRANSPORT_FAILED', `could not make a run directory on ${label}: ${d.stderr.trim()}`);
    }
    const session = new SshSession(client, `ssh ${label}`, platform, arch, shell, workDir, onDispose);
    await session.startGuardian();
    return session;
  }

  /** A channel that removes the run directory when it closes: at dispose, or when the connection drops. */
  private startGuardian(): Promise<void> {
    const command =
      this.platform === 'linux'
        ? `sh -c ${quotePosix('cat >/dev/null; rm -rf -- "$1"')} cudamatrix-guard ${quotePosix(this.workDir)}`
        : powershell(this.shell, `[Console]::In.ReadToEnd() | Out-Null; Remove-Item -Recurse -Force -LiteralPath ${quotePowerShell(this.workDir)}`);
    return new Promise((resolve, reject) => {
      this.client.exec(command, (err, stream) => {
        if (err) return reject(transportFailed(err));
        this.guardian = stream;
        stream.on('data', () => undefined);
        stream.stderr.on('data', () => undefined);
        resolve();
      });
    });
  }

  exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    if (this.lost) return Promise.reject(transportFailed(this.lost));
    const command = this.commandLine(argv, options);
    const started = performance.now();
    const max = options.maxOutput ?? DEFAULT_MAX_OUTPUT;
    return new Promise((resolve, reject) => {
      this.client.exec(command, (err, stream) => {
        if (err) return reject(transportFailed(err));
        const out = new StringDecoder('utf8');
        const errDec = new StringDecoder('utf8');
        let stdout = '';
        let stderr = '';
        let timedOut = false;
        let cancelled = false;
        let truncated = false;
        // Closing the command's stdin is how a remote tree is stopped (see POSIX_WRAPPER).
        const stop = () => stream.end();
        const timer = options.timeoutMs ? setTimeout(() => ((timedOut = true), stop()), options.timeoutMs) : undefined;
        const onAbort = () => ((cancelled = true), stop());
        if (options.signal?.aborted) onAbort();
        options.signal?.addEventListener('abort', onAbort, { once: true });
        const take = (chunk: string, which: 'out' | 'err') => {
          if (which === 'out') stdout += chunk;
          else stderr += chunk;
          if (!truncated && (stdout.length > max || stderr.length > max)) {
            truncated = true;
            stdout = stdout.slice(0, max);
            stderr = stderr.slice(0, max);
            stop();
          }
        };
        stream.on('data', (d: Buffer) => !truncated && take(out.write(d), 'out'));
        stream.stderr.on('data', (d: Buffer) => !truncated && take(errDec.write(d), 'err'));
        stream.on('close', (code: number | null | undefined, signal?: string) => {
          if (timer) clearTimeout(timer);
          options.signal?.removeEventListener('abort', onAbort);
          if (code === undefined && this.lost) return reject(transportFailed(this.lost));
          if (code === null || code === undefined) {
            // No exit status: the channel was closed under the command (the connection went).
            if (!timedOut && !cancelled && !truncated) return reject(transportFailed(this.lost ?? new Error('the command ended without an exit status')));
          }
          // The wrapper reports a killed command as 128 + signal.
          const killed = typeof code === 'number' && code > 128 && code < 160 && (timedOut || cancelled || truncated);
          resolve({
            command: argv,
            exitCode: killed ? null : (code ?? null),
            signal: signal ?? (killed ? signalName(code! - 128) : null),
            timedOut,
            cancelled,
            truncated,
            durationMs: performance.now() - started,
            stdout: truncated ? stdout : stdout + out.end(),
            stderr: truncated ? stderr : stderr + errDec.end(),
          });
        });
        if (options.stdin !== undefined && this.platform !== 'linux') stream.end(options.stdin);
        else if (options.stdin !== undefined) stream.write(options.stdin);
      });
    });
  }

  private commandLine(argv: string[], options: ExecOptions): string {
    const env = Object.entries(options.env ?? {});
    if (this.platform === 'linux') {
      if (options.stdin !== undefined) {
        // With stdin for the command itself there is no watcher: run it plainly.
        const prefix = env.length ? ['env', ...env.map(([k, v]) => `${k}=${v}`)] : [];
        return `cd ${quotePosix(options.cwd ?? this.workDir)} && exec ${quoteArgv([...prefix, ...argv], 'posix')}`;
      }
      const withEnv = env.length ? ['env', ...env.map(([k, v]) => `${k}=${v}`), ...argv] : argv;
      return `sh -c ${quotePosix(POSIX_WRAPPER)} cudamatrix ${quoteArgv([options.cwd ?? this.workDir, ...withEnv], 'posix')}`;
    }
    const script = [
      `Set-Location -LiteralPath ${quotePowerShell(options.cwd ?? this.workDir)}`,
      ...env.map(([k, v]) => `$env:${k} = ${quotePowerShell(v)}`),
      quoteArgv(argv, 'powershell'),
      'exit $LASTEXITCODE',
    ].join('; ');
    return powershell(this.shell, script);
  }

  private sftp(): Promise<SFTPWrapper> {
    this.sftpChannel ??= new Promise((resolve, reject) => this.client.sftp((err, s) => (err ? reject(transportFailed(err)) : resolve(s))));
    return this.sftpChannel;
  }

  private sftpPath(p: string): string {
    return this.platform === 'windows' ? `/${p.replace(/\\/g, '/')}` : p;
  }

  async put(localPath: string, remotePath: string, options: { executable?: boolean } = {}): Promise<void> {
    const sftp = await this.sftp();
    await new Promise<void>((resolve, reject) =>
      sftp.fastPut(localPath, this.sftpPath(remotePath), { mode: options.executable ? 0o755 : 0o644 }, (err) => (err ? reject(transportFailed(err)) : resolve())),
    );
  }

  async get(remotePath: string, localPath: string): Promise<void> {
    const sftp = await this.sftp();
    await new Promise<void>((resolve, reject) => sftp.fastGet(this.sftpPath(remotePath), localPath, (err) => (err ? reject(transportFailed(err)) : resolve())));
  }

  joinPath(...parts: string[]): string {
    return this.platform === 'windows' ? parts.join('\\').replace(/\\+/g, '\\') : parts.join('/').replace(/\/+/g, '/');
  }

  /**
   * Puts a file in the host's per-hash cache (~/.cache/cudamatrix/deployed/<key>/), checked by
   * its SHA-256 before use; uploads only when it is missing or different.
   */
  async installCached(localPath: string, key: string, name: string): Promise<{ path: string; uploaded: boolean }> {
    const sha = createHash('sha256').update(await readFile(localPath)).digest('hex');
    const dirScript =
      this.platform === 'linux'
        ? `d="\${XDG_CACHE_HOME:-$HOME/.cache}/cudamatrix/deployed/${key}"; mkdir -p "$d" && cd "$d" && pwd && { [ -f ${quotePosix(name)} ] && sha256sum ${quotePosix(name)} || true; }`
        : powershell(this.shell, `$d = Join-Path $env:LOCALAPPDATA 'cudamatrix\\deployed\\${key}'; New-Item -ItemType Directory -Force -Path $d | Out-Null; $d; $f = Join-Path $d ${quotePowerShell(name)}; if (Test-Path $f) { (Get-FileHash -Algorithm SHA256 -LiteralPath $f).Hash }`);
    const r = await run(this.client, dirScript);
    const [dir, hashLine] = r.stdout.trim().split(/\r?\n/);
    if (r.code !== 0 || !dir) throw new CudamatrixError('TRANSPORT_FAILED', `could not prepare the probe cache on ${this.description}: ${r.stderr.trim()}`);
    const target = this.joinPath(dir, name);
    if (hashLine && hashLine.trim().split(/\s+/)[0]!.toLowerCase() === sha) return { path: target, uploaded: false };
    // Upload beside it and rename, so that a reader never runs half a binary.
    const partial = `${target}.upload-${randomBytes(4).toString('hex')}`;
    await this.put(localPath, partial, { executable: true });
    const mv =
      this.platform === 'linux'
        ? `mv -f ${quotePosix(partial)} ${quotePosix(target)} && sha256sum ${quotePosix(target)}`
        : powershell(this.shell, `Move-Item -Force -LiteralPath ${quotePowerShell(partial)} -Destination ${quotePowerShell(target)}; (Get-FileHash -Algorithm SHA256 -LiteralPath ${quotePowerShell(target)}).Hash`);
    const m = await run(this.client, mv);
    if (m.code !== 0 || m.stdout.trim().split(/\s+/)[0]!.toLowerCase() !== sha) {
      throw new CudamatrixError('TRANSPORT_FAILED', `the probe uploaded to ${this.description}:${target} does not verify (${m.stderr.trim() || 'hash differs'})`);
    }
    return { path: target, uploaded: true };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    try {
      if (!this.lost) {
        await run(this.client, this.platform === 'linux' ? `rm -rf -- ${quotePosix(this.workDir)}` : powershell(this.shell, `Remove-Item -Recurse -Force -LiteralPath ${quotePowerShell(this.workDir)}`)).catch(() => undefined);
      }
      this.guardian?.end();
      if (this.sftpChannel) (await this.sftpChannel.catch(() => undefined))?.end();
    } finally {
      await this.onDispose();
    }
  }
}

/** A PowerShell script as a command line for the remote shell (PowerShell itself, or cmd). */
function powershell(shell: Shell, script: string): string {
  if (shell === 'powershell') return script;
  // From cmd, start PowerShell with the script as one -Command argument.
  return quoteArgv(['powershell', '-NoProfile', '-NonInteractive', '-Command', script], 'cmd');
}

/**
 * Which shell runs our commands, in one round trip: sh expands $0 and leaves %OS% alone; cmd
 * expands %OS% only; PowerShell expands neither but knows $PSVersionTable.
 */
async function detectShell(client: Client): Promise<Shell> {
  const r = await run(client, 'echo cm-shell %OS% $PSVersionTable');
  const out = r.stdout.trim();
  if (out.includes('Windows_NT')) return 'cmd';
  if (/System\.Management\.Automation|PSVersion/.test(out)) return 'powershell';
  return 'posix';
}

function signalName(n: number): string {
  return ({ 1: 'SIGHUP', 2: 'SIGINT', 9: 'SIGKILL', 15: 'SIGTERM' } as Record<number, string>)[n] ?? `SIG${n}`;
}
