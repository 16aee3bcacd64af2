/**
 * Which Docker engine to talk to, resolved as the Docker CLI resolves it: an explicit endpoint
 * or context in the matrix, then DOCKER_HOST (with DOCKER_TLS_VERIFY / DOCKER_CERT_PATH), then
 * DOCKER_CONTEXT or the current context of ~/.docker/config.json, then the local socket.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { DockerOptions } from 'dockerode';
import { CudamatrixError } from '../../core/errors.ts';

export interface ResolvedEngine {
  /** The endpoint as written ("unix:///var/run/docker.sock", "tcp://gpu:2376", "ssh://me@gpu"). */
  endpoint: string;
  /** Where it came from, for messages: "matrix", "DOCKER_HOST", "context lab", "default". */
  source: string;
  options: DockerOptions;
}

const DEFAULT_SOCKET = 'unix:///var/run/docker.sock';

function configDir(): string {
  return process.env.DOCKER_CONFIG || path.join(homedir(), '.docker');
}

function tlsFiles(dir: string): Pick<DockerOptions, 'ca' | 'cert' | 'key'> {
  const read = (f: string) => (existsSync(path.join(dir, f)) ? readFileSync(path.join(dir, f)) : undefined);
  return { ca: read('ca.pem'), cert: read('cert.pem'), key: read('key.pem') };
}

/** Docker options for an endpoint URL; `tls` adds certificates for tcp://. */
export function endpointOptions(endpoint: string, tls?: Pick<DockerOptions, 'ca' | 'cert' | 'key'> & { verify?: boolean }): DockerOptions {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new CudamatrixError('MATRIX_INVALID', `Docker endpoint "${endpoint}" is not a URL; use unix:///var/run/docker.sock, tcp://host:2376 or ssh://user@host`);
  }
  switch (url.protocol) {
    case 'unix:':
      return { socketPath: url.pathname };
    case 'npipe:':
      return { socketPath: `//./pipe/${url.pathname.replace(/^\/+(pipe\/)?/, '')}` };
    case 'tcp:':
    case 'http:':
    case 'https:': {
      const secure = url.protocol === 'https:' || Boolean(tls?.cert || tls?.ca);
      return { host: url.hostname, port: Number(url.port || (secure ? 2376 : 2375)), protocol: secure ? 'https' : 'http', ...(secure ? tls : {}) };
    }
    case 'ssh:':
      return {
        protocol: 'ssh',
        host: url.hostname,
        port: Number(url.port || 22),
        username: url.username || undefined,
        sshOptions: { agent: process.env.SSH_AUTH_SOCK },
      } as DockerOptions;
    default:
      throw new CudamatrixError('MATRIX_INVALID', `Docker endpoint "${endpoint}" has an unknown scheme; use unix://, tcp://, ssh:// or npipe://`);
  }
}

/** A context of the Docker CLI's context store (~/.docker/contexts). */
function fromContext(name: string): ResolvedEngine {
  if (name === 'default') return { endpoint: process.env.DOCKER_HOST || DEFAULT_SOCKET, source: 'context default', options: endpointOptions(process.env.DOCKER_HOST || DEFAULT_SOCKET) };
  const id = createHash('sha256').update(name).digest('hex');
  const meta = path.join(configDir(), 'contexts', 'meta', id, 'meta.json');
  if (!existsSync(meta)) {
    throw new CudamatrixError('TARGET_UNREACHABLE', `Docker context "${name}" does not exist (no ${meta}); list contexts with "docker context ls"`);
  }
  const doc = JSON.parse(readFileSync(meta, 'utf8')) as { Endpoints?: { docker?: { Host?: string; SkipTLSVerify?: boolean } } };
  const host = doc.Endpoints?.docker?.Host;
  if (!host) throw new CudamatrixError('TARGET_UNREACHABLE', `Docker context "${name}" has no docker endpoint (${meta})`);
  const tls = tlsFiles(path.join(configDir(), 'contexts', 'tls', id, 'docker'));
  return { endpoint: host, source: `context ${name}`, options: endpointOptions(host, tls) };
}

export function resolveEngine(explicit: { endpoint?: string; context?: string }): ResolvedEngine {
  if (explicit.endpoint) return { endpoint: explicit.endpoint, source: 'matrix', options: endpointOptions(explicit.endpoint) };
  if (explicit.context) return fromContext(explicit.context);
  if (process.env.DOCKER_HOST) {
    const verify = process.env.DOCKER_TLS_VERIFY !== undefined && process.env.DOCKER_TLS_VERIFY !== '' && process.env.DOCKER_TLS_VERIFY !== '0';
    const tls = verify ? tlsFiles(process.env.DOCKER_CERT_PATH || configDir()) : undefined;
    return { endpoint: process.env.DOCKER_HOST, source: 'DOCKER_HOST', options: endpointOptions(process.env.DOCKER_HOST, tls) };
  }
  const contextName =
    process.env.DOCKER_CONTEXT ||
    (() => {
      const file = path.join(configDir(), 'config.json');
      if (!existsSync(file)) return undefined;
      try {
        return (JSON.parse(readFileSync(file, 'utf8')) as { currentContext?: string }).currentContext;
      } catch {
        return undefined;
      }
    })();
  if (contextName && contextName !== 'default') return fromContext(contextName);
  return { endpoint: DEFAULT_SOCKET, source: 'default', options: endpointOptions(DEFAULT_SOCKET) };
}
