/** The `docker` transport as the rest of cudamatrix knows it (transports/transport.ts says what each entry is for). */
import { sshHost } from '../ssh/kind.ts';
import type { TransportKind } from '../transport.ts';
import { resolveEngine } from './engine.ts';
import { dockerOptions, type DockerTargetOptions } from './options.ts';

const LOOPBACK = /^(localhost|127(\.\d+){3}|\[::1\])$/i;

/**
 * The machine an engine named in the matrix runs on, when that is another one: an ssh:// engine
 * is the host an ssh hop to it reaches, a tcp:// one its endpoint. An engine from DOCKER_HOST or a
 * context is found on the machine that runs the target, so it is taken as that one.
 */
function engineMachine(options: DockerTargetOptions): string | undefined {
  if (!options.endpoint) return undefined;
  const url = new URL(options.endpoint);
  if (url.protocol === 'ssh:')
    return sshHost({ host: url.hostname, port: url.port ? Number(url.port) : undefined, user: url.username || undefined });
  if (['tcp:', 'http:', 'https:'].includes(url.protocol) && !LOOPBACK.test(url.hostname)) return `docker:${options.endpoint}`;
  return undefined;
}

export const docker: TransportKind<DockerTargetOptions> = {
  description: 'a container on a Docker engine, with the GPUs the NVIDIA runtime gives it',
  options: dockerOptions,
  // After an ssh or wsl hop: the engine that hop's docker CLI reaches (transports/docker/dial.ts).
  chainable: true,
  hostKey: (options) => `docker:${resolveEngine(options).endpoint}`,
  machine: engineMachine,
  asksForNoGpu: (options) => (options.gpus === 'none' ? 'gpus: none' : undefined),
  reached: 'engine reached, container started',
  fixes: {
    TARGET_UNREACHABLE:
      'check the endpoint: that dockerd runs and its socket (or host and port) is the one named, and that you may use it (the docker group, or root)',
    NVIDIA_RUNTIME_MISSING:
      'install the NVIDIA Container Toolkit on the Docker host and configure it (nvidia-ctk runtime configure --runtime=docker), or set gpus: none',
  },
  load: async () => (await import('./transport.ts')).connectDocker,
};
