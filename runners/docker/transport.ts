/**
 * The `docker` transport: the probes run in a container on a local or remote Docker engine,
 * with the GPUs requested as `docker run --gpus` does (DeviceRequests, driver nvidia). The
 * container is labelled with the run, has no network by default, runs docker-init as PID 1 and
 * `cudaprobe wait` as its main process, and is removed when the session ends, however it ends.
 * Every call to the engine is bounded (./calls.ts): connectTimeout for the first answers,
 * callTimeout for each later call; a probe's own timeout bounds its exec.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type Dockerode from 'dockerode';
import DockerClient from 'dockerode';
import { CudamatrixError, describeError } from '../../core/errors.ts';
import { packageRoot } from '../../core/package-root.ts';
import { supervise, type StopReason } from '../supervise.ts';
import type { Connect, ConnectContext, ExecOptions, ExecResult, Session } from '../transport.ts';
import { BoundedEngine, DEFAULT_CALL_TIMEOUT_S, DEFAULT_CONNECT_TIMEOUT_S, engineWords, httpStatus, isEngineTimeout } from './calls.ts';
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
        throw new CudamatrixError('TARGET_UNREACHABLE', `the Docker engine at ${engine.endpoint} has no image ${image}; pull it there first, or set pull: true`);
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
            'TARGET_UNREACHABLE',
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
        Cmd: ['wait'],
        WorkingDir: '/',
        Labels: { [RUN_LABEL]: context.runId, 'cudamatrix.target': context.target, ...runLabels() },
        HostConfig: {
          NetworkMode: o.network ?? 'none',
          Init: true,
          AutoRemove: false,
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
  const remove = () => e.call(`removing container ${container.id.slice(0, 12)}`, (abortSignal) => container.remove({ force: true, v: true, abortSignal })).catch(() => undefined);
  let name: string;
  try {
    // Archives are unpacked at / with full paths, so that missing directories are made too.
    if (!baked) {
      const probeTar = await fileTar([{ name: `${PROBE_DIR.slice(1)}/cudaprobe`, content: readFileSync(binary.path), mode: 0o755 }]);
      await e.call('copying cudaprobe into the container', (abortSignal) => container.putArchive(probeTar, { path: '/', abortSignal }));
    }
    const workTar = await directoryTar(WORK_DIR.slice(1));
    await e.call('making the work folder in the container', (abortSignal) => container.putArchive(workTar, { path: '/', abortSignal }));
    await e.call('starting the container', (abortSignal) => container.start({ abortSignal }));
    // Its main process is cudaprobe itself: wait until it says it runs, or has exited (it
    // cannot run in the image).
    const state = await waitUntilReady(e, container);
    if (!state.Running) {
      const logs = String(await e.call('reading the container log', (abortSignal) => container.logs({ stdout: true, stderr: true, tail: 5, abortSignal })).catch(() => ''))
        .replace(/[^\x20-\x7e\n]/g, '')
        .trim();
      throw new CudamatrixError(
        'TARGET_UNREACHABLE',
        `cudaprobe cannot run in image ${image}: its container exited at once with code ${state.ExitCode}${logs ? ` (${logs})` : ''}; the image needs glibc (use a glibc-based image, or leave image: out to build docker/Dockerfile)`,
      );
    }
    name = state.Name.replace(/^\//, '');
  } catch (error) {
    await remove();
    if (error instanceof CudamatrixError) throw error;
    if (isGpuError(error)) throw gpuRuntimeMissing(engine, error);
    throw new CudamatrixError('TARGET_UNREACHABLE', `starting a container from ${image} on ${engine.endpoint} failed: ${engineWords(error)}`, { cause: error });
  }
  return new DockerSession(e, container, name, `docker ${name} (${image}) on ${engine.endpoint}`, `docker:${engine.endpoint}`, arch, binaryKey, !baked, progress);
}

/** How many times (100 ms apart) a container is looked at after a command was killed, before "running" is believed. */
const SETTLE_LOOKS = 20;

interface ContainerState {
  Name: string;
  State: { Running: boolean; Status: string; ExitCode: number; OOMKilled?: boolean };
}

/** Waits (up to 30 s) for "cudaprobe: waiting" in the container's log, or for it to stop. */
async function waitUntilReady(e: BoundedEngine, container: Dockerode.Container): Promise<{ Running: boolean; ExitCode: number; Name: string }> {
  const until = Date.now() + 30_000;
  for (;;) {
    const inspected = (await e.call('inspecting the container', (abortSignal) => container.inspect({ abortSignal }))) as ContainerState;
    const state = { ...inspected.State, Name: inspected.Name };
    if (!state.Running || Date.now() > until) return state;
    const logs = String(await e.call('reading the container log', (abortSignal) => container.logs({ stdout: true, stderr: true, abortSignal })));
    if (logs.includes('cudaprobe: waiting')) return state;
    await new Promise((r) => setTimeout(r, 100));
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
      // killing the container (all its processes), which is then started again for the next one.
      let killing: Promise<void> | undefined;
      let stopAsked!: () => void;
      const stopped = new Promise<void>((resolve) => (stopAsked = resolve));
      const stop = (why: StopReason) => {
        killing ??= this.e.call(stopWords[why], (abortSignal) => this.container.kill({ abortSignal })).then(
          () => undefined,
          (error) => {
            // Already stopped is stopped; an engine that does not answer is a failure.
            if (isEngineTimeout(error)) throw error;
          },
        );
        stopAsked();
      };
      const done = (async () => {
        await Promise.race([ended, stopped]);
        if (killing) {
          try {
            await killing;
            await this.e.within(`ending ${command}'s output after its container was killed`, ended);
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
        // Back to a running container for the next command, unless the run is being cancelled.
        if (!options.signal?.aborted) {
          try {
            await this.e.call('starting the container again after a command was stopped', (abortSignal) => this.container.start({ abortSignal }));
          } catch (error) {
            this.fail(error instanceof CudamatrixError ? error : new CudamatrixError('TRANSPORT_FAILED', `${this.where} could not be started again after a command was stopped: ${engineWords(error)}`));
          }
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
    // Force: stops it first; v: its anonymous volumes go with it.
    try {
      await this.e.call('removing the container', (abortSignal) => this.container.remove({ force: true, v: true, abortSignal }));
    } catch (error) {
      if (httpStatus(error) === 404) return;
      this.warn(
        `warning: ${this.where} was not removed (${error instanceof CudamatrixError ? error.message : engineWords(error)}); ` +
          `"cudamatrix doctor --reap" removes it once the engine answers`,
      );
    }
  }
}

/** The engine's text as one line: carriage returns and blank lines out. */
function clean(text: string): string {
  return text.replace(/\r/g, '').trim().split('\n').filter(Boolean).slice(0, 5).join(' | ');
}
