/**
 * A probe container: created with its GPUs, labels and lifeline settings, the probe and the work
 * folder copied in, attached (the lifeline) and started, and believed ready once its main
 * process, `cudaprobe wait --stdin`, says that it runs.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { Writable, type Duplex } from 'node:stream';
import type Dockerode from 'dockerode';
import { CudamatrixError } from '../../core/errors.ts';
import { oneLine } from '../../core/text.ts';
import type { ConnectContext } from '../transport.ts';
import { type BoundedEngine, engineWords, httpStatus, isEngineTimeout, removeContainer } from './bounded-calls.ts';
import type { ResolvedEngine } from './engine.ts';
import type { DockerTargetOptions } from './options.ts';
import { RUN_LABEL, runLabels } from './reap.ts';
import { directoryTar, fileTar } from './tar.ts';

export const PROBE_DIR = '/opt/cudamatrix/bin';
export const WORK_DIR = '/tmp/cudamatrix-run';

export function gpuRuntimeMissing(engine: ResolvedEngine, error: unknown): CudamatrixError {
  return new CudamatrixError(
    'NVIDIA_RUNTIME_MISSING',
    `the Docker engine at ${engine.endpoint} cannot give containers GPUs (${engineWords(error)}). ` +
      'Install the NVIDIA Container Toolkit on the Docker host (apt-get install nvidia-container-toolkit), configure it for Docker ' +
      '(nvidia-ctk runtime configure --runtime=docker) and restart dockerd; "docker run --rm --gpus all <image> nvidia-smi" must work. ' +
      "It provides the driver's libraries (libcuda, libnvidia-ml) and the /dev/nvidia* devices inside the container. " +
      'To run without GPUs, set gpus: none.',
    { cause: error },
  );
}

const isGpuError = (error: unknown) => !isEngineTimeout(error) && /device driver|nvidia|gpu/i.test((error as Error)?.message ?? '');
/** How many times (100 ms apart) a container is looked at after a command was killed, before "running" is believed. */
export const SETTLE_LOOKS = 20;

export interface ContainerState {
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
export class Lifeline {
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
    return oneLine(this.text.replace(/[^\x20-\x7e\n]/g, ''), { keep: 'end', lines: 5, max: Infinity });
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
  const response = await e.call(
    'waiting for the container to exit',
    (abortSignal) =>
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
    response.on('data', (chunk: string) => (body += chunk));
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

/** Creates the probe container from `image` (not started): GPUs as `docker run --gpus` asks for them. */
export async function createProbeContainer(
  e: BoundedEngine,
  options: DockerTargetOptions,
  context: Pick<ConnectContext, 'runId' | 'target'>,
  engine: ResolvedEngine,
  image: string,
): Promise<Dockerode.Container> {
  const gpus = options.gpus ?? 'all';
  const deviceRequests =
    gpus === 'none'
      ? undefined
      : [
          {
            Driver: 'nvidia',
            Count: gpus === 'all' ? -1 : 0,
            DeviceIDs: gpus === 'all' ? undefined : gpus,
            Capabilities: [options.capabilities ?? ['compute', 'utility']],
          },
        ];
  let container: Dockerode.Container;
  try {
    container = await e.call(`creating a container from ${image}`, (abortSignal) =>
      e.docker.createContainer({
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
          NetworkMode: options.network ?? 'none',
          Init: true,
          AutoRemove: true,
          DeviceRequests: deviceRequests,
          Runtime: options.runtime,
        },
        abortSignal,
      }),
    );
  } catch (error) {
    if (error instanceof CudamatrixError) throw error;
    if (isGpuError(error)) throw gpuRuntimeMissing(engine, error);
    throw new CudamatrixError(
      'TARGET_UNREACHABLE',
      `creating a container from ${image} on ${engine.endpoint} failed: ${engineWords(error)}`,
      { cause: error },
    );
  }
  return container;
}

/**
 * Copies the probe (unless `baked` into the image) and the work folder in, attaches the lifeline
 * and starts the container; removes it when any of that fails.
 */
export async function startProbeContainer(
  e: BoundedEngine,
  container: Dockerode.Container,
  setup: { engine: ResolvedEngine; image: string; baked: boolean; binaryPath: string },
): Promise<{ name: string; lifeline: Lifeline }> {
  const { engine, image, baked } = setup;
  const remove = () => removeContainer(e, container, `removing container ${container.id.slice(0, 12)}`).catch(() => undefined);
  let name: string;
  let lifeline: Lifeline | undefined;
  try {
    // Archives are unpacked at / with full paths, so that missing directories are made too.
    if (!baked) {
      const probeTar = await fileTar([{ name: `${PROBE_DIR.slice(1)}/cudaprobe`, content: readFileSync(setup.binaryPath), mode: 0o755 }]);
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
        const code = await Promise.race([
          exit.code,
          new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), 5000))),
        ]);
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
    throw new CudamatrixError(
      'TARGET_UNREACHABLE',
      `starting a container from ${image} on ${engine.endpoint} failed: ${engineWords(error)}`,
      { cause: error },
    );
  }
  return { name, lifeline };
}
