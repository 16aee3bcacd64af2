/**
 * The `docker` transport: the probes run in a container on a local or remote Docker engine,
 * with the GPUs requested as `docker run --gpus` does (DeviceRequests, driver nvidia). The
 * container is labelled with the run, has no network by default, runs docker-init as PID 1 and
 * `cudaprobe wait` as its main process, and is removed when the session ends, however it ends.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type Dockerode from 'dockerode';
import DockerClient from 'dockerode';
import { z } from 'zod';
import { CudamatrixError, describeError } from '../../core/errors.ts';
import { packageRoot } from '../../core/package-root.ts';
import { supervise } from '../supervise.ts';
import type { ExecOptions, ExecResult, Session, TransportKind } from '../transport.ts';
import { CONTEXT_NAME, ENDPOINT_PATTERN, endpointProblem, resolveEngine, type ResolvedEngine } from './engine.ts';
import { directoryTar, extractFirstFile, fileTar } from './tar.ts';

const DEFAULT_BASE = 'nvidia/cuda:12.6.3-base-ubuntu24.04';
const PROBE_DIR = '/opt/cudamatrix/bin';
const WORK_DIR = '/tmp/cudamatrix-run';
export const RUN_LABEL = 'cudamatrix.run-id';

/**
 * The engine's endpoint, checked at load time as far as its text allows (scheme, host, socket
 * path, no password), so that a bad one is a matrix error at its line, not a failure mid-run.
 * The JSON Schema gets the same rules as a pattern; the loader gets the precise message and fix.
 */
const endpoint = z
  .string()
  .superRefine((value, ctx) => {
    const problem = endpointProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem.message, params: { fix: problem.fix, ...(problem.secret ? { code: 'MATRIX_SECRET' } : {}) } });
  })
  .meta({ pattern: ENDPOINT_PATTERN });

const context = z
  .string()
  .superRefine((value, ctx) => {
    if (!CONTEXT_NAME.test(value)) {
      ctx.addIssue({
        code: 'custom',
        message: `${JSON.stringify(value)} cannot be a Docker context name (letters, digits, "_", ".", "+", "-", at least two, starting with a letter or digit)`,
        params: { fix: 'write the name "docker context ls" shows' },
      });
    }
  })
  .meta({ pattern: CONTEXT_NAME.source });

export const dockerOptions = z
  .strictObject({
    endpoint: endpoint.optional().describe('Engine endpoint: unix:///var/run/docker.sock, tcp://host:2376, ssh://user@host (default: DOCKER_HOST, then the current Docker context)'),
    context: context.optional().describe('A Docker CLI context name'),
    image: z.string().min(1).optional().describe('Run in this image (it needs glibc; cudaprobe is copied in). Default: build docker/Dockerfile'),
    base: z.string().min(1).optional().describe(`Base image for docker/Dockerfile (ARG BASE; default ${DEFAULT_BASE})`),
    pull: z.boolean().optional().describe('Pull the image when the engine does not have it (default false)'),
    gpus: z
      .union([z.literal('all'), z.literal('none'), z.array(z.string().min(1)).min(1)])
      .optional()
      .describe('GPUs to request, as docker run --gpus: all (default), none, or device indexes/UUIDs'),
    capabilities: z.array(z.string().min(1)).min(1).optional().describe('Driver capabilities (default compute, utility)'),
    runtime: z.string().min(1).optional().describe('Container runtime to use (e.g. nvidia, for engines older than DeviceRequests)'),
    network: z.string().min(1).optional().describe('Network mode (default none)'),
  })
  .superRefine((o, ctx) => {
    // As the Docker CLI refuses --host with --context: which engine is meant is unclear.
    if (o.endpoint !== undefined && o.context !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'a Docker target names its engine by "endpoint" or by "context", not both',
        path: ['context'],
        params: { fix: 'remove one of them' },
      });
    }
  })
  .meta({ not: { required: ['endpoint', 'context'] } });
export type DockerTargetOptions = z.infer<typeof dockerOptions>;

function hash(...parts: (string | Buffer)[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex');
}

function unreachable(engine: ResolvedEngine, error: unknown): CudamatrixError {
  const e = error as { code?: string; message?: string };
  const why = e.code === 'ENOENT' ? 'no socket there (is dockerd running?)' : e.code === 'EACCES' ? 'permission denied on the socket (add the user to the docker group)' : (e.message ?? String(error));
  return new CudamatrixError('TARGET_UNREACHABLE', `cannot reach the Docker engine at ${engine.endpoint} (from ${engine.source}): ${why}`, { cause: error });
}

function gpuRuntimeMissing(engine: ResolvedEngine, error: unknown): CudamatrixError {
  return new CudamatrixError(
    'NVIDIA_RUNTIME_MISSING',
    `the Docker engine at ${engine.endpoint} cannot give containers GPUs (${(error as Error).message.replace(/^\(HTTP code \d+\) [a-z ]+- /, '').trim()}). ` +
      'Install the NVIDIA Container Toolkit on the Docker host (apt-get install nvidia-container-toolkit), configure it for Docker ' +
      '(nvidia-ctk runtime configure --runtime=docker) and restart dockerd; "docker run --rm --gpus all <image> nvidia-smi" must work. ' +
      'It provides the driver\'s libraries (libcuda, libnvidia-ml) and the /dev/nvidia* devices inside the container. ' +
      'To run without GPUs, set gpus: none.',
    { cause: error },
  );
}

const isGpuError = (error: unknown) => /device driver|nvidia|gpu/i.test((error as Error)?.message ?? '');

/** Follows a build or pull stream to its end, reporting each step; throws the first error. */
function follow(docker: Dockerode, stream: NodeJS.ReadableStream, report: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (err: Error | null, output: { error?: string }[]) => {
        const failed = err ?? output.find((o) => o.error);
        if (failed) reject(new Error(err ? err.message : (failed as { error: string }).error));
        else resolve();
      },
      (event: { stream?: string; status?: string; progress?: string }) => {
        const line = (event.stream ?? event.status ?? '').trim();
        if (line) report(line);
      },
    );
  });
}

async function imageExists(docker: Dockerode, name: string): Promise<boolean> {
  try {
    await docker.getImage(name).inspect();
    return true;
  } catch {
    return false;
  }
}

export const dockerTransport: TransportKind<DockerTargetOptions> = {
  kind: 'docker',
  description: 'a container on a Docker engine, with the GPUs the NVIDIA runtime gives it',
  options: dockerOptions,
  chainable: false,
  hostKey(o) {
    return `docker:${resolveEngine(o).endpoint}`;
  },
  async connect(o, context) {
    if (context.via) throw new CudamatrixError('MATRIX_INVALID', `target "${context.target}": docker must be the first hop; for a remote engine use endpoint: ssh://user@host`);
    const engine = resolveEngine(o);
    const docker = new DockerClient({ ...engine.options, timeout: 120_000 });
    const progress = context.onProgress ?? (() => undefined);
    let info: { Architecture?: string; OSType?: string };
    try {
      await docker.ping();
      info = (await docker.info()) as typeof info;
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
    let image: string;
    let baked = false;
    if (o.image) {
      image = o.image;
      if (!(await imageExists(docker, image))) {
        if (!o.pull) {
          throw new CudamatrixError('TARGET_UNREACHABLE', `the Docker engine at ${engine.endpoint} has no image ${image}; pull it there first, or set pull: true`);
        }
        progress(`pulling ${image} on ${engine.endpoint} ...`);
        await follow(docker, await docker.pull(image), (line) => progress(`  ${line}`));
      }
    } else {
      const dockerfile = readFileSync(path.join(packageRoot(), 'docker', 'Dockerfile'));
      const base = o.base ?? DEFAULT_BASE;
      image = `cudamatrix-probe:${binary.hash}-${hash(dockerfile, base).slice(0, 12)}`;
      baked = true;
      if (!(await imageExists(docker, image))) {
        progress(`building ${image} FROM ${base} on ${engine.endpoint} ...`);
        const tar = await fileTar([
          { name: 'Dockerfile', content: dockerfile, mode: 0o644 },
          { name: 'cudaprobe', content: readFileSync(binary.path), mode: 0o755 },
        ]);
        try {
          await follow(docker, await docker.buildImage(Readable.from([tar]), { t: image, buildargs: { BASE: base }, labels: { 'cudamatrix.probe-hash': binary.hash } }), (line) => progress(`  ${line}`));
        } catch (error) {
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
      container = await docker.createContainer({
        Image: image,
        Entrypoint: [`${PROBE_DIR}/cudaprobe`],
        Cmd: ['wait'],
        WorkingDir: '/',
        Labels: {
          [RUN_LABEL]: context.runId,
          'cudamatrix.target': context.target,
          'cudamatrix.host': hostname(),
          'cudamatrix.pid': String(process.pid),
        },
        HostConfig: {
          NetworkMode: o.network ?? 'none',
          Init: true,
          AutoRemove: false,
          DeviceRequests: deviceRequests,
          Runtime: o.runtime,
        },
      });
    } catch (error) {
      if (isGpuError(error)) throw gpuRuntimeMissing(engine, error);
      throw new CudamatrixError('TARGET_UNREACHABLE', `creating a container from ${image} on ${engine.endpoint} failed: ${describeError(error)}`, { cause: error });
    }
    try {
      // Archives are unpacked at / with full paths, so that missing directories are made too.
      if (!baked) await container.putArchive(await fileTar([{ name: `${PROBE_DIR.slice(1)}/cudaprobe`, content: readFileSync(binary.path), mode: 0o755 }]), { path: '/' });
      await container.putArchive(await directoryTar(WORK_DIR.slice(1)), { path: '/' });
      await container.start();
      // Its main process is cudaprobe itself: wait until it says it runs, or has exited (it
      // cannot run in the image).
      const state = await waitUntilReady(container);
      if (!state.Running) {
        const logs = String(await container.logs({ stdout: true, stderr: true, tail: 5 }).catch(() => '')).replace(/[^\x20-\x7e\n]/g, '').trim();
        throw new CudamatrixError(
          'TARGET_UNREACHABLE',
          `cudaprobe cannot run in image ${image}: its container exited at once with code ${state.ExitCode}${logs ? ` (${logs})` : ''}; the image needs glibc (use a glibc-based image, or leave image: out to build docker/Dockerfile)`,
        );
      }
    } catch (error) {
      await container.remove({ force: true, v: true }).catch(() => undefined);
      if (error instanceof CudamatrixError) throw error;
      await container.remove({ force: true, v: true }).catch(() => undefined);
      if (isGpuError(error)) throw gpuRuntimeMissing(engine, error);
      throw new CudamatrixError('TARGET_UNREACHABLE', `starting a container from ${image} on ${engine.endpoint} failed: ${describeError(error)}`, { cause: error });
    }
    const name = ((await container.inspect()) as { Name: string }).Name.replace(/^\//, '');
    return new DockerSession(docker, container, `docker ${name} (${image}) on ${engine.endpoint}`, `docker:${engine.endpoint}`, arch, binaryKey, !baked);
  },
};

/** Waits (up to 30 s) for "cudaprobe: waiting" in the container's log, or for it to stop. */
async function waitUntilReady(container: Dockerode.Container): Promise<{ Running: boolean; ExitCode: number }> {
  for (let i = 0; i < 300; i++) {
    const state = ((await container.inspect()) as { State: { Running: boolean; ExitCode: number } }).State;
    if (!state.Running) return state;
    const logs = String(await container.logs({ stdout: true, stderr: true }).catch(() => ''));
    if (logs.includes('cudaprobe: waiting')) return state;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { Running: true, ExitCode: 0 };
}

class DockerSession implements Session {
  readonly platform = 'linux' as const;
  readonly shell = 'posix' as const;
  readonly workDir = WORK_DIR;

  constructor(
    private readonly docker: Dockerode,
    private readonly container: Dockerode.Container,
    readonly description: string,
    readonly hostKey: string,
    readonly arch: string,
    /** The cache key of the probe at PROBE_DIR (built into the image, or copied in at creation). */
    private readonly probeKey: string,
    /** Whether it was copied in (a named image) rather than built into the image. */
    private readonly copiedIn: boolean,
  ) {}

  exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    return supervise(argv, options, async (io) => {
      const exec = await this.container.exec({
        Cmd: argv,
        WorkingDir: options.cwd ?? this.workDir,
        Env: Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`),
        AttachStdout: true,
        AttachStderr: true,
        AttachStdin: options.stdin !== undefined,
      });
      const stream = (await exec.start({ hijack: true, stdin: options.stdin !== undefined })) as NodeJS.ReadWriteStream;
      const out = new PassThrough();
      const err = new PassThrough();
      out.setEncoding('utf8').on('data', io.stdout);
      err.setEncoding('utf8').on('data', io.stderr);
      this.docker.modem.demuxStream(stream, out, err);
      if (options.stdin !== undefined) stream.end(options.stdin);
      // A docker exec cannot be signalled through the API: a runaway command is stopped by
      // killing the container (all its processes), which is then started again for the next one.
      let killing: Promise<void> | undefined;
      const stop = () => {
        killing ??= this.container.kill().then(
          () => undefined,
          () => undefined,
        );
      };
      const done = (async () => {
        await new Promise<void>((resolve) => {
          stream.on('end', resolve);
          stream.on('close', resolve);
          stream.on('error', () => resolve());
        });
        // What the demultiplexer has written is all pushed on before the end is reported.
        out.end();
        err.end();
        await Promise.all([finished(out), finished(err)]);
        if (!killing) return { exitCode: ((await exec.inspect()) as { ExitCode: number | null }).ExitCode, signal: null };
        await killing;
        // Back to a running container for the next command, unless the run is being cancelled.
        if (!options.signal?.aborted) await this.container.start().catch(() => undefined);
        return { exitCode: null, signal: 'SIGKILL' };
      })();
      return { done, stop };
    });
  }

  async put(localPath: string, remotePath: string, options: { executable?: boolean } = {}): Promise<void> {
    // Unpacked at / with the full path: the directories it needs are made on the way.
    const tar = await fileTar([{ name: path.posix.resolve(this.workDir, remotePath).slice(1), content: readFileSync(localPath), mode: options.executable ? 0o755 : 0o644 }]);
    await this.container.putArchive(tar, { path: '/' });
  }

  async get(remotePath: string, localPath: string): Promise<void> {
    const stream = (await this.container.getArchive({ path: remotePath })) as unknown as Readable;
    await extractFirstFile(stream, localPath);
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
    await this.container.remove({ force: true, v: true }).catch(() => undefined);
  }
}

/** Containers an earlier cudamatrix left behind (labelled with a run id), for doctor --reap. */
export async function reapContainers(o: Pick<DockerTargetOptions, 'endpoint' | 'context'> = {}): Promise<{ removed: string[]; kept: string[]; endpoint: string }> {
  const engine = resolveEngine(o);
  const docker = new DockerClient(engine.options);
  let list: Dockerode.ContainerInfo[];
  try {
    list = await docker.listContainers({ all: true, filters: { label: [RUN_LABEL] } });
  } catch (error) {
    throw unreachable(engine, error);
  }
  const removed: string[] = [];
  const kept: string[] = [];
  for (const c of list) {
    const sameHost = c.Labels['cudamatrix.host'] === hostname();
    const pid = Number(c.Labels['cudamatrix.pid']);
    // A container of a cudamatrix still running on this machine is in use: leave it.
    const alive = sameHost && pid > 0 && isAlive(pid) && pid !== process.pid;
    const label = `${c.Names[0]?.replace(/^\//, '') ?? c.Id.slice(0, 12)} (run ${c.Labels[RUN_LABEL]})`;
    if (alive) {
      kept.push(`${label}: its cudamatrix (pid ${pid}) is still running`);
      continue;
    }
    await docker.getContainer(c.Id).remove({ force: true, v: true });
    removed.push(label);
  }
  return { removed, kept, endpoint: engine.endpoint };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

