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
import { type ExecEnd, type Launched, supervise } from '../supervise.ts';
import type { ExecOptions, ExecResult, Platform, Session, Shell } from '../transport.ts';
import { quoteArgv, quotePosix, quotePowerShell } from './quote.ts';

/**
 * The POSIX helper: the one long-lived channel of a session; on a busy host every channel costs
 * an sshd fork (measured here: ~110 ms of CPU each), so it does everything a session needs.
 *   - At start it makes the run directory and prints "cm-setup OS ARCH DIR".
 *   - "check KEY NAME": the SHA-256 and directory of a cached file ("cm-cache SHA DIR").
 *   - "run NONCE ARGS...": ARGS is shell-quoted (cwd first, then argv). The command runs in a
 *     session and process group of its own; its stdout and stderr go straight to the channel,
 *     and then the helper marks their ends with "\ncm-exit-NONCE CODE" and "cm-err-end-NONCE".
 *     While it runs, a watcher reads stdin: "stop" (a timeout, a cancellation, an output flood)
 *     kills the group; end of input (the connection dropped) kills it and removes the directory.
 *   - End of input when idle (the session is disposed, or the connection dropped) removes the
 *     run directory.
 */
const POSIX_HELPER = [
  'd="${TMPDIR:-/tmp}/cudamatrix-$1-$$"',
  'mkdir -m 700 "$d" || exit 1',
  'os=unknown; [ -r /proc/sys/kernel/ostype ] && read -r os </proc/sys/kernel/ostype',
  'printf "cm-setup %s %s %s\\n" "$os" "$(uname -m)" "$d"',
  'nl="\n"',
  'exec 3<&0 </dev/null',
  'while IFS= read -r line <&3; do',
  '  case "$line" in',
  '  check\\ *)',
  '    set -- $line',
  '    c="${XDG_CACHE_HOME:-$HOME/.cache}/cudamatrix/deployed/$2"',
  '    h=-; [ -f "$c/$3" ] && h=$(sha256sum "$c/$3") && h=${h%% *}',
  '    printf "cm-cache %s %s\\n" "$h" "$c" ;;',
  '  run\\ *)',
  '    rest=${line#run }; nonce=${rest%% *}; rest=${rest#* }',
  '    eval "set -- $rest"',
  '    ( cd "$1" || exit 125; shift; exec setsid sh -c \'printf "cm-started %s\\n" "$$"; exec "$@"\' cm "$@" ) 3<&- &',
  '    pid=$!',
  '    ( while IFS= read -r l; do [ "$l" = stop ] && { kill -TERM -"$pid" "$pid"; sleep 2; kill -KILL -"$pid" "$pid"; }; done',
  '      kill -TERM -"$pid" "$pid"; rm -rf -- "$d"; sleep 2; kill -KILL -"$pid" "$pid" ) <&3 >/dev/null 2>&1 &',
  '    watch=$!',
  '    wait "$pid"; code=$?',
  '    kill "$watch" 2>/dev/null; wait "$watch" 2>/dev/null',
  '    printf "cm-err-end-%s\\n" "$nonce" >&2',
  '    printf "\\ncm-exit-%s %s\\n" "$nonce" "$code" ;;',
  '  esac',
  'done',
  'rm -rf -- "$d"',
].join('\n');

/** Quotes an argument for the helper's one-line "run" request: a newline becomes "$nl". */
function quoteForLine(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`).replace(/\n/g, `'"$nl"'`)}'`;
}

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
  private guardianClosed?: Promise<void>;
  /** Answers of the POSIX helper, in order, for the requests waiting on them. */
  private readonly helperLines: ((line: string) => void)[] = [];
  /** Text from the helper not yet taken as an answer. */
  private helperText = '';
  /** The command the helper is running, which takes its output until its end markers. */
  private current?: { out(text: string): void; err(text: string): void; lost(error: Error): void };
  /** Commands through the helper run one after another. */
  private queue: Promise<unknown> = Promise.resolve();
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
    if (shell === 'posix') {
      const tag = runId.replace(/[^A-Za-z0-9-]/g, '').slice(-12) || 'run';
      // exec: the login shell that runs our command line need not stay around as well.
      const { channel, first, output } = await startHelper(client, `exec sh -c ${quotePosix(POSIX_HELPER)} cudamatrix-helper ${quotePosix(tag)}`);
      const m = /^cm-setup (\S+) (\S+) (\/.*)$/.exec(first);
      if (!m) {
        channel.end();
        throw new CudamatrixError('TRANSPORT_FAILED', `could not make a run directory on ${label}: ${first || 'no answer'}`);
      }
      const [, os, machine, workDir] = m;
      if (os !== 'Linux') {
        channel.end();
        throw new CudamatrixError('TARGET_UNREACHABLE', `${label} runs ${os}; cudaprobe targets Linux and Windows`);
      }
      const arch = machine === 'amd64' ? 'x86_64' : machine === 'arm64' ? 'aarch64' : machine!;
      const session = new SshSession(client, `ssh ${label}`, 'linux', arch, shell, workDir!, onDispose);
      session.adoptGuardian(channel, output);
      return session;
    }
    const a = await run(client, powershell(shell, '$env:PROCESSOR_ARCHITECTURE'));
    const arch = /ARM64/i.test(a.stdout) ? 'aarch64' : 'x86_64';
    const d = await run(client, powershell(shell, `$d = Join-Path $env:TEMP ('cudamatrix-' + [guid]::NewGuid()); New-Item -ItemType Directory -Path $d | Out-Null; $d`));
    const workDir = d.stdout.trim();
    if (d.code !== 0 || !/^[A-Za-z]:\\/.test(workDir)) throw new CudamatrixError('TRANSPORT_FAILED', `could not make a run directory on ${label}: ${d.stderr.trim()}`);
    const session = new SshSession(client, `ssh ${label}`, 'windows', arch, shell, workDir, onDispose);
    const guardian = await startHelper(
      client,
      powershell(shell, `'cm-ready'; [Console]::In.ReadToEnd() | Out-Null; Remove-Item -Recurse -Force -LiteralPath ${quotePowerShell(workDir)}`),
    );
    session.adoptGuardian(guardian.channel, guardian.output);
    return session;
  }

  /** The channel that removes the run directory when it closes: at dispose, or when the connection drops. */
  private adoptGuardian(channel: ClientChannel, output: HelperOutput): void {
    this.guardian = channel;
    this.guardianClosed = new Promise((resolve) =>
      channel.on('close', () => {
        this.lost ??= new Error('the helper channel closed');
        this.current?.lost(this.lost);
        resolve();
      }),
    );
    output.onStdout((text) => {
      if (this.current) return this.current.out(text);
      this.helperText += text;
      for (let nl = this.helperText.indexOf('\n'); nl >= 0; nl = this.helperText.indexOf('\n')) {
        const line = this.helperText.slice(0, nl).replace(/\r$/, '');
        this.helperText = this.helperText.slice(nl + 1);
        this.helperLines.shift()?.(line);
      }
    });
    output.onStderr((text) => this.current?.err(text));
  }

  /** Asks the POSIX helper one question and waits for its one-line answer. */
  private ask(request: string): Promise<string> {
    return new Promise((resolve, reject) => {
      if (!this.guardian || this.lost) return reject(transportFailed(this.lost ?? new Error('the session is closed')));
      this.helperLines.push(resolve);
      this.guardian.write(`${request}\n`);
    });
  }

  exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    if (this.lost) return Promise.reject(transportFailed(this.lost));
    if (this.platform === 'linux' && options.stdin === undefined) {
      const result = this.queue.then(() => this.execThroughHelper(argv, options));
      this.queue = result.catch(() => undefined);
      return result;
    }
    return this.execOnChannel(argv, options);
  }

  /** Runs a command through the POSIX helper (see POSIX_HELPER): no channel of its own. */
  private execThroughHelper(argv: string[], options: ExecOptions): Promise<ExecResult> {
    if (this.lost || !this.guardian) return Promise.reject(transportFailed(this.lost ?? new Error('the session is closed')));
    const guardian = this.guardian;
    const nonce = randomBytes(6).toString('hex');
    const env = Object.entries(options.env ?? {});
    const withEnv = env.length ? ['env', ...env.map(([k, v]) => `${k}=${v}`), ...argv] : argv;
    const request = `run ${nonce} ${[options.cwd ?? this.workDir, ...withEnv].map(quoteForLine).join(' ')}\n`;
    const exitMark = new RegExp(`\\ncm-exit-${nonce} (\\d+)\\n`);
    const errMark = `cm-err-end-${nonce}\n`;
    return supervise(argv, options, (io) => {
      // The end markers are looked for in what arrived last: only a tail that may hold the start
      // of one is held back here, the rest goes on to supervise(), which keeps it up to the cap,
      // so that a flood costs neither memory nor time.
      const tail = 80;
      let out = '';
      let err = '';
      /** The first line the command prints is the helper's "cm-started PID": not yet taken out. */
      let head = true;
      let code: number | undefined;
      let errDone = false;
      let stopped = false;
      const done = new Promise<ExecEnd>((resolve, reject) => {
        const check = () => {
          if (code === undefined || !errDone) return;
          this.current = undefined;
          const killed = code > 128 && code < 160 && stopped;
          resolve({ exitCode: killed ? null : code, signal: killed ? signalName(code - 128) : null });
        };
        this.current = {
          out: (text) => {
            if (code !== undefined) return;
            out += text;
            const m = exitMark.exec(out);
            if (m) {
              code = Number(m[1]);
              this.helperText = out.slice(m.index + m[0].length);
              out = out.slice(0, m.index);
            }
            if (head && (m || out.includes('\n') || out.length >= tail)) {
              out = out.replace(/^cm-started \d+\n/, '');
              head = false;
            }
            if (!head) {
              const keep = m ? 0 : Math.min(tail, out.length);
              io.stdout(out.slice(0, out.length - keep));
              out = out.slice(out.length - keep);
            }
            check();
          },
          err: (text) => {
            if (errDone) return;
            err += text;
            const at = err.indexOf(errMark);
            if (at >= 0) errDone = true;
            const keep = errDone ? 0 : Math.min(tail, err.length);
            io.stderr(err.slice(0, errDone ? at : err.length - keep));
            err = err.slice(err.length - keep);
            check();
          },
          lost: (error) => {
            this.current = undefined;
            reject(transportFailed(error));
          },
        };
      });
      guardian.write(request);
      return {
        done,
        stop: () => {
          stopped = true;
          guardian.write('stop\n');
        },
      };
    });
  }

  /** Runs a command on a channel of its own (Windows shells, or a command that reads stdin). */
  private execOnChannel(argv: string[], options: ExecOptions): Promise<ExecResult> {
    const command = this.commandLine(argv, options);
    return supervise(
      argv,
      options,
      (io) =>
        new Promise<Launched>((launched, failed) => {
          this.client.exec(command, (err, stream) => {
            if (err) return failed(transportFailed(err));
            const out = new StringDecoder('utf8');
            const errDec = new StringDecoder('utf8');
            let stopped = false;
            stream.on('data', (d: Buffer) => io.stdout(out.write(d)));
            stream.stderr.on('data', (d: Buffer) => io.stderr(errDec.write(d)));
            const done = new Promise<ExecEnd>((resolve, reject) =>
              stream.on('close', (code: number | null | undefined, signal?: string) => {
                io.stdout(out.end());
                io.stderr(errDec.end());
                if (code === undefined && this.lost) return reject(transportFailed(this.lost));
                // No exit status: the channel was closed under the command (the connection went).
                if ((code === null || code === undefined) && !stopped) return reject(transportFailed(this.lost ?? new Error('the command ended without an exit status')));
                // The wrapper reports a killed command as 128 + signal.
                const killed = typeof code === 'number' && code > 128 && code < 160 && stopped;
                resolve({ exitCode: killed ? null : (code ?? null), signal: signal ?? (killed ? signalName(code - 128) : null) });
              }),
            );
            if (options.stdin !== undefined) stream.end(options.stdin);
            // Closing the channel ends the command (Windows OpenSSH ends the process; a POSIX command
            // that reads stdin sees its end). POSIX commands without stdin go through the helper,
            // which kills the whole process group instead.
            launched({
              done,
              stop: () => {
                stopped = true;
                stream.close();
              },
            });
          });
        }),
    );
  }

  private commandLine(argv: string[], options: ExecOptions): string {
    const env = Object.entries(options.env ?? {});
    if (this.platform === 'linux') {
      // A POSIX command that reads stdin: run plainly on its own channel.
      const prefix = env.length ? ['env', ...env.map(([k, v]) => `${k}=${v}`)] : [];
      return `cd ${quotePosix(options.cwd ?? this.workDir)} && exec ${quoteArgv([...prefix, ...argv], 'posix')}`;
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
    if (!/^[A-Za-z0-9._-]+$/.test(key) || !/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`bad cache key ${key}/${name}`);
    const sha = createHash('sha256').update(await readFile(localPath)).digest('hex');
    let dir: string | undefined;
    let cachedSha: string | undefined;
    if (this.platform === 'linux') {
      const m = /^cm-cache (\S+) (\/.*)$/.exec(await this.ask(`check ${key} ${name}`));
      [dir, cachedSha] = [m?.[2], m?.[1]];
    } else {
      const r = await run(
        this.client,
        powershell(this.shell, `$d = Join-Path $env:LOCALAPPDATA 'cudamatrix\\deployed\\${key}'; New-Item -ItemType Directory -Force -Path $d | Out-Null; $d; $f = Join-Path $d ${quotePowerShell(name)}; if (Test-Path $f) { (Get-FileHash -Algorithm SHA256 -LiteralPath $f).Hash }`),
      );
      [dir, cachedSha] = r.stdout.trim().split(/\r?\n/);
    }
    if (!dir) throw new CudamatrixError('TRANSPORT_FAILED', `could not prepare the probe cache on ${this.description}`);
    const target = this.joinPath(dir, name);
    if (cachedSha && cachedSha.trim().toLowerCase() === sha) return { path: target, uploaded: false };
    // Upload beside it and rename, so that a reader never runs half a binary.
    if (this.platform === 'linux') await run(this.client, `mkdir -p ${quotePosix(dir)}`);
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
      if (this.sftpChannel) (await this.sftpChannel.catch(() => undefined))?.end();
      // Closing the helper's stdin makes it remove the run directory; wait until it has.
      this.guardian?.end();
      if (!this.lost) await withTimeout(this.guardianClosed, 10_000);
    } finally {
      await this.onDispose();
    }
  }
}

interface HelperOutput {
  onStdout(handler: (text: string) => void): void;
  onStderr(handler: (text: string) => void): void;
}

/**
 * Starts a long-lived helper channel and waits for its first line; what follows goes to the
 * handlers the caller installs (text that came with the first line is handed over first).
 */
function startHelper(client: Client, command: string): Promise<{ channel: ClientChannel; first: string; output: HelperOutput }> {
  return new Promise((resolve, reject) => {
    client.exec(command, (err, channel) => {
      if (err) return reject(transportFailed(err));
      const out = new StringDecoder('utf8');
      const errs = new StringDecoder('utf8');
      let pending = '';
      let stderr = '';
      let first: string | undefined;
      let onOut: ((text: string) => void) | undefined;
      let onErr: ((text: string) => void) | undefined;
      const output: HelperOutput = {
        onStdout(handler) {
          onOut = handler;
          if (pending) handler(pending);
          pending = '';
        },
        onStderr(handler) {
          onErr = handler;
        },
      };
      channel.stderr.on('data', (d: Buffer) => {
        const text = errs.write(d);
        if (onErr) onErr(text);
        else stderr += text;
      });
      channel.on('data', (d: Buffer) => {
        const text = out.write(d);
        if (onOut) return onOut(text);
        pending += text;
        if (first !== undefined) return;
        const nl = pending.indexOf('\n');
        if (nl < 0) return;
        first = pending.slice(0, nl).replace(/\r$/, '');
        pending = pending.slice(nl + 1);
        resolve({ channel, first, output });
      });
      channel.on('close', () => {
        if (first === undefined) resolve({ channel, first: stderr.trim(), output });
      });
    });
  });
}

/** Waits for `p`, or `ms` at most; the timer does not keep the process alive after. */
async function withTimeout(p: Promise<unknown> | undefined, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
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
