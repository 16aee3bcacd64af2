/**
 * The `docker` transport: the probes run in a container on a local or remote Docker engine,
 * with the GPUs requested as `docker run --gpus` does (DeviceRequests, driver nvidia). The
 * container is labelled with the run, has no network by default, runs docker-init as PID 1 and
 * `cudaprobe wait --stdin` as its main process, and is removed when the session ends, however it
 * ends: by the session, or by the engine itself once the session's connection is gone (the
 * lifeline, below: cudamatrix killed, a hop to the engine lost).
 * Every call to the engine is bounded (./calls.ts): connectTimeout for the first answers,
 * callTimeout for each later call; a probe's own timeout bounds its exec.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { IncomingMessage } from 'node:http';
import { PassThrough, Readable, Writable, type Duplex } from 'node:stream';
import { finished } from 'node:stream/promises';
import type Dockerode from 'dockerode';
import DockerClient from 'dockerode';
import { CudamatrixError, describeError } from '../../core/errors.ts';
import { packageRoot } from '../../core/package-root.ts';
import { supervise, type StopReason } from '../supervise.ts';
import type { Connect, ConnectContext, ExecOptions, ExecResult, Session } from '../transport.ts';
import { BoundedEngine, DEFAULT_CALL_TIMEOUT_S, DEFAULT_CONNECT_TIMEOUT_S, engineWords, httpStatus, isEngineTimeout, removeContainer, type EngineTimeout } from './calls.ts';
import { engineThrough } from './dial.ts';
import { resolveEngine, unreachable, type ResolvedEngine } from './engine.ts';
import { DEFAULT_BASE, type DockerTargetOptions } from './options.ts';
import { RUN_LABEL, runLabels } from './reap.ts';
import { directoryTar, extractFirstFile, fileTar } from './tar.ts';

export { RUN_LABEL } from './reap.ts';

const PROBE_DIR = '/opt/cudamatrix/bin';
const WORK_DIR = '/tmp/cudamatrix-run';

function hash(...parts: (string | Buffer)[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex');
}

function gpuRuntimeMissing(engine: ResolvedEngine, error: unknown): CudamatrixError {
  return new CudamatrixError(
    'NVIDIA_RUNTIME_MISSING',
    `the Docker engine at ${engine.endpoint} cannot give containers GPUs (${engineWords(error)}). ` +
      'Install the NVIDIA Container Toolkit on the Docker host (apt-get install nvidia-container-toolkit), configure it for Docker ' +
      '(nvidia-ctk runtime configure --runtime=docker) and restart dockerd; "docker run --rm --gpus all <image> nvidia-smi" must work. ' +
      'It provides the driver\'s libraries (libcuda, libnvidia-ml) and the /dev/nvidia* devices inside the container. ' +
      'To run without GPUs, set gpus: none.',
    { cause: error },
  );
}

const isGpuError = (error: unknown) => !isEngineTimeout(error) && /device driver|nvidia|gpu/i.test((error as Error)?.message ?? '');

/** GET /images/NAME/json with an abort signal (dockerode's Image.inspect does not pass one on). */
function inspectImage(docker: Dockerode, name: string, abortSignal: AbortSignal): Promise<unknown> {
  return new Promise((resolve, reject) => {
    docker.modem.dial({ path: `/images/${name}/json`, method: 'GET', options: {}, abortSignal, statusCodes: { 200: true, 404: 'no such image', 500: 'server error' } }, (err, data) =>
      err ? reject(err) : resolve(data),
    );
  });
}

/** ping and info take an abort signal, which their type declarations leave out. */
type WithSignal = { abortSignal: AbortSignal };
const withSignal = (docker: Dockerode) => docker as unknown as { ping(o: WithSignal): Promise<unknown>; info(o: WithSignal): Promise<unknown> };

/** Whether the engine has the image (a timeout is thrown, not taken for "no"). */
async function imageExists(e: BoundedEngine, name: string): Promise<boolean> {
  try {
    await e.call(`looking up image ${name}`, (abortSignal) => inspectImage(e.docker, name, abortSignal));
    return true;
  } catch (error) {
    if (httpStatus(error) === 404) return false;
    if (error instanceof CudamatrixError) throw error;
    throw new CudamatrixError('TARGET_UNREACHABLE', `looking up image ${name} on ${e.endpoint} failed: ${engineWords(error)}`);
  }
}

async function pull(e: BoundedEngine, image: string, progress: (line: string) => void): Promise<void> {
  progress(`pulling ${image} on ${e.endpoint} ...`);
  try {
    const stream = await e.call(`pulling ${image}`, (abortSignal) => e.docker.pull(image, { abortSignal }));
    await e.follow(`pulling ${image}`, stream, (line) => progress(`  ${line}`));
  } catch (error) {
    if (error instanceof CudamatrixError) throw error;
    throw new CudamatrixError('TARGET_UNREACHABLE', `pulling ${image} on ${e.endpoint} failed: ${engineWords(error)}`);
  }
}

/** Opens a session in a new container on the target's engine (the image built or found first). */
export const connectDocker: Connect<DockerTargetOptions> = async (o, context) => {
  // After another hop, the engine is reached through it (docker system dial-stdio there); its
  // streams are closed once the container is removed, or when the session cannot be opened.
  const through = context.via ? engineThrough(context.via, context.target, o) : undefined;
  try {
    const session = await openContainer(o, context, through ?? resolveEngine(o));
    if (!through) return session;
    const dispose = session[Symbol.asyncDispose].bind(session);
    return Object.assign(session, {
      async [Symbol.asyncDispose]() {
        try {
          await dispose();
        } finally {
          through.close();
        }
      },
    });
  } catch (error) {
    through?.close();
    throw error;
  }
};

async function openContainer(o: DockerTargetOptions, context: ConnectContext, engine: ResolvedEngine): Promise<DockerSession> {
  // No socket-wide idle timeout: a probe's exec may be silent for as long as its timeout allows.
  const e = new BoundedEngine(new DockerClient(engine.options), engine, (o.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_S) * 1000, (o.callTimeout ?? DEFAULT_CALL_TIMEOUT_S) * 1000);
  const docker = e.docker;
  const progress = context.onProgress ?? (() => undefined);
  let info: { Architecture?: string; OSType?: string };
  try {
    await e.call('ping', (abortSignal) => withSignal(docker).ping({ abortSignal }), { connect: true });
    info = (await e.call('info', (abortSignal) => withSignal(docker).info({ abortSignal }), { connect: true })) as typeof info;
  } catch (error) {
    throw unreachable(engine, error);
  }
  if (info.OSType && info.OSType !== 'linux') {
    throw new CudamatrixError('TARGET_UNREACHABLE', `the Docker engine at ${engine.endpoint} runs ${info.OSType} containers; cudaprobe's containers are Linux`);
  }
  const arch = info.Architecture === 'aarch64' || info.Architecture === 'arm64' ? 'aarch64' : 'x86_64';
  if (!context.binaryFor) throw new CudamatrixError('TRANSPORT_FAILED', 'the docker transport needs the probe binary before it starts a container');
  const binary = await context.binaryFor('linux', arch);
  const binaryKey = `linux-${arch}-${binary.hash}`;

  // The image: the one named, or docker/Dockerfile built once per probe hash and base.
  // Nothing is pulled unless pull: true, the base of docker/Dockerfile included.
  let image: string;
  let baked = false;
  if (o.image) {
    image = o.image;
    if (!(await imageExists(e, image))) {
      if (!o.pull) {
        throw new CudamatrixError('DOCKER_IMAGE_MISSING', `the Docker engine at ${engine.endpoint} has no image ${image}; pull it there first, or set pull: true`);
      }
      await pull(e, image, progress);
    }
  } else {
    const dockerfile = readFileSync(path.join(packageRoot(), 'docker', 'Dockerfile'));
    const base = o.base ?? DEFAULT_BASE;
    image = `cudamatrix-probe:${binary.hash}-${hash(dockerfile, base).slice(0, 12)}`;
    baked = true;
    if (!(await imageExists(e, image))) {
      // The build would pull a base the engine lacks: look first ("scratch" is no image).
      if (base !== 'scratch' && !(await imageExists(e, base))) {
        if (!o.pull) {
          throw new CudamatrixError(
            'DOCKER_IMAGE_MISSING',
            `the Docker engine at ${engine.endpoint} has no image ${base}, the base docker/Dockerfile is built FROM${o.base ? '' : ' (the default base)'}, and nothing is pulled unless pull: true. ` +
              `Pull it on that engine first (docker pull ${base}), set pull: true on this target, or name a base the engine has (base: ...; it needs glibc)`,
          );
        }
        await pull(e, base, progress);
      }
      progress(`building ${image} FROM ${base} on ${engine.endpoint} ...`);
      const tar = await fileTar([
        { name: 'Dockerfile', content: dockerfile, mode: 0o644 },
        { name: 'cudaprobe', content: readFileSync(binary.path), mode: 0o755 },
      ]);
      try {
        const stream = await e.call(`building ${image}`, (abortSignal) =>
          docker.buildImage(Readable.from([tar]), { t: image, buildargs: { BASE: base }, labels: { 'cudamatrix.probe-hash': binary.hash }, abortSignal }),
        );
        await e.follow(`building ${image}`, stream, (line) => progress(`  ${line}`));
      } catch (error) {
        if (isEngineTimeout(error)) throw error;
        throw new CudamatrixError('PROBE_BUILD_FAILED', `building ${image} FROM ${base} failed: ${describeError(error)}`, { cause: error });
      }
    }
  }

  const gpus = o.gpus ?? 'all';
  const deviceRequests =
    gpus === 'none'
      ? undefined
      : [{ Driver: 'nvidia', Count: gpus === 'all' ? -1 : 0, DeviceIDs: gpus === 'all' ? undefined : gpus, Capabilities: [o.capabilities ?? ['compute', 'utility']] }];
  let container: Dockerode.Container;
  try {
    container = await e.call(`creating a container from ${image}`, (abortSignal) =>
      docker.createContainer({
        Image: image,
        Entrypoint: [`${PROBE_DIR}/cudaprobe`],
        Cmd: ['wait', '--stdin', '--usr1-kills-others'],
        WorkingDir: '/',
        // The lifeline: its stdin is the session's attach connection, closed by the engine
        // when that connection ends (StdinOnce); cudaprobe then exits, and the engine removes
        // the container (AutoRemove).
        OpenStdin: true,
        StdinOnce: true,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Labels: { [RUN_LABEL]: context.runId, 'cudamatrix.target': context.target, ...runLabels() },
        HostConfig: {
          NetworkMode: o.network ?? 'none',
          Init: true,
          AutoRemove: true,
          DeviceRequests: deviceRequests,
          Runtime: o.runtime,
        },
        abortSignal,
      }),
    );
  } catch (error) {
    if (error instanceof CudamatrixError) throw error;
    if (isGpuError(error)) throw gpuRuntimeMissing(engine, error);
    throw new CudamatrixError('TARGET_UNREACHABLE', `creating a container from ${image} on ${engine.endpoint} failed: ${engineWords(error)}`, { cause: error });
  }
  const remove = () => removeContainer(e, container, `removing container ${container.id.slice(0, 12)}`).catch(() => undefined);
  let name: string;
  let lifeline: Lifeline | undefined;
  try {
    // Archives are unpacked at / with full paths, so that missing directories are made too.
    if (!baked) {
      const probeTar = await fileTar([{ name: `${PROBE_DIR.slice(1)}/cudaprobe`, content: readFileSync(binary.path), mode: 0o755 }]);
      await e.call('copying cudaprobe into the container', (abortSignal) => container.putArchive(probeTar, { path: '/', abortSignal }));
    }
    const workTar = await directoryTar(WORK_DIR.slice(1));
    await e.call('making the work folder in the container', (abortSignal) => container.putArchive(workTar, { path: '/', abortSignal }));
    // Attached, and its exit waited for, before it starts: its stdin is held from its first
    // moment, and nothing it prints or how it exits can be missed (it is removed once it has).
    lifeline = await Lifeline.attach(e, container);
    const exit = await nextExit(e, container);
    try {
      await e.call('starting the container', (abortSignal) => container.start({ abortSignal }));
      // Its main process is cudaprobe itself: wait until it says it runs, or has exited (it
      // cannot run in the image).
      if (!(await untilReady(e, container, lifeline))) {
        let timer: NodeJS.Timeout | undefined;
        const code = await Promise.race([exit.code, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), 5000)))]);
        clearTimeout(timer);
        const said = lifeline.said();
        throw new CudamatrixError(
          'TARGET_UNREACHABLE',
          `cudaprobe cannot run in image ${image}: its container exited at once${code === undefined ? '' : ` with code ${code}`}${said ? ` (${said})` : ''}; the image needs glibc (use a glibc-based image, or leave image: out to build docker/Dockerfile)`,
        );
      }
    } finally {
      exit.cancel();
    }
    const inspected = (await e.call('inspecting the container', (abortSignal) => container.inspect({ abortSignal }))) as ContainerState;
    name = inspected.Name.replace(/^\//, '');
  } catch (error) {
    await remove();
    lifeline?.close();
    if (error instanceof CudamatrixError) throw error;
    if (isGpuError(error)) throw gpuRuntimeMissing(engine, error);
    throw new CudamatrixError('TARGET_UNREACHABLE', `starting a container from ${image} on ${engine.endpoint} failed: ${engineWords(error)}`, { cause: error });
  }
  return new DockerSession(e, container, lifeline, name, `docker ${name} (${image}) on ${engine.endpoint}`, `docker:${engine.endpoint}`, arch, binaryKey, !baked, progress);
}

/** How many times (100 ms apart) a container is looked at after a command was killed, before "running" is believed. */
const SETTLE_LOOKS = 20;

interface ContainerState {
  Name: string;
  State: { Running: boolean; Status: string; ExitCode: number; OOMKilled?: boolean };
}

/** How long the main process may take to say that it runs before a running container is believed ready. */
const READY_MS = 30_000;

/**
 * The lifeline of a probe container: an attach to its main process (`cudaprobe wait --stdin`),
 * made before it starts and held open, with nothing written to it, for the session's life. The
 * container has StdinOnce: when this connection ends, whether the session closes it or it is
 * lost (cudamatrix killed, the engine's socket or a hop to it gone: ssh, dial-stdio), the engine
 * closes that stdin, cudaprobe exits, and the engine removes the container (AutoRemove). It also
 * carries what the main process prints: that it runs, or why it could not.
 */
class Lifeline {
  private text = '';
  private readonly waiting: Promise<void>;
  readonly ended: Promise<void>;

  private constructor(
    private readonly stream: Duplex,
    e: BoundedEngine,
  ) {
    let sawWaiting!: () => void;
    this.waiting = new Promise((resolve) => (sawWaiting = resolve));
    const take = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        if (this.text.length < 4096) this.text += chunk.toString('utf8');
        if (this.text.includes('cudaprobe: waiting')) sawWaiting();
        done();
      },
    });
    e.docker.modem.demuxStream(stream, take, take);
    this.ended = new Promise((resolve) => {
      stream.once('end', () => resolve());
      stream.once('close', () => resolve());
      stream.on('error', () => resolve());
    });
  }

  static async attach(e: BoundedEngine, container: Dockerode.Container): Promise<Lifeline> {
    const stream = (await e.call('attaching to the container', (abortSignal) =>
      container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true, abortSignal }),
    )) as unknown as Duplex;
    return new Lifeline(stream, e);
  }

  /** Resolves with true once the main process has said that it runs, false once it has ended first. */
  get ready(): Promise<boolean> {
    return Promise.race([this.waiting.then(() => true), this.ended.then(() => false)]);
  }

  /** What the main process printed, as a line (the last lines, printable characters only). */
  said(): string {
    return this.text
      .replace(/[^\x20-\x7e\n]/g, '')
      .trim()
      .split('\n')
      .filter(Boolean)
      .slice(-5)
      .join(' | ');
  }

  close(): void {
    this.stream.destroy();
  }
}

/**
 * Waits for the container's next exit (registered with the engine before it is started, which
 * answers its headers once the wait is in place); `code` is its exit code, undefined when that
 * could not be had. `cancel` ends the wait.
 */
async function nextExit(e: BoundedEngine, container: Dockerode.Container): Promise<{ code: Promise<number | undefined>; cancel(): void }> {
  const response = await e.call('waiting for the container to exit', (abortSignal) =>
    new Promise<IncomingMessage>((resolve, reject) => {
      e.docker.modem.dial(
        {
          path: `/containers/${container.id}/wait?`,
          method: 'POST',
          isStream: true,
          abortSignal,
          statusCodes: { 200: true, 400: 'bad parameter', 404: 'no such container', 500: 'server error' },
          options: { condition: 'next-exit' },
        },
        (err, stream) => (err ? reject(err) : resolve(stream as IncomingMessage)),
      );
    }),
  );
  const code = new Promise<number | undefined>((resolve) => {
    let body = '';
    response.setEncoding('utf8');
    response.on('data', (d: string) => (body += d));
    response.once('end', () => {
      const status = (() => {
        try {
          return (JSON.parse(body) as { StatusCode?: unknown }).StatusCode;
        } catch {
          return undefined;
        }
      })();
      resolve(typeof status === 'number' ? status : undefined);
    });
    response.once('close', () => resolve(undefined));
    response.on('error', () => resolve(undefined));
  });
  return { code, cancel: () => response.destroy() };
}

/**
 * Waits (up to READY_MS) for the main process to say "cudaprobe: waiting" on the lifeline.
 * True: it runs (or, silent that long, the container still runs); false: it exited first.
 */
async function untilReady(e: BoundedEngine, container: Dockerode.Container, lifeline: Lifeline): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const slow = new Promise<'slow'>((resolve) => (timer = setTimeout(() => resolve('slow'), READY_MS)));
  try {
    const ready = await Promise.race([lifeline.ready, slow]);
    if (ready !== 'slow') return ready;
  } finally {
    clearTimeout(timer);
  }
  try {
    const inspected = (await e.call('inspecting the container', (abortSignal) => container.inspect({ abortSignal }))) as ContainerState;
    return inspected.State.Running;
  } catch (error) {
    if (httpStatus(error) === 404) return false; // exited, and removed
    throw error;
  }
}

/** What a stop is for, in the words of a timeout message. */
const stopWords: Record<StopReason, string> = {
  timeout: 'killing the container to stop a command past its timeout',
  cancel: 'killing the container to stop a command on cancellation',
  flood: 'killing the container to stop a command that printed too much',
};

class DockerSession implements Session {
  readonly platform = 'linux' as const;
  readonly shell = 'posix' as const;
  readonly workDir = WORK_DIR;
  /** Set once the container cannot be used any more: every later command fails with it. */
  private broken: CudamatrixError | undefined;

  constructor(
    private readonly e: BoundedEngine,
    private readonly container: Dockerode.Container,
    /** Held open until the session ends: the container ends and goes with it. */
    private readonly lifeline: Lifeline,
    private readonly name: string,
    readonly description: string,
    readonly hostKey: string,
    readonly arch: string,
    /** The cache key of the probe at PROBE_DIR (built into the image, or copied in at creation). */
    private readonly probeKey: string,
    /** Whether it was copied in (a named image) rather than built into the image. */
    private readonly copiedIn: boolean,
    private readonly warn: (message: string) => void,
  ) {}

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
    let s: ContainerState['State'];
    // A killed container's processes die before the engine has noted that it stopped: look
    // again for a moment before taking "running" for an answer.
    for (let look = 0; ; look++) {
      try {
        s = ((await this.e.call('inspecting the container', (abortSignal) => this.container.inspect({ abortSignal }))) as ContainerState).State;
      } catch (error) {
        if (isEngineTimeout(error)) return error;
        if (httpStatus(error) === 404) return new CudamatrixError('TRANSPORT_FAILED', `${this.where} was removed while ${command} ran in it (${engineWords(error)})`);
        return new CudamatrixError('TRANSPORT_FAILED', `${this.where} could not be inspected after ${command} ended: ${engineWords(error)}`);
      }
      if (!s.Running || look >= SETTLE_LOOKS) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    if (s.Running) return undefined;
    return new CudamatrixError(
      'TRANSPORT_FAILED',
      `${this.where} stopped while ${command} ran in it (${s.Status}, exit code ${s.ExitCode}${s.OOMKilled ? ', killed for lack of memory' : ''}): it was killed or stopped from outside (docker kill, docker stop, docker rm -f, dockerd restarting)`,
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
          Env: Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`),
          AttachStdout: true,
          AttachStderr: true,
          AttachStdin: options.stdin !== undefined,
          abortSignal,
        }),
      );
      const stream = (await this.call(`starting ${command}`, (abortSignal) => exec.start({ hijack: true, stdin: options.stdin !== undefined, abortSignal }))) as NodeJS.ReadWriteStream;
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
        killing ??= this.e.call(stopWords[why], (abortSignal) => this.container.kill({ signal: 'SIGUSR1', abortSignal })).then(
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
          const notStarted = (why: string) => new CudamatrixError('TRANSPORT_FAILED', `the Docker engine could not run ${command} in ${this.where}: ${clean(head) || why}`);
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
    const tar = await fileTar([{ name: path.posix.resolve(this.workDir, remotePath).slice(1), content: readFileSync(localPath), mode: options.executable ? 0o755 : 0o644 }]);
    await this.call(`copying ${path.posix.basename(remotePath)} in`, (abortSignal) => this.container.putArchive(tar, { path: '/', abortSignal }));
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

/** The engine's text as one line: carriage returns and blank lines out. */
function clean(text: string): string {
  return text.replace(/\r/g, '').trim().split('\n').filter(Boolean).slice(0, 5).join(' | ');
}
