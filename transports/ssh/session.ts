/**
 * A session on a host reached over SSH. Commands are argv arrays quoted for the remote shell
 * (detected: POSIX sh, PowerShell or cmd). On POSIX hosts (posix-host.ts) every command runs in
 * its own process group watched through its stdin: a timeout, a cancellation or a dropped
 * connection closes that stdin and the whole remote tree is killed; on Windows hosts
 * (windows-host.ts) a stopped command's tree is ended with taskkill. The run directory is watched
 * the same way: a guardian removes it when this session ends, however it ends.
 */
import type { Duplex } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { Client, ClientChannel, SFTPWrapper } from 'ssh2';
import { CudamatrixError } from '../../core/errors.ts';
import { withTimeout } from '../../core/timeout.ts';
import { installCached } from '../remote-cache.ts';
import { type ExecEnd, type Launched, supervise } from '../supervise.ts';
import type { ExecOptions, ExecResult, Platform, Session, Shell } from '../transport.ts';
import { type HelperOutput, MarkerStrip, newNonce, signalName, transportFailed } from './channel.ts';
import { openPosixHost, PosixHost, posixCommandLine } from './posix-host.ts';
import { detectShell, endWindowsTree, openWindowsHost, windowsCache, windowsCommandLine } from './windows-host.ts';

export class SshSession implements Session {
  readonly hostKey: string;
  private guardian?: ClientChannel;
  private guardianClosed?: Promise<void>;
  /** The POSIX host's agent, which runs the commands without stdin; undefined on a Windows host. */
  private posix?: PosixHost;
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
  static async open(
    client: Client,
    label: string,
    runId: string,
    shellHint: Shell | 'auto',
    onDispose: () => Promise<void>,
    setupTimeoutMs = 15_000,
  ): Promise<SshSession> {
    const shell = shellHint === 'auto' ? await detectShell(client, label, setupTimeoutMs) : shellHint;
    if (shell === 'posix') {
      const host = await openPosixHost(client, label, runId, setupTimeoutMs);
      const session = new SshSession(client, `ssh ${label}`, 'linux', host.arch, shell, host.workDir, onDispose);
      session.adoptGuardian(host.channel, host.output);
      return session;
    }
    const host = await openWindowsHost(client, label, shell, setupTimeoutMs);
    const session = new SshSession(client, `ssh ${label}`, 'windows', host.arch, shell, host.workDir, onDispose);
    session.adoptGuardian(host.guardian.channel, host.guardian.output);
    return session;
  }

  /**
   * The channel that removes the run directory when it closes: at dispose, or when the
   * connection drops. On a POSIX host it is the agent's.
   */
  private adoptGuardian(channel: ClientChannel, output: HelperOutput): void {
    this.guardian = channel;
    this.guardianClosed = new Promise((resolve) =>
      channel.on('close', () => {
        this.lost ??= new Error('the helper channel closed');
        this.posix?.channelClosed(this.lost);
        resolve();
      }),
    );
    if (this.platform === 'linux')
      this.posix = new PosixHost(this.client, channel, output, this.description, this.workDir, () => this.lost);
  }

  exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    if (this.lost) return Promise.reject(transportFailed(this.lost));
    if (this.posix && options.stdin === undefined) return this.posix.exec(argv, options);
    return this.execOnChannel(argv, options);
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
              void endWindowsTree(this.client, this.description, pid, io.stderr).then((ended) => {
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
            stream.on('data', (chunk: Buffer) => io.stdout(outStrip.feed(out.write(chunk))));
            stream.stderr.on('data', (chunk: Buffer) => io.stderr(errStrip.feed(errDec.write(chunk))));
            const done = new Promise<ExecEnd>((resolve, reject) => {
              settle = resolve;
              stream.on('close', (code: number | null | undefined, signal?: string) => {
                io.stdout(outStrip.feed(out.end()) + outStrip.end());
                io.stderr(errStrip.feed(errDec.end()) + errStrip.end());
                if (code === undefined && this.lost) return reject(transportFailed(this.lost));
                // No exit status: the channel was closed under the command (the connection went).
                if ((code === null || code === undefined) && !stopped)
                  return reject(transportFailed(this.lost ?? new Error('the command ended without an exit status')));
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

  /** The command line for a channel of its own: marker lines on stdout and stderr first (see MarkerStrip). */
  private commandLine(argv: string[], options: ExecOptions, nonce: string): string {
    if (this.platform === 'linux') return posixCommandLine(argv, options, nonce, this.workDir);
    return windowsCommandLine(this.shell, argv, options, nonce, this.workDir);
  }

  private sftp(): Promise<SFTPWrapper> {
    this.sftpChannel ??= new Promise((resolve, reject) =>
      this.client.sftp((err, sftp) => (err ? reject(transportFailed(err)) : resolve(sftp))),
    );
    return this.sftpChannel;
  }

  private sftpPath(remotePath: string): string {
    return this.platform === 'windows' ? `/${remotePath.replace(/\\/g, '/')}` : remotePath;
  }

  /** Copies a file to the host: POSIX hosts through `cat` (posix-host.ts put), Windows hosts SFTP. */
  async put(localPath: string, remotePath: string, options: { executable?: boolean } = {}): Promise<void> {
    if (this.posix) return this.posix.put(localPath, remotePath, options);
    const sftp = await this.sftp();
    await new Promise<void>((resolve, reject) =>
      sftp.fastPut(localPath, this.sftpPath(remotePath), { mode: options.executable ? 0o755 : 0o644 }, (err) =>
        err ? reject(transportFailed(err)) : resolve(),
      ),
    );
  }

  /** Copies a file from the host: POSIX hosts through `cat`, Windows hosts SFTP. */
  async get(remotePath: string, localPath: string): Promise<void> {
    if (this.posix) return this.posix.get(remotePath, localPath);
    const sftp = await this.sftp();
    await new Promise<void>((resolve, reject) =>
      sftp.fastGet(this.sftpPath(remotePath), localPath, (err) => (err ? reject(transportFailed(err)) : resolve())),
    );
  }

  /**
   * A command's stdin and stdout as one byte stream, on a channel of its own (POSIX hosts: a
   * Windows shell does not pass bytes through unchanged).
   */
  openStream(argv: string[]): Promise<Duplex> {
    if (!this.posix) {
      return Promise.reject(
        new CudamatrixError(
          'MATRIX_INVALID',
          `${this.description} is a Windows host: a later hop cannot stream through its shell; reach the engine or distro another way`,
        ),
      );
    }
    return this.posix.openStream(argv);
  }

  joinPath(...parts: string[]): string {
    return this.platform === 'windows' ? parts.join('\\').replace(/\\+/g, '\\') : parts.join('/').replace(/\/+/g, '/');
  }

  /** Puts a file in the host's per-hash probe cache (remote-cache.ts). */
  installCached(localPath: string, key: string, name: string): Promise<{ path: string; uploaded: boolean }> {
    const steps = this.posix ? this.posix.cache() : windowsCache(this.client, this.shell);
    const host = {
      description: this.description,
      put: (from: string, to: string, options: { executable: boolean }) => this.put(from, to, options),
      joinPath: (...parts: string[]) => this.joinPath(...parts),
      ...steps,
    };
    return installCached(host, localPath, key, name);
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
