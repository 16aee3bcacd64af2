/** The `docker` transport's options, checked when the matrix is loaded (the kind is in ./kind.ts). */
import { z } from 'zod';
import { DEFAULT_CALL_TIMEOUT_S, DEFAULT_CONNECT_TIMEOUT_S } from './bounded-calls.ts';
import { CONTEXT_NAME, ENDPOINT_PATTERN, endpointProblem } from './engine.ts';
import { IMAGE_REFERENCE_PATTERN, imageReferenceProblem } from './reference.ts';

export const DEFAULT_BASE = 'nvidia/cuda:12.6.3-base-ubuntu24.04';

/**
 * The engine's endpoint, checked at load time as far as its text allows (scheme, host, socket
 * path, no password), so that a bad one is a matrix error at its line, not a failure mid-run.
 * The JSON Schema gets the same rules as a pattern; the loader gets the precise message and fix.
 */
const endpoint = z
  .string()
  .superRefine((value, ctx) => {
    const problem = endpointProblem(value);
    if (problem)
      ctx.addIssue({
        code: 'custom',
        message: problem.message,
        params: { fix: problem.fix, ...(problem.secret ? { code: 'MATRIX_SECRET' } : {}) },
      });
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

/**
 * An image reference, checked against Docker's reference grammar when the matrix is loaded:
 * Docker refuses upper case in a repository name at once, so it is a matrix error at its line.
 */
const imageReference = z
  .string()
  .min(1)
  .superRefine((value, ctx) => {
    const problem = imageReferenceProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem.message, params: { fix: problem.fix } });
  })
  .meta({ pattern: IMAGE_REFERENCE_PATTERN });

const seconds = z.number().positive().max(3600);

export const dockerOptions = z
  .strictObject({
    endpoint: endpoint
      .optional()
      .describe(
        'Engine endpoint: unix:///var/run/docker.sock, tcp://host:2376, ssh://user@host (default: DOCKER_HOST, then the current Docker context)',
      ),
    context: context.optional().describe('A Docker CLI context name'),
    image: imageReference
      .optional()
      .describe('Run in this image (it needs glibc; cudaprobe is copied in). Default: build docker/Dockerfile'),
    base: imageReference.optional().describe(`Base image for docker/Dockerfile (ARG BASE; default ${DEFAULT_BASE})`),
    pull: z
      .boolean()
      .optional()
      .describe('Pull the image (or the base) when the engine does not have it (default false: nothing is pulled)'),
    gpus: z
      .union([z.literal('all'), z.literal('none'), z.array(z.string().min(1)).min(1)])
      .optional()
      .describe('GPUs to request, as docker run --gpus: all (default), none, or device indexes/UUIDs'),
    capabilities: z.array(z.string().min(1)).min(1).optional().describe('Driver capabilities (default compute, utility)'),
    runtime: z.string().min(1).optional().describe('Container runtime to use (e.g. nvidia, for engines older than DeviceRequests)'),
    network: z.string().min(1).optional().describe('Network mode (default none)'),
    connectTimeout: seconds
      .optional()
      .describe(`Seconds to wait for the engine's first answers (ping, info) (default ${DEFAULT_CONNECT_TIMEOUT_S})`),
    callTimeout: seconds
      .optional()
      .describe(
        `Seconds to wait for each later call to the engine: create, start, exec, inspect, kill, remove, copy (default ${DEFAULT_CALL_TIMEOUT_S})`,
      ),
  })
  .superRefine((options, ctx) => {
    // As the Docker CLI refuses --host with --context: which engine is meant is unclear.
    if (options.endpoint !== undefined && options.context !== undefined) {
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
