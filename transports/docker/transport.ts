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
import type Dockerode from 'dockerode';
import DockerClient from 'dockerode';
import { normaliseArch } from '../../core/arch.ts';
import { CudamatrixError } from '../../core/errors.ts';
import type { Connect, ConnectContext } from '../transport.ts';
import { BoundedEngine, DEFAULT_CALL_TIMEOUT_S, DEFAULT_CONNECT_TIMEOUT_S } from './bounded-calls.ts';
import { createProbeContainer, startProbeContainer } from './container.ts';
import { engineThrough } from './dial.ts';
import { resolveEngine, unreachable, type ResolvedEngine } from './engine.ts';
import { probeImage } from './image.ts';
import type { DockerTargetOptions } from './options.ts';
import { DockerSession } from './session.ts';

export { RUN_LABEL } from './reap.ts';

/** ping and info take an abort signal, which their type declarations leave out. */
type WithSignal = { abortSignal: AbortSignal };
const withSignal = (docker: Dockerode) =>
  docker as unknown as { ping(options: WithSignal): Promise<unknown>; info(options: WithSignal): Promise<unknown> };

/** Opens a session in a new container on the target's engine (the image built or found first). */
export const connectDocker: Connect<DockerTargetOptions> = async (options, context) => {
  // After another hop, the engine is reached through it (docker system dial-stdio there); its
  // streams are closed once the container is removed, or when the session cannot be opened.
  const through = context.via ? engineThrough(context.via, context.target, options) : undefined;
  try {
    const session = await openContainer(options, context, through ?? resolveEngine(options));
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

/** The engine checked, the image found or built, and the probe container started. */
async function openContainer(options: DockerTargetOptions, context: ConnectContext, engine: ResolvedEngine): Promise<DockerSession> {
  // No socket-wide idle timeout: a probe's exec may be silent for as long as its timeout allows.
  const e = new BoundedEngine(
    new DockerClient(engine.options),
    engine,
    (options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_S) * 1000,
    (options.callTimeout ?? DEFAULT_CALL_TIMEOUT_S) * 1000,
  );
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
    throw new CudamatrixError(
      'TARGET_UNREACHABLE',
      `the Docker engine at ${engine.endpoint} runs ${info.OSType} containers; cudaprobe's containers are Linux`,
    );
  }
  // An engine that names no architecture (or another one) gets the x86_64 probe, as before.
  const arch = normaliseArch(info.Architecture ?? '') === 'aarch64' ? 'aarch64' : 'x86_64';
  if (!context.binaryFor)
    throw new CudamatrixError('TRANSPORT_FAILED', 'the docker transport needs the probe binary before it starts a container');
  const binary = await context.binaryFor('linux', arch);
  const binaryKey = `linux-${arch}-${binary.hash}`;

  const { image, baked } = await probeImage(e, options, binary, progress);
  const container = await createProbeContainer(e, options, context, engine, image);
  const { name, lifeline } = await startProbeContainer(e, container, { engine, image, baked, binaryPath: binary.path });
  return new DockerSession({
    engine: e,
    container,
    lifeline,
    name,
    description: `docker ${name} (${image}) on ${engine.endpoint}`,
    hostKey: `docker:${engine.endpoint}`,
    arch,
    probeKey: binaryKey,
    copiedIn: !baked,
    warn: progress,
  });
}
