/**
 * A session in a probe container (container.ts made and started it): commands run as execs,
 * files go in and out as tar archives, and the container is removed at dispose.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type Dockerode from 'dockerode';
import { CudamatrixError } from '../../core/errors.ts';
import { oneLine } from '../../core/text.ts';
import { supervise, type StopReason } from '../supervise.ts';
import type { ExecOptions, ExecResult, Session } from '../transport.ts';
import { type BoundedEngine, engineWords, httpStatus, isEngineTimeout, removeContainer, type EngineTimeout } from './bounded-calls.ts';
import { type ContainerState, type Lifeline, PROBE_DIR, SETTLE_LOOKS, WORK_DIR } from './container.ts';
import { extractFirstFile, fileTar } from './tar.ts';

export interface DockerSessionOptions {
  engine: BoundedEngine;
  container: Dockerode.Container;
  /** Held open until the session ends: the container ends and goes with it. */
  lifeline: Lifeline;
  name: string;
  description: string;
  hostKey: string;
  arch: string;
  /** The cache key of the probe at PROBE_DIR (built into the image, or copied in at creation). */
  probeKey: string;
  /** Whether it was copied in (a named image) rather than built into the image. */
  copiedIn: boolean;
  warn: (message: string) => void;
}

/** What a stop is for, in the words of a timeout message. */
const stopWords: Record<StopReason, string> = {
  timeout: 'killing the container to stop a command past its timeout',
  cancel: 'killing the container to stop a command on cancellation',
  flood: 'killing the container to stop a command that printed too much',
};
export class DockerSession implements Session {
  readonly platform = 'linux' as const;
  readonly shell = 'posix' as const;
  readonly workDir = WORK_DIR;
  /** Set once the container cannot be used any more: every later command fails with it. */
  private broken: CudamatrixError | undefined;

  private readonly e: BoundedEngine;
  private readonly container: Dockerode.Container;
  private readonly lifeline: Lifeline;
  private readonly name: string;
  readonly description: string;
  readonly hostKey: string;
  readonly arch: string;
  private readonly probeKey: string;
  private readonly copiedIn: boolean;
  private readonly warn: (message: string) => void;

  constructor(options: DockerSessionOptions) {
    this.e = options.engine;
    this.container = options.container;
    this.lifeline = options.lifeline;
    this.name = options.name;
    this.description = options.description;
    this.hostKey = options.hostKey;
    this.arch = options.arch;
    this.probeKey = options.probeKey;
    this.copiedIn = options.copiedIn;
    this.warn = options.warn;
  }

  private get where(): string {
    return `container ${this.name} on ${this.e.endpoint}`;
  }

  /** A call to the engine for this container; its failures are transport failures in the engine's words. */
  private async call<T>(what: string, fn: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    try {
      return await this.e.call(what, fn);
    } catch (error) {
      if (error instanceof CudamatrixError) throw error;
      throw new CudamatrixError('TRANSPORT_FAILED', `${what} in ${this.where} failed: ${engineWords(error)}`);
    }
  }

  /**
   * After a command that ended strangely (no exit code, or one of 126 and above, as a killed
   * container gives every process in it): a container that is no longer running is a
   * transport failure, not the command's result.
   */
  private async containerGone(command: string): Promise<CudamatrixError | undefined> {
    let state: ContainerState['State'];
    // A killed container's processes die before the engine has noted that it stopped: look
    // again for a moment before taking "running" for an answer.
    for (let look = 0; ; look++) {
      try {
        state = (
          (await this.e.call('inspecting the container', (abortSignal) => this.container.inspect({ abortSignal }))) as ContainerState
        ).State;
      } catch (error) {
        if (isEngineTimeout(error)) return error;
        if (httpStatus(error) === 404)
          return new CudamatrixError('TRANSPORT_FAILED', `${this.where} was removed while ${command} ran in it (${engineWords(error)})`);
        return new CudamatrixError(
          'TRANSPORT_FAILED',
          `${this.where} could not be inspected after ${command} ended: ${engineWords(error)}`,
        );
      }
      if (!state.Running || look >= SETTLE_LOOKS) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (state.Running) return undefined;
    return new CudamatrixError(
      'TRANSPORT_FAILED',
      `${this.where} stopped while ${command} ran in it (${state.Status}, exit code ${state.ExitCode}${state.OOMKilled ? ', killed for lack of memory' : ''}): it was killed or stopped from outside (docker kill, docker stop, docker rm -f, dockerd restarting)`,
    );
  }

  exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    const command = path.posix.basename(argv[0] ?? 'the command');
    return supervise(argv, options, async (io) => {
      if (this.broken) throw this.broken;
      const exec = await this.call(`creating an exec of ${command}`, (abortSignal) =>
        this.container.exec({
          Cmd: argv,
          WorkingDir: options.cwd ?? this.workDir,
          Env: Object.entries(options.env ?? {}).map(([k, value]) => `${k}=${value}`),
          AttachStdout: true,
          AttachStderr: true,
          AttachStdin: options.stdin !== undefined,
          abortSignal,
        }),
      );
      const stream = (await this.call(`starting ${command}`, (abortSignal) =>
        exec.start({ hijack: true, stdin: options.stdin !== undefined, abortSignal }),
      )) as NodeJS.ReadWriteStream;
      // The start of what it printed: when the engine could not start the command, its words are there.
      let head = '';
      const out = new PassThrough();
      const err = new PassThrough();
      out.setEncoding('utf8').on('data', (text: string) => {
        if (head.length < 4096) head += text;
        io.stdout(text);
      });
      err.setEncoding('utf8').on('data', (text: string) => {
        if (head.length < 4096) head += text;
        io.stderr(text);
      });
      this.e.docker.modem.demuxStream(stream, out, err);
      if (options.stdin !== undefined) stream.end(options.stdin);
      const ended = new Promise<void>((resolve) => {
        stream.on('end', resolve);
        stream.on('close', resolve);
        stream.on('error', () => resolve());
      });
      // A docker exec cannot be signalled through the API: a runaway command is stopped by
      // SIGUSR1 to the container (docker-init passes it to cudaprobe wait), which kills every
      // process in it but docker-init and itself; the container runs on for the next command.
      // (Killing the container itself would end it for good: it is removed once it stops.)
      let killing: Promise<void> | undefined;
      let notKilled: unknown;
      let stopAsked!: () => void;
      const stopped = new Promise<void>((resolve) => (stopAsked = resolve));
      const stop = (why: StopReason) => {
        killing ??= this.e
          .call(stopWords[why], (abortSignal) => this.container.kill({ signal: 'SIGUSR1', abortSignal }))
          .then(
            () => undefined,
            (error) => {
              // Not running any more (its processes are gone with it): said below. An engine
              // that does not answer is a failure.
              if (isEngineTimeout(error)) throw error;
              notKilled = error;
            },
          );
        stopAsked();
      };
      // A frozen engine (no answer to the watchdog's pings) ends the wait for the command's
      // output: nothing more can come, and nothing can stop it.
      let frozen: EngineTimeout | undefined;
      const unwatch = this.e.watch(`running ${command}`, (error) => {
        frozen = error;
        stopAsked();
      });
      const done = (async () => {
        await Promise.race([ended, stopped]);
        unwatch();
        if (frozen) {
          (stream as unknown as Readable).destroy();
          throw this.fail(frozen);
        }
        if (killing) {
          try {
            await killing;
            await this.e.within(`ending ${command}'s output after it was killed`, ended);
          } catch (error) {
            // Given up on the engine: its socket must not keep this process alive.
            (stream as unknown as Readable).destroy();
            throw this.fail(error as CudamatrixError);
          }
        }
        // What the demultiplexer has written is all pushed on before the end is reported.
        out.end();
        err.end();
        await Promise.all([finished(out), finished(err)]);
        if (!killing) {
          let ran: { ExitCode: number | null; Pid?: number } | undefined;
          let lost: unknown;
          try {
            ran = (await this.e.call(`reading how ${command} ended`, (abortSignal) => exec.inspect({ abortSignal }))) as typeof ran;
          } catch (error) {
            if (isEngineTimeout(error)) throw this.fail(error);
            lost = error; // the exec is gone: with its container, or it never started
          }
          // Pid 0: no process was ever started ("OCI runtime exec failed: ...", "cannot exec in a
          // stopped state"); what the engine said is in the output.
          const notStarted = (why: string) =>
            new CudamatrixError(
              'TRANSPORT_FAILED',
              `the Docker engine could not run ${command} in ${this.where}: ${oneLine(head, { lines: 5, max: Infinity }) || why}`,
            );
          if (ran?.Pid === 0) throw this.fail(notStarted(`exit code ${ran.ExitCode}, nothing said`));
          if (!ran || ran.ExitCode === null || ran.ExitCode >= 126) {
            const gone = await this.containerGone(command);
            if (gone) throw this.fail(gone);
          }
          if (!ran) throw this.fail(notStarted(engineWords(lost)));
          return { exitCode: ran.ExitCode, signal: null };
        }
        // The signal could not be sent: the container stopped (and went) meanwhile.
        if (notKilled !== undefined) {
          const gone = await this.containerGone(command);
          if (gone) throw this.fail(gone);
        }
        return { exitCode: null, signal: 'SIGKILL' };
      })();
      return { done, stop };
    });
  }

  /** Marks the session unusable with `error` (later commands fail with it), and returns it. */
  private fail(error: CudamatrixError): CudamatrixError {
    this.broken ??= error;
    return error;
  }

  async put(localPath: string, remotePath: string, options: { executable?: boolean } = {}): Promise<void> {
    if (this.broken) throw this.broken;
    // Unpacked at / with the full path: the directories it needs are made on the way.
    const tar = await fileTar([
      {
        name: path.posix.resolve(this.workDir, remotePath).slice(1),
        content: readFileSync(localPath),
        mode: options.executable ? 0o755 : 0o644,
      },
    ]);
    await this.call(`copying ${path.posix.basename(remotePath)} in`, (abortSignal) =>
      this.container.putArchive(tar, { path: '/', abortSignal }),
    );
  }

  async get(remotePath: string, localPath: string): Promise<void> {
    if (this.broken) throw this.broken;
    await this.call(`copying ${remotePath} out`, async (abortSignal) => {
      const stream = (await this.container.getArchive({ path: remotePath, abortSignal })) as unknown as Readable;
      abortSignal.addEventListener('abort', () => stream.destroy(), { once: true });
      await extractFirstFile(stream, localPath);
    });
  }

  joinPath(...parts: string[]): string {
    return path.posix.join(...parts);
  }

  /** The probe already at PROBE_DIR is used as it is; anything else is copied in. */
  async installCached(localPath: string, key: string, name: string): Promise<{ path: string; uploaded: boolean }> {
    if (key === this.probeKey) return { path: `${PROBE_DIR}/${name}`, uploaded: this.copiedIn };
    const target = `/opt/cudamatrix/${key}/${name}`;
    await this.put(localPath, target, { executable: true });
    return { path: target, uploaded: true };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    // Removed while the lifeline holds it (so that it is gone, not going, when this returns);
    // force: stopped first; v: its anonymous volumes go with it. Gone already, or being removed
    // by the engine (its main process ended), is removed.
    try {
      await removeContainer(this.e, this.container, 'removing the container');
    } catch (error) {
      this.warn(
        `warning: ${this.where} was not removed (${error instanceof CudamatrixError ? error.message : engineWords(error)}); ` +
          `the engine removes it itself once it notices that this connection is gone (its main process ends with it); if it does not, ` +
          `"cudamatrix doctor --reap" removes it once the engine answers`,
      );
    } finally {
      this.lifeline.close();
    }
  }
}
