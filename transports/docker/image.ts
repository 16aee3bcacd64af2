/**
 * The image a probe container starts from: the one the target names, or docker/Dockerfile
 * built with the probe in it, once per probe hash and base. Nothing is pulled unless pull: true.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import type Dockerode from 'dockerode';
import { CudamatrixError, describeError } from '../../core/errors.ts';
import { packageRoot } from '../../core/package-root.ts';
import { type BoundedEngine, engineWords, httpStatus, isEngineTimeout } from './bounded-calls.ts';
import { DEFAULT_BASE, type DockerTargetOptions } from './options.ts';
import { fileTar } from './tar.ts';

function hash(...parts: (string | Buffer)[]): string {
  const hasher = createHash('sha256');
  for (const part of parts) hasher.update(part);
  return hasher.digest('hex');
}
/** GET /images/NAME/json with an abort signal (dockerode's Image.inspect does not pass one on). */
function inspectImage(docker: Dockerode, name: string, abortSignal: AbortSignal): Promise<unknown> {
  return new Promise((resolve, reject) => {
    docker.modem.dial(
      {
        path: `/images/${name}/json`,
        method: 'GET',
        options: {},
        abortSignal,
        statusCodes: { 200: true, 404: 'no such image', 500: 'server error' },
      },
      (err, data) => (err ? reject(err) : resolve(data)),
    );
  });
}
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

/** The image for the target's containers, and whether the probe is baked into it (else it is copied into each container). */
export async function probeImage(
  e: BoundedEngine,
  options: DockerTargetOptions,
  binary: { path: string; hash: string },
  progress: (line: string) => void,
): Promise<{ image: string; baked: boolean }> {
  // The image: the one named, or docker/Dockerfile built once per probe hash and base.
  // Nothing is pulled unless pull: true, the base of docker/Dockerfile included.
  let image: string;
  let baked = false;
  if (options.image) {
    image = options.image;
    if (!(await imageExists(e, image))) {
      if (!options.pull) {
        throw new CudamatrixError(
          'DOCKER_IMAGE_MISSING',
          `the Docker engine at ${e.endpoint} has no image ${image}; pull it there first, or set pull: true`,
        );
      }
      await pull(e, image, progress);
    }
  } else {
    const dockerfile = readFileSync(path.join(packageRoot(), 'docker', 'Dockerfile'));
    const base = options.base ?? DEFAULT_BASE;
    image = `cudamatrix-probe:${binary.hash}-${hash(dockerfile, base).slice(0, 12)}`;
    baked = true;
    if (!(await imageExists(e, image))) {
      // The build would pull a base the engine lacks: look first ("scratch" is no image).
      if (base !== 'scratch' && !(await imageExists(e, base))) {
        if (!options.pull) {
          throw new CudamatrixError(
            'DOCKER_IMAGE_MISSING',
            `the Docker engine at ${e.endpoint} has no image ${base}, the base docker/Dockerfile is built FROM${options.base ? '' : ' (the default base)'}, and nothing is pulled unless pull: true. ` +
              `Pull it on that engine first (docker pull ${base}), set pull: true on this target, or name a base the engine has (base: ...; it needs glibc)`,
          );
        }
        await pull(e, base, progress);
      }
      progress(`building ${image} FROM ${base} on ${e.endpoint} ...`);
      const tar = await fileTar([
        { name: 'Dockerfile', content: dockerfile, mode: 0o644 },
        { name: 'cudaprobe', content: readFileSync(binary.path), mode: 0o755 },
      ]);
      try {
        const stream = await e.call(`building ${image}`, (abortSignal) =>
          e.docker.buildImage(Readable.from([tar]), {
            t: image,
            buildargs: { BASE: base },
            labels: { 'cudamatrix.probe-hash': binary.hash },
            abortSignal,
          }),
        );
        await e.follow(`building ${image}`, stream, (line) => progress(`  ${line}`));
      } catch (error) {
        if (isEngineTimeout(error)) throw error;
        throw new CudamatrixError('PROBE_BUILD_FAILED', `building ${image} FROM ${base} failed: ${describeError(error)}`, { cause: error });
      }
    }
  }
  return { image, baked };
}
