/**
 * A session on a host reached over SSH. Commands are argv arrays quoted for the remote shell
 * (detected: POSIX sh, PowerShell or cmd). On POSIX hosts every command runs in its own process
 * group watched through its stdin: a timeout, a cancellation or a dropped connection closes that
 * stdin and the whole remote tree is killed. The run directory is watched the same way: a
 * guardian removes it when this session ends, however it ends.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { Duplex, PassThrough, type Readable, type Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { Client, ClientChannel, SFTPWrapper } from 'ssh2';
import { normaliseArch } from '../../core/arch.ts';
import { CudamatrixError } from '../../core/errors.ts';
import { oneLine } from '../../core/text.ts';
import { withTimeout } from '../../core/timeout.ts';
import { type ExecEnd, type Launched, supervise } from '../supervise.ts';
import type { ExecOptions, ExecResult, Platform, Session, Shell } from '../transport.ts';
import { shellFile } from '../shell-files.ts';
import { forwardTo, socketLike, streamEnded } from '../stream.ts';
import { quoteArgv, quotePosix, quotePowerShell } from './quote.ts';


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

/**
 * Runs a command line on the connection and collects its output (for setup commands on Windows
 * hosts, and shell detection). Bounded: after `timeoutMs` the channel is closed and it fails.
 */
export function run(client: Client, command: string, options: { stdin?: string; timeoutMs?: number; what?: string } = {}): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    client.exec(command, (err, stream) => {
      if (err) return reject(transportFailed(err));
      let stdout = '';
      let stderr = '';
      const timer =
        options.timeoutMs !== undefined
          ? setTimeout(() => {
              stream.close();
              reject(new CudamatrixError('TRANSPORT_FAILED', `${options.what ?? 'a setup command'} did not finish within ${options.timeoutMs} ms (connectTimeout): ${oneLine(stdout + stderr, LAST_WORDS) || 'no output'}`));
            }, options.timeoutMs)
          : undefined;
      stream.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
      stream.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
      stream.on('close', (code: number | null, signal?: string) => {
        clearTimeout(timer);
        resolve({ code: code ?? null, signal: signal ?? null, stdout, stderr });
      });
      stream.end(options.stdin);
    });
  });
}

/** A fresh nonce for a marker line ("cm-KIND-NONCE"). */
function newNonce(): string {
  return randomBytes(8).toString('hex');
}

/**
 * What a command printed after its marker line: login scripts (~/.bashrc, a PowerShell
 * profile) may print anything before it. Undefined when the marker never came.
 */
export function afterMarker(text: string, marker: string): string | undefined {
  const at = text.indexOf(marker);
  if (at < 0) return undefined;
  return text.slice(at + marker.length).replace(/^\r?\n/, '');
}

/** The end of what a remote command printed, on one line, for an error message. */
const LAST_WORDS = { keep: 'end', max: 300 } as const;

/**
 * Drops what comes before a marker line in a stream of text (a login script's chatter on a
 * command's own channel) and passes the rest on. Holds back at most a marker's length while
 * it looks; keeps at most `keep` characters of the chatter, for messages.
 */
export class MarkerStrip {
  private held = '';
  private state: 'looking' | 'line-end' | 'passing' = 'looking';
  chatter = '';
  /** What followed the marker on its line (a Windows command's shell PID), once the line ended. */
  rest?: string;
  /** Called with `rest` when the marker's line has ended. */
  onLine?: (rest: string) => void;

  constructor(
    private readonly marker: string,
    private readonly keep = 4096,
  ) {}

  /** Whether the marker came. */
  get seen(): boolean {
    return this.state !== 'looking';
  }

  /** The text to pass on ('' while the marker is still awaited). */
  feed(text: string): string {
    if (this.state === 'passing') return text;
    if (this.state === 'looking') {
      this.held += text;
      const at = this.held.indexOf(this.marker);
      if (at < 0) {
        // Everything but a possible start of the marker is chatter.
        const cut = Math.max(0, this.held.length - this.marker.length);
        this.noteChatter(this.held.slice(0, cut));
        this.held = this.held.slice(cut);
        return '';
      }
      this.noteChatter(this.held.slice(0, at));
      text = this.held.slice(at + this.marker.length);
      this.held = '';
      this.state = 'line-end';
    }
    // The rest of the marker's line, up to its end ("\n", or "\r\n" from PowerShell), which may
    // come in later chunks. A marker line is short: past 80 characters the rest is output.
    this.held += text;
    const nl = this.held.indexOf('\n');
    if (nl < 0 && this.held.length <= 80) return '';
    const line = nl < 0 ? '' : this.held.slice(0, nl);
    const out = nl < 0 ? this.held : this.held.slice(nl + 1);
    this.held = '';
    this.state = 'passing';
    this.rest = line.replace(/\r$/, '').trim();
    this.onLine?.(this.rest);
    return out;
  }

  /** At the end of the stream: if the marker never came, what was printed is all there was. */
  end(): string {
    if (this.state === 'line-end') {
      // The stream ended on the marker's line.
      this.rest = this.held.replace(/\r$/, '').trim();
      this.held = '';
      this.state = 'passing';
      this.onLine?.(this.rest);
      return '';
    }
    if (this.seen) return '';
    const rest = this.chatter + this.held;
    this.held = '';
    return rest;
  }

  private noteChatter(text: string): void {
    if (text) this.chatter = (this.chatter + text).slice(-this.keep);
  }
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

  /**
   * Detects the remote shell and platform, and makes the run directory. Login scripts may print
   * anything first (a greeting from ~/.bashrc, on stdout or stderr): every answer is found after
   * a marker line with a nonce. Bounded by `setupTimeoutMs` (connectTimeout): a login script that
   * waits for input does not hold the run.
   */
  static async open(client: Client, label: string, runId: string, shellHint: Shell | 'auto', onDispose: () => Promise<void>, setupTimeoutMs = 15_000): Promise<SshSession> {
    const shell = shellHint === 'auto' ? await detectShell(client, label, setupTimeoutMs) : shellHint;
    if (shell === 'posix') {
      const tag = runId.replace(/[^A-Za-z0-9-]/g, '').slice(-12) || 'run';
      const nonce = newNonce();
      // exec: the login shell that runs our command line need not stay around as well.
      const started = await startHelper(client, `exec sh -c ${quotePosix(shellFile('ssh/agent.sh'))} cudamatrix-helper ${quotePosix(tag)} ${nonce}`, {
        marker: `cm-setup-${nonce}`,
        stderrMarker: `cm-setup-${nonce}`,
        timeoutMs: setupTimeoutMs,
      });
      if (!started.ok) throw new CudamatrixError('TRANSPORT_FAILED', `could not make a run directory on ${label}: ${started.why}`);
      const m = /^ (\S+) (\S+) (\/.*)$/.exec(started.line);
      if (!m) {
        await started.close();
        throw new CudamatrixError('TRANSPORT_FAILED', `could not make a run directory on ${label}: the helper answered "${oneLine(started.line, LAST_WORDS)}"`);
      }
      const [, os, machine, workDir] = m;
      if (os !== 'Linux') {
        await started.close();
        throw new CudamatrixError('TARGET_UNREACHABLE', `${label} runs ${os}; cudaprobe targets Linux and Windows`);
      }
      const arch = normaliseArch(machine!);
      const session = new SshSession(client, `ssh ${label}`, 'linux', arch, shell, workDir!, onDispose);
      session.adoptGuardian(started.channel, started.output);
      return session;
    }
    const setup = { timeoutMs: setupTimeoutMs };
    const archNonce = newNonce();
    const a = await run(client, powershell(shell, `'cm-arch-${archNonce}'; $env:PROCESSOR_ARCHITECTURE`), { ...setup, what: 'reading the processor architecture' });
    // PROCESSOR_ARCHITECTURE: AMD64 or ARM64 (x86 in a 32-bit PowerShell, which runs x64 programs too).
    const arch = normaliseArch(afterMarker(a.stdout, `cm-arch-${archNonce}`) ?? '') === 'aarch64' ? 'aarch64' : 'x86_64';
    const dirNonce = newNonce();
    const d = await run(
      client,
      powershell(shell, `$d = Join-Path $env:TEMP ('cudamatrix-' + [guid]::NewGuid()); New-Item -ItemType Directory -Path $d | Out-Null; 'cm-dir-${dirNonce}'; $d`),
      { ...setup, what: 'making the run directory' },
    );
    const workDir = (afterMarker(d.stdout, `cm-dir-${dirNonce}`) ?? '').trim().split(/\r?\n/)[0] ?? '';
    if (d.code !== 0 || !/^[A-Za-z]:\\/.test(workDir)) throw new CudamatrixError('TRANSPORT_FAILED', `could not make a run directory on ${label}: ${oneLine(d.stderr, LAST_WORDS) || oneLine(d.stdout, LAST_WORDS) || `exit status ${d.code}`}`);
    const session = new SshSession(client, `ssh ${label}`, 'windows', arch, shell, workDir, onDispose);
    const readyNonce = newNonce();
    const guardian = await startHelper(
      client,
      powershell(shell, `'cm-ready-${readyNonce}'; [Console]::In.ReadToEnd() | Out-Null; Remove-Item -Recurse -Force -LiteralPath ${quotePowerShell(workDir)}`),
      { marker: `cm-ready-${readyNonce}`, timeoutMs: setupTimeoutMs },
    );
    if (!guardian.ok) {
      // The directory exists but nothing watches it: remove it now, or say where it is.
      const rm = await run(client, powershell(shell, `Remove-Item -Recurse -Force -LiteralPath ${quotePowerShell(workDir)}`), setup).catch(() => undefined);
      throw new CudamatrixError('TRANSPORT_FAILED', `could not start the session's guardian on ${label}: ${guardian.why}${rm?.code === 0 ? '' : `; ${workDir} may be left there`}`);
    }
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

  /** Runs a command through the POSIX helper (see agent.sh): no channel of its own. */
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
    const nonce = newNonce();
    const command = this.commandLine(argv, options, nonce);
    return supervise(
      argv,
      options,
      (io) =>
        new Promise<Launched>((launched, failed) => {
          this.client.exec(command, (err, stream) => {
            if (err) return failed(transportFailed(err));
            const out = new StringDecoder('utf8');
            const errDec = new StringDecoder('utf8');
            // What the login shell's rc files print comes before the command line's markers.
            const outStrip = new MarkerStrip(`cm-begin-${nonce}`);
            const errStrip = new MarkerStrip(`cm-begin-${nonce}`);
            let stopped = false;
            // A Windows command's begin marker carries the PID of the PowerShell that runs it.
            let shellPid: number | undefined;
            let settle: ((end: ExecEnd) => void) | undefined;
            const endTree = (pid: number) =>
              void this.endWindowsTree(pid, io.stderr).then((ended) => {
                stream.close();
                // sshd holds a channel open until its process exits (session.c): if the tree
                // could not be ended, the command is given up on rather than waited for.
                if (!ended) setTimeout(() => settle?.({ exitCode: null, signal: null }), 10_000).unref();
              });
            outStrip.onLine = (rest) => {
              if (!/^\d+$/.test(rest)) return;
              shellPid = Number(rest);
              if (stopped) endTree(shellPid);
            };
            stream.on('data', (d: Buffer) => io.stdout(outStrip.feed(out.write(d))));
            stream.stderr.on('data', (d: Buffer) => io.stderr(errStrip.feed(errDec.write(d))));
            const done = new Promise<ExecEnd>((resolve, reject) => {
              settle = resolve;
              stream.on('close', (code: number | null | undefined, signal?: string) => {
                io.stdout(outStrip.feed(out.end()) + outStrip.end());
                io.stderr(errStrip.feed(errDec.end()) + errStrip.end());
                if (code === undefined && this.lost) return reject(transportFailed(this.lost));
                // No exit status: the channel was closed under the command (the connection went).
                if ((code === null || code === undefined) && !stopped) return reject(transportFailed(this.lost ?? new Error('the command ended without an exit status')));
                // A stopped Windows command was ended (taskkill's TerminateProcess leaves exit status 1): it did not exit.
                if (stopped && this.platform === 'windows') return resolve({ exitCode: null, signal: null });
                // The wrapper reports a killed command as 128 + signal.
                const killed = typeof code === 'number' && code > 128 && code < 160 && stopped;
                resolve({ exitCode: killed ? null : (code ?? null), signal: signal ?? (killed ? signalName(code - 128) : null) });
              });
            });
            // stdin is closed at once when the command has none: PowerShell may not exit while its
            // stdin is open.
            stream.end(options.stdin);
            launched({
              done,
              stop: () => {
                stopped = true;
                // Win32-OpenSSH does not end a command when its channel closes (it ends the job
                // object of the session's processes only when the shell exits; PowerShell/
                // Win32-OpenSSH#1751): the tree is ended with taskkill over a second channel first.
                // A POSIX command that reads stdin sees its end.
                if (this.platform !== 'windows') return stream.close();
                if (shellPid !== undefined) return endTree(shellPid);
                // Stopped before its marker came: wait for the PID a while, then give up on it.
                setTimeout(() => shellPid === undefined && stream.close(), 5_000).unref();
              },
            });
          });
        }),
    );
  }

  /**
   * Ends a Windows process tree, from the PowerShell that runs a command down, on a channel of its
   * own: `taskkill /F /T /PID` (cmd and PowerShell both run it as it is). When it fails, the
   * command's stderr says so: its processes may still hold the GPU and its folder. True when the
   * tree has ended.
   */
  private async endWindowsTree(pid: number, stderr: (text: string) => void): Promise<boolean> {
    const r = await run(this.client, `taskkill /F /T /PID ${pid}`, { timeoutMs: 15_000, what: `taskkill /F /T /PID ${pid}` }).catch((e: Error) => e);
    if (!(r instanceof Error) && (r.code === 0 || r.code === TASKKILL_NOT_FOUND)) return true;
    const why = r instanceof Error ? r.message : `exit status ${r.code}: ${oneLine(r.stdout + r.stderr, LAST_WORDS) || 'no output'}`;
    stderr(`\ncudamatrix: taskkill /F /T /PID ${pid} on ${this.description} failed (${why}); the command's processes may still be running there: end them with Task Manager or taskkill\n`);
    return false;
  }

  /** The command line for a channel of its own: marker lines on stdout and stderr first (see MarkerStrip). */
  private commandLine(argv: string[], options: ExecOptions, nonce: string): string {
    const env = Object.entries(options.env ?? {});
    if (this.platform === 'linux') {
      // A POSIX command that reads stdin: run plainly on its own channel.
      const prefix = env.length ? ['env', ...env.map(([k, v]) => `${k}=${v}`)] : [];
      return `printf 'cm-begin-%s\\n' ${nonce}; printf 'cm-begin-%s\\n' ${nonce} >&2; cd ${quotePosix(options.cwd ?? this.workDir)} && exec ${quoteArgv([...prefix, ...argv], 'posix')}`;
    }
    const script = [
      `[Console]::Out.WriteLine('cm-begin-${nonce} ' + $PID)`,
      `[Console]::Error.WriteLine('cm-begin-${nonce}')`,
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

  /**
   * Copies a file to the host. POSIX hosts: through `cat` on a channel of its own, not SFTP: sshd
   * starts its SFTP server through the login shell, so a ~/.bashrc that prints anything breaks
   * SFTP ("Received message too long" with OpenSSH's sftp), where a command still works.
   * Windows hosts: SFTP.
   */
  async put(localPath: string, remotePath: string, options: { executable?: boolean } = {}): Promise<void> {
    if (this.platform === 'linux') {
      const nonce = newNonce();
      const target = quotePosix(remotePath);
      // stderr after the marker is cat's or chmod's: what a login script printed comes before.
      const command = `printf 'cm-put-%s\\n' ${nonce} >&2; cat > ${target} && chmod ${options.executable ? '755' : '644'} ${target}`;
      const r = await this.streamOnChannel(command, { marker: `cm-put-${nonce}`, stdin: createReadStream(localPath) });
      if (r.code !== 0) throw new CudamatrixError('TRANSPORT_FAILED', `could not write ${remotePath} on ${this.description}: ${oneLine(r.stderr, LAST_WORDS) || `exit status ${r.code}`}`);
      return;
    }
    const sftp = await this.sftp();
    await new Promise<void>((resolve, reject) =>
      sftp.fastPut(localPath, this.sftpPath(remotePath), { mode: options.executable ? 0o755 : 0o644 }, (err) => (err ? reject(transportFailed(err)) : resolve())),
    );
  }

  /** Copies a file from the host: POSIX hosts through `cat` (see put), Windows hosts SFTP. */
  async get(remotePath: string, localPath: string): Promise<void> {
    if (this.platform === 'linux') {
      const nonce = newNonce();
      const file = createWriteStream(localPath);
      const command = `printf 'cm-get-%s\\n' ${nonce}; printf 'cm-get-%s\\n' ${nonce} >&2; exec cat -- ${quotePosix(remotePath)}`;
      const r = await this.streamOnChannel(command, { marker: `cm-get-${nonce}`, stdout: file });
      if (r.code !== 0) {
        await rm(localPath, { force: true });
        throw new CudamatrixError('TRANSPORT_FAILED', `could not read ${remotePath} on ${this.description}: ${oneLine(r.stderr, LAST_WORDS) || `exit status ${r.code}`}`);
      }
      return;
    }
    const sftp = await this.sftp();
    await new Promise<void>((resolve, reject) => sftp.fastGet(this.sftpPath(remotePath), localPath, (err) => (err ? reject(transportFailed(err)) : resolve())));
  }

  /**
   * Runs a POSIX command line on a channel of its own for a file's bytes: `stdin` is piped in,
   * stdout (from the marker line on: bytes, not text) is written to `stdout`. stderr from its
   * marker on is collected for messages.
   */
  private streamOnChannel(command: string, o: { marker: string; stdin?: Readable; stdout?: Writable }): Promise<{ code: number | null; stderr: string }> {
    return new Promise((resolve, reject) => {
      this.client.exec(command, (err, stream) => {
        if (err) return reject(transportFailed(err));
        const errStrip = new MarkerStrip(o.marker);
        const decoder = new StringDecoder('utf8');
        let stderr = '';
        let failure: Error | undefined;
        stream.stderr.on('data', (d: Buffer) => (stderr = (stderr + errStrip.feed(decoder.write(d))).slice(-8192)));
        const marker = Buffer.from(`${o.marker}\n`);
        let head: Buffer | undefined = Buffer.alloc(0);
        stream.on('data', (d: Buffer) => {
          if (!o.stdout) return;
          if (head) {
            // The bytes before the marker line are a login script's chatter.
            head = Buffer.concat([head, d]);
            const at = head.indexOf(marker);
            if (at < 0) {
              if (head.length > 64 * 1024) head = head.subarray(head.length - marker.length);
              return;
            }
            d = head.subarray(at + marker.length);
            head = undefined;
          }
          if (d.length && !o.stdout.write(d)) {
            stream.pause();
            o.stdout.once('drain', () => stream.resume());
          }
        });
        const fail = (e: Error) => {
          failure ??= e;
          stream.close();
        };
        o.stdin?.on('error', fail);
        o.stdout?.on('error', fail);
        stream.on('close', (code: number | null | undefined) => {
          const flushed = o.stdout ? new Promise<void>((r) => o.stdout!.end(() => r())) : Promise.resolve();
          void flushed.then(() => {
            if (failure) return reject(new CudamatrixError('TRANSPORT_FAILED', `copying failed on ${this.description}: ${failure.message}`, { cause: failure }));
            if (code === undefined || code === null) return reject(transportFailed(this.lost ?? new Error('the copy ended without an exit status')));
            if (o.stdout && head) return resolve({ code: code === 0 ? 1 : code, stderr: `${stderr} (no data came)` });
            resolve({ code, stderr: stderr + errStrip.end() });
          });
        });
        if (o.stdin) o.stdin.pipe(stream);
        else stream.end();
      });
    });
  }

  /**
   * A command's stdin and stdout as one byte stream, on a channel of its own (POSIX hosts: a
   * Windows shell does not pass bytes through unchanged). What a login script prints before the
   * command's marker line is dropped, as for files.
   */
  openStream(argv: string[]): Promise<Duplex> {
    if (this.platform !== 'linux') {
      return Promise.reject(new CudamatrixError('MATRIX_INVALID', `${this.description} is a Windows host: a later hop cannot stream through its shell; reach the engine or distro another way`));
    }
    const nonce = newNonce();
    const marker = Buffer.from(`cm-begin-${nonce}\n`);
    return new Promise((resolve, reject) => {
      this.client.exec(this.commandLine(argv, {}, nonce), (err, channel) => {
        if (err) return reject(transportFailed(err));
        const out = new PassThrough();
        const errStrip = new MarkerStrip(`cm-begin-${nonce}`);
        const decoder = new StringDecoder('utf8');
        let stderr = '';
        channel.stderr.on('data', (d: Buffer) => (stderr = (stderr + errStrip.feed(decoder.write(d))).slice(-4000)));
        let head: Buffer | undefined = Buffer.alloc(0);
        let received = 0;
        channel.on('data', (d: Buffer) => {
          if (head) {
            head = Buffer.concat([head, d]);
            const at = head.indexOf(marker);
            if (at < 0) return;
            d = head.subarray(at + marker.length);
            head = undefined;
          }
          received += d.length;
          if (d.length) out.write(d);
        });
        const stream = socketLike(Duplex.from({ readable: out, writable: forwardTo(channel) }));
        // A command that failed before it said anything (no engine there): the stream fails with
        // its stderr. One that spoke and then exited non-zero (dial-stdio, as its peer hung up)
        // ends as the stream does, with every byte it sent still read.
        channel.on('exit', (code: number | null, signal?: string) => {
          if (code !== 0 && received === 0 && !stream.destroyed) stream.destroy(streamEnded(argv, code, signal ?? null, stderr + errStrip.end()));
        });
        channel.on('close', () => out.end());
        stream.once('close', () => channel.close());
        resolve(stream);
      });
    });
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
      const nonce = newNonce();
      const r = await run(
        this.client,
        powershell(this.shell, `$d = Join-Path $env:LOCALAPPDATA 'cudamatrix\\deployed\\${key}'; New-Item -ItemType Directory -Force -Path $d | Out-Null; 'cm-cache-${nonce}'; $d; $f = Join-Path $d ${quotePowerShell(name)}; if (Test-Path $f) { (Get-FileHash -Algorithm SHA256 -LiteralPath $f).Hash }`),
      );
      [dir, cachedSha] = (afterMarker(r.stdout, `cm-cache-${nonce}`) ?? '').trim().split(/\r?\n/);
    }
    if (!dir) throw new CudamatrixError('TRANSPORT_FAILED', `could not prepare the probe cache on ${this.description}`);
    const target = this.joinPath(dir, name);
    if (cachedSha && cachedSha.trim().toLowerCase() === sha) return { path: target, uploaded: false };
    // Upload beside it and rename, so that a reader never runs half a binary. On POSIX hosts the
    // small steps go through the helper: no channel (and no login script) of their own.
    if (this.platform === 'linux') {
      const made = await this.exec(['mkdir', '-p', dir]);
      if (made.exitCode !== 0) throw new CudamatrixError('TRANSPORT_FAILED', `could not make the probe cache ${dir} on ${this.description}: ${oneLine(made.stderr, LAST_WORDS)}`);
    }
    const partial = `${target}.upload-${randomBytes(4).toString('hex')}`;
    await this.put(localPath, partial, { executable: true });
    let placedSha: string;
    let why: string;
    if (this.platform === 'linux') {
      const mv = await this.exec(['sh', '-c', 'mv -f -- "$1" "$2" && sha256sum -- "$2"', 'sh', partial, target]);
      placedSha = mv.exitCode === 0 ? (mv.stdout.trim().split(/\s+/)[0] ?? '') : '';
      why = oneLine(mv.stderr, LAST_WORDS);
    } else {
      const nonce = newNonce();
      const mv = await run(
        this.client,
        powershell(this.shell, `Move-Item -Force -LiteralPath ${quotePowerShell(partial)} -Destination ${quotePowerShell(target)}; 'cm-hash-${nonce}'; (Get-FileHash -Algorithm SHA256 -LiteralPath ${quotePowerShell(target)}).Hash`),
      );
      placedSha = mv.code === 0 ? (afterMarker(mv.stdout, `cm-hash-${nonce}`) ?? '').trim().split(/\s+/)[0] ?? '' : '';
      why = oneLine(mv.stderr, LAST_WORDS);
    }
    if (placedSha.toLowerCase() !== sha) {
      throw new CudamatrixError('TRANSPORT_FAILED', `the probe uploaded to ${this.description}:${target} does not verify (${why || 'hash differs'})`);
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

type Started =
  | { ok: true; channel: ClientChannel; /** The rest of the marker's line. */ line: string; output: HelperOutput; close(): Promise<void> }
  | { ok: false; why: string };

/**
 * Starts a long-lived helper channel and waits for its marker line on stdout: what a login
 * script printed before is dropped (on stderr too, up to `stderrMarker`, when given). What
 * follows goes to the handlers the caller installs. Fails when the channel closes first, or
 * when no marker came within `timeoutMs` (the channel is then closed); either way the helper,
 * if it started, removes what it made (agent.sh's trap).
 */
function startHelper(client: Client, command: string, o: { marker: string; stderrMarker?: string; timeoutMs: number }): Promise<Started> {
  return new Promise((resolve, reject) => {
    client.exec(command, (err, channel) => {
      if (err) return reject(transportFailed(err));
      const out = new StringDecoder('utf8');
      const errs = new StringDecoder('utf8');
      const errStrip = o.stderrMarker ? new MarkerStrip(o.stderrMarker) : undefined;
      /** stdout up to the end of the marker's line; then what follows, until a handler takes it. */
      let head = '';
      let lineDone = false;
      let pending = '';
      let pendingErr = '';
      let settled = false;
      let onOut: ((text: string) => void) | undefined;
      let onErr: ((text: string) => void) | undefined;
      const closed = new Promise<void>((r) => channel.on('close', () => r()));
      const close = async (): Promise<void> => {
        channel.end();
        await withTimeout(closed, 5_000);
      };
      const output: HelperOutput = {
        onStdout(handler) {
          onOut = handler;
          if (pending) handler(pending);
          pending = '';
        },
        onStderr(handler) {
          onErr = handler;
          if (pendingErr) handler(pendingErr);
          pendingErr = '';
        },
      };
      const said = () => oneLine(`${head} ${errStrip ? errStrip.chatter + errStrip.end() : pendingErr}`, LAST_WORDS);
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ok: false, why });
      };
      const timer = setTimeout(() => {
        fail(`the remote shell did not start cudamatrix's helper within ${o.timeoutMs} ms (connectTimeout): does a login script (~/.bashrc, ~/.profile, a PowerShell profile) wait for input? It printed: ${said() || 'nothing'}`);
        channel.close();
      }, o.timeoutMs);
      channel.stderr.on('data', (d: Buffer) => {
        const text = errStrip ? errStrip.feed(errs.write(d)) : errs.write(d);
        if (onErr) onErr(text);
        else pendingErr += text;
      });
      channel.on('data', (d: Buffer) => {
        const text = out.write(d);
        if (onOut) return onOut(text);
        if (lineDone) {
          pending += text;
          return;
        }
        head += text;
        const at = head.indexOf(o.marker);
        const nl = at < 0 ? -1 : head.indexOf('\n', at);
        if (nl < 0) {
          // Still chatter: keep only its end (for a message), and what may be a marker's start.
          if (at < 0 && head.length > 8192) head = head.slice(-4096);
          return;
        }
        const line = head.slice(at + o.marker.length, nl).replace(/\r$/, '');
        pending = head.slice(nl + 1);
        head = head.slice(0, at);
        lineDone = true;
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ok: true, channel, line, output, close });
      });
      channel.on('close', () => fail(said() ? `the remote shell ended before cudamatrix's helper started; it printed: ${said()}` : "the remote shell ended before cudamatrix's helper started, and printed nothing"));
    });
  });
}

/**
 * What every PowerShell script begins with. `$null;`: OpenSSH for Windows passes a command that
 * begins with a quote to PowerShell unquoted, and it is split again (misc.c); this one begins with
 * a statement. Then UTF-8 output (without a byte order mark), for PowerShell's own output and for
 * its reading of native programs' (cudaprobe writes UTF-8): by default both are the OEM code page,
 * in which a profile folder such as C:\Users\Jürgen comes back garbled. Where the console cannot
 * be set (no console), the script goes on in the default.
 */
export const POWERSHELL_PRELUDE = '$null; try { [Console]::OutputEncoding = New-Object System.Text.UTF8Encoding $false } catch { }; ';

/** taskkill's exit status when no process has that PID (the tree has ended already). */
const TASKKILL_NOT_FOUND = 128;

/** A PowerShell script as a command line for the remote shell (PowerShell itself, or cmd). */
function powershell(shell: Shell, body: string): string {
  const script = POWERSHELL_PRELUDE + body;
  if (shell === 'powershell') return script;
  // From cmd, start PowerShell with the script as one -Command argument.
  return quoteArgv(['powershell', '-NoProfile', '-NonInteractive', '-Command', script], 'cmd');
}

/**
 * Which shell runs our commands, in one round trip: sh expands $0 and leaves %OS% alone; cmd
 * expands %OS% only; PowerShell expands neither but knows $PSVersionTable. Only what follows the
 * marker counts: a login script may have printed anything (even "Windows_NT") before it.
 */
async function detectShell(client: Client, label: string, timeoutMs: number): Promise<Shell> {
  const nonce = newNonce();
  const r = await run(client, `echo cm-shell-${nonce} %OS% $PSVersionTable`, { timeoutMs, what: `detecting the shell of ${label}` });
  // No marker (a shell that refused the line, e.g. csh on the undefined variable): as before,
  // POSIX is tried, and the helper's start says what went wrong.
  const out = afterMarker(r.stdout, `cm-shell-${nonce}`) ?? '';
  if (out.includes('Windows_NT')) return 'cmd';
  if (/System\.Management\.Automation|PSVersion/.test(out)) return 'powershell';
  return 'posix';
}

function signalName(n: number): string {
  return ({ 1: 'SIGHUP', 2: 'SIGINT', 9: 'SIGKILL', 15: 'SIGTERM' } as Record<number, string>)[n] ?? `SIG${n}`;
}
