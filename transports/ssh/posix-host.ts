/**
 * The POSIX side of an SSH session: one long-lived channel runs the agent (agent.sh), which
 * makes the run directory, runs the commands without stdin one after another, each in a process
 * group of its own, and answers the cache's questions. A command with stdin, a file's bytes and
 * a byte stream each get a channel of their own (through `cat`, not SFTP: see put).
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Duplex, PassThrough, type Readable, type Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { Client, ClientChannel } from 'ssh2';
import { normaliseArch } from '../../core/arch.ts';
import { CudamatrixError } from '../../core/errors.ts';
import { oneLine } from '../../core/text.ts';
import type { CacheHost } from '../remote-cache.ts';
import { shellFile } from '../shell-files.ts';
import { forwardTo, socketLike, streamEnded } from '../stream.ts';
import { type ExecEnd, supervise } from '../supervise.ts';
import type { ExecOptions, ExecResult } from '../transport.ts';
import { type HelperOutput, LAST_WORDS, MarkerStrip, newNonce, signalName, startHelper, transportFailed } from './channel.ts';
import { quoteArgv, quotePosix } from './quote.ts';

/**
 * Starts the agent (agent.sh), which makes the run directory: its setup line says the OS, the
 * machine and the directory. Only Linux is measured.
 */
export async function openPosixHost(
  client: Client,
  label: string,
  runId: string,
  setupTimeoutMs: number,
): Promise<{ arch: string; workDir: string; channel: ClientChannel; output: HelperOutput }> {
  const tag = runId.replace(/[^A-Za-z0-9-]/g, '').slice(-12) || 'run';
  const nonce = newNonce();
  // exec: the login shell that runs our command line need not stay around as well.
  const started = await startHelper(
    client,
    `exec sh -c ${quotePosix(shellFile('ssh/agent.sh'))} cudamatrix-helper ${quotePosix(tag)} ${nonce}`,
    {
      marker: `cm-setup-${nonce}`,
      stderrMarker: `cm-setup-${nonce}`,
      timeoutMs: setupTimeoutMs,
    },
  );
  if (!started.ok) throw new CudamatrixError('TRANSPORT_FAILED', `could not make a run directory on ${label}: ${started.why}`);
  const match = /^ (\S+) (\S+) (\/.*)$/.exec(started.line);
  if (!match) {
    await started.close();
    throw new CudamatrixError(
      'TRANSPORT_FAILED',
      `could not make a run directory on ${label}: the helper answered "${oneLine(started.line, LAST_WORDS)}"`,
    );
  }
  const [, os, machine, workDir] = match;
  if (os !== 'Linux') {
    await started.close();
    throw new CudamatrixError('TARGET_UNREACHABLE', `${label} runs ${os}; cudaprobe targets Linux and Windows`);
  }
  return { arch: normaliseArch(machine!), workDir: workDir!, channel: started.channel, output: started.output };
}

/** Quotes an argument for the agent's one-line "run" request: a newline becomes "$nl". */
function quoteForLine(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`).replace(/\n/g, `'"$nl"'`)}'`;
}

/** The command line for a command's own channel (one that reads stdin): marker lines on stdout and stderr first (see MarkerStrip). */
export function posixCommandLine(argv: string[], options: ExecOptions, nonce: string, workDir: string): string {
  const env = Object.entries(options.env ?? {});
  const prefix = env.length ? ['env', ...env.map(([k, value]) => `${k}=${value}`)] : [];
  return `printf 'cm-begin-%s\\n' ${nonce}; printf 'cm-begin-%s\\n' ${nonce} >&2; cd ${quotePosix(options.cwd ?? workDir)} && exec ${quoteArgv([...prefix, ...argv], 'posix')}`;
}

export class PosixHost {
  /** Answers of the agent, in order, for the requests waiting on them. */
  private readonly answers: ((line: string) => void)[] = [];
  /** Text from the agent not yet taken as an answer. */
  private helperText = '';
  /** The command the agent is running, which takes its output until its end markers. */
  private current?: { out(text: string): void; err(text: string): void; lost(error: Error): void };
  /** Commands through the agent run one after another. */
  private queue: Promise<unknown> = Promise.resolve();

  /** `lost`: why the session can no longer be used (the connection or the agent's channel closed), if it cannot. */
  constructor(
    private readonly client: Client,
    private readonly channel: ClientChannel,
    output: HelperOutput,
    private readonly description: string,
    private readonly workDir: string,
    private readonly lost: () => Error | undefined,
  ) {
    output.onStdout((text) => {
      if (this.current) return this.current.out(text);
      this.helperText += text;
      for (let nl = this.helperText.indexOf('\n'); nl >= 0; nl = this.helperText.indexOf('\n')) {
        const line = this.helperText.slice(0, nl).replace(/\r$/, '');
        this.helperText = this.helperText.slice(nl + 1);
        this.answers.shift()?.(line);
      }
    });
    output.onStderr((text) => this.current?.err(text));
  }

  /** The agent's channel closed: the command it runs has lost its connection. */
  channelClosed(error: Error): void {
    this.current?.lost(error);
  }

  /** Runs a command through the agent, after those before it. */
  exec(argv: string[], options: ExecOptions): Promise<ExecResult> {
    const result = this.queue.then(() => this.run(argv, options));
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Asks the agent one question and waits for its one-line answer. */
  private ask(request: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const lost = this.lost();
      if (lost) return reject(transportFailed(lost));
      this.answers.push(resolve);
      this.channel.write(`${request}\n`);
    });
  }

  /** Runs a command through the agent: no channel of its own. */
  private run(argv: string[], options: ExecOptions): Promise<ExecResult> {
    const lost = this.lost();
    if (lost) return Promise.reject(transportFailed(lost));
    const guardian = this.channel;
    const nonce = randomBytes(6).toString('hex');
    const env = Object.entries(options.env ?? {});
    const withEnv = env.length ? ['env', ...env.map(([k, value]) => `${k}=${value}`), ...argv] : argv;
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
            const match = exitMark.exec(out);
            if (match) {
              code = Number(match[1]);
              this.helperText = out.slice(match.index + match[0].length);
              out = out.slice(0, match.index);
            }
            if (head && (match || out.includes('\n') || out.length >= tail)) {
              out = out.replace(/^cm-started \d+\n/, '');
              head = false;
            }
            if (!head) {
              const keep = match ? 0 : Math.min(tail, out.length);
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

  /**
   * Copies a file to the host through `cat` on a channel of its own, not SFTP: sshd starts its
   * SFTP server through the login shell, so a ~/.bashrc that prints anything breaks SFTP
   * ("Received message too long" with OpenSSH's sftp), where a command still works.
   */
  async put(localPath: string, remotePath: string, options: { executable?: boolean } = {}): Promise<void> {
    const nonce = newNonce();
    const target = quotePosix(remotePath);
    // stderr after the marker is cat's or chmod's: what a login script printed comes before.
    const command = `printf 'cm-put-%s\\n' ${nonce} >&2; cat > ${target} && chmod ${options.executable ? '755' : '644'} ${target}`;
    const result = await this.streamOnChannel(command, { marker: `cm-put-${nonce}`, stdin: createReadStream(localPath) });
    if (result.code !== 0)
      throw new CudamatrixError(
        'TRANSPORT_FAILED',
        `could not write ${remotePath} on ${this.description}: ${oneLine(result.stderr, LAST_WORDS) || `exit status ${result.code}`}`,
      );
  }

  /** Copies a file from the host through `cat` (see put). */
  async get(remotePath: string, localPath: string): Promise<void> {
    const nonce = newNonce();
    const file = createWriteStream(localPath);
    const command = `printf 'cm-get-%s\\n' ${nonce}; printf 'cm-get-%s\\n' ${nonce} >&2; exec cat -- ${quotePosix(remotePath)}`;
    const result = await this.streamOnChannel(command, { marker: `cm-get-${nonce}`, stdout: file });
    if (result.code !== 0) {
      await rm(localPath, { force: true });
      throw new CudamatrixError(
        'TRANSPORT_FAILED',
        `could not read ${remotePath} on ${this.description}: ${oneLine(result.stderr, LAST_WORDS) || `exit status ${result.code}`}`,
      );
    }
  }

  /**
   * Runs a POSIX command line on a channel of its own for a file's bytes: `stdin` is piped in,
   * stdout (from the marker line on: bytes, not text) is written to `stdout`. stderr from its
   * marker on is collected for messages.
   */
  private streamOnChannel(
    command: string,
    options: { marker: string; stdin?: Readable; stdout?: Writable },
  ): Promise<{ code: number | null; stderr: string }> {
    return new Promise((resolve, reject) => {
      this.client.exec(command, (err, stream) => {
        if (err) return reject(transportFailed(err));
        const errStrip = new MarkerStrip(options.marker);
        const decoder = new StringDecoder('utf8');
        let stderr = '';
        let failure: Error | undefined;
        stream.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + errStrip.feed(decoder.write(chunk))).slice(-8192)));
        const marker = Buffer.from(`${options.marker}\n`);
        let head: Buffer | undefined = Buffer.alloc(0);
        stream.on('data', (chunk: Buffer) => {
          if (!options.stdout) return;
          if (head) {
            // The bytes before the marker line are a login script's chatter.
            head = Buffer.concat([head, chunk]);
            const at = head.indexOf(marker);
            if (at < 0) {
              if (head.length > 64 * 1024) head = head.subarray(head.length - marker.length);
              return;
            }
            chunk = head.subarray(at + marker.length);
            head = undefined;
          }
          if (chunk.length && !options.stdout.write(chunk)) {
            stream.pause();
            options.stdout.once('drain', () => stream.resume());
          }
        });
        const fail = (e: Error) => {
          failure ??= e;
          stream.close();
        };
        options.stdin?.on('error', fail);
        options.stdout?.on('error', fail);
        stream.on('close', (code: number | null | undefined) => {
          const flushed = options.stdout ? new Promise<void>((done) => options.stdout!.end(() => done())) : Promise.resolve();
          void flushed.then(() => {
            if (failure)
              return reject(
                new CudamatrixError('TRANSPORT_FAILED', `copying failed on ${this.description}: ${failure.message}`, { cause: failure }),
              );
            if (code === undefined || code === null)
              return reject(transportFailed(this.lost() ?? new Error('the copy ended without an exit status')));
            if (options.stdout && head) return resolve({ code: code === 0 ? 1 : code, stderr: `${stderr} (no data came)` });
            resolve({ code, stderr: stderr + errStrip.end() });
          });
        });
        if (options.stdin) options.stdin.pipe(stream);
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
    const nonce = newNonce();
    const marker = Buffer.from(`cm-begin-${nonce}\n`);
    return new Promise((resolve, reject) => {
      this.client.exec(posixCommandLine(argv, {}, nonce, this.workDir), (err, channel) => {
        if (err) return reject(transportFailed(err));
        const out = new PassThrough();
        const errStrip = new MarkerStrip(`cm-begin-${nonce}`);
        const decoder = new StringDecoder('utf8');
        let stderr = '';
        channel.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + errStrip.feed(decoder.write(chunk))).slice(-4000)));
        let head: Buffer | undefined = Buffer.alloc(0);
        let received = 0;
        channel.on('data', (chunk: Buffer) => {
          if (head) {
            head = Buffer.concat([head, chunk]);
            const at = head.indexOf(marker);
            if (at < 0) return;
            chunk = head.subarray(at + marker.length);
            head = undefined;
          }
          received += chunk.length;
          if (chunk.length) out.write(chunk);
        });
        const stream = socketLike(Duplex.from({ readable: out, writable: forwardTo(channel) }));
        // A command that failed before it said anything (no engine there): the stream fails with
        // its stderr. One that spoke and then exited non-zero (dial-stdio, as its peer hung up)
        // ends as the stream does, with every byte it sent still read.
        channel.on('exit', (code: number | null, signal?: string) => {
          if (code !== 0 && received === 0 && !stream.destroyed)
            stream.destroy(streamEnded(argv, code, signal ?? null, stderr + errStrip.end()));
        });
        channel.on('close', () => out.end());
        stream.once('close', () => channel.close());
        resolve(stream);
      });
    });
  }

  /** The probe cache's steps: the agent answers the look-up; the rest are commands through it (no channel, no login script of their own). */
  cache(): Pick<CacheHost, 'lookUp' | 'makeDir' | 'moveAndHash'> {
    return {
      lookUp: async (key, name) => {
        const match = /^cm-cache (\S+) (\/.*)$/.exec(await this.ask(`check ${key} ${name}`));
        return { dir: match?.[2], sha: match?.[1] };
      },
      makeDir: async (dir) => {
        const made = await this.exec(['mkdir', '-p', dir], {});
        if (made.exitCode !== 0)
          throw new CudamatrixError(
            'TRANSPORT_FAILED',
            `could not make the probe cache ${dir} on ${this.description}: ${oneLine(made.stderr, LAST_WORDS)}`,
          );
      },
      moveAndHash: async (from, to) => {
        const mv = await this.exec(['sh', '-c', 'mv -f -- "$1" "$2" && sha256sum -- "$2"', 'sh', from, to], {});
        return { sha: mv.exitCode === 0 ? (mv.stdout.trim().split(/\s+/)[0] ?? '') : '', said: oneLine(mv.stderr, LAST_WORDS) };
      },
    };
  }
}
