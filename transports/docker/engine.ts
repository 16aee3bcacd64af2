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
  /** Where it came from, for messages: "matrix", "--endpoint", "DOCKER_HOST", "context lab", "default". */
  source: string;
  options: DockerOptions;
}

const DEFAULT_SOCKET = 'unix:///var/run/docker.sock';

function configDir(): string {
  return process.env.DOCKER_CONFIG || path.join(homedir(), '.docker');
}

function tlsFiles(dir: string): Pick<DockerOptions, 'ca' | 'cert' | 'key'> {
  const read = (fileName: string) => (existsSync(path.join(dir, fileName)) ? readFileSync(path.join(dir, fileName)) : undefined);
  return { ca: read('ca.pem'), cert: read('cert.pem'), key: read('key.pem') };
}

/** The schemes endpointOptions takes (http:// and https:// as tcp:// without and with TLS). */
export const ENDPOINT_SCHEMES = ['unix', 'tcp', 'ssh', 'npipe', 'http', 'https'] as const;
const ENDPOINT_EXAMPLES = 'unix:///var/run/docker.sock, tcp://host:2376, ssh://user@host or npipe:////./pipe/docker_engine';

/**
 * What is wrong with an endpoint as written, known from its text alone (nothing is opened):
 * what endpointOptions would throw on, and what it would take without complaint but could
 * never reach. Undefined when nothing is. `secret` when it carries a password.
 */
export function endpointProblem(endpoint: string): { message: string; fix: string; secret?: boolean } | undefined {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return { message: `Docker endpoint ${JSON.stringify(endpoint)} is not a URL`, fix: `write a URL: ${ENDPOINT_EXAMPLES}` };
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (!(ENDPOINT_SCHEMES as readonly string[]).includes(scheme)) {
    return {
      message: `Docker endpoint ${JSON.stringify(endpoint)} has the scheme "${scheme}://", which Docker does not speak`,
      fix: `use unix://, tcp://, ssh:// or npipe://, e.g. ${ENDPOINT_EXAMPLES}`,
    };
  }
  if (url.password) {
    return {
      message: 'the Docker endpoint has a password in it; cudamatrix never reads secrets from a matrix file',
      fix:
        scheme === 'ssh'
          ? 'remove the password: ssh:// endpoints log in with ssh-agent (SSH_AUTH_SOCK)'
          : 'remove the password: use TLS certificates (a Docker context) for tcp://',
      secret: true,
    };
  }
  if (scheme === 'unix') {
    if (url.host)
      return {
        message: `unix:// endpoint ${JSON.stringify(endpoint)} names a host ("${url.host}"); a socket is a path`,
        fix: `write the absolute path after three slashes: unix:///${url.host}${url.pathname}`,
      };
    if (!url.pathname || url.pathname === '/')
      return {
        message: `unix:// endpoint ${JSON.stringify(endpoint)} names no socket`,
        fix: "write the socket's path: unix:///var/run/docker.sock",
      };
  }
  if ((scheme === 'tcp' || scheme === 'http' || scheme === 'https' || scheme === 'ssh') && !url.hostname) {
    return {
      message: `${scheme}:// endpoint ${JSON.stringify(endpoint)} names no host`,
      fix: scheme === 'ssh' ? 'write ssh://user@host' : `write ${scheme}://host:2376`,
    };
  }
  if (scheme === 'ssh' && ((url.pathname && url.pathname !== '/') || url.search || url.hash)) {
    return {
      message: `ssh:// endpoint ${JSON.stringify(endpoint)} has a path after the host; Docker takes ssh://[user@]host[:port] only`,
      fix: `write ssh://${url.username ? `${url.username}@` : ''}${url.host}`,
    };
  }
  return undefined;
}

/**
 * endpointProblem's rules as a regular expression, for the JSON Schema (editors): a known
 * scheme; unix:// with an absolute path and no host; a host for tcp://, http(s):// and ssh://;
 * a user but no password; nothing after an ssh:// host. (Port ranges are left to the loader.)
 */
const authority = String.raw`([^:@/?#\s]+@)?([^@/?#:\s\[\]]+|\[[0-9A-Fa-f:.]+\])(:\d*)?`;
export const ENDPOINT_PATTERN = String.raw`^(unix:(//)?/[^/]|npipe:|(tcp|http|https)://${authority}([/?#].*)?$|ssh://${authority}/?$)`;

/** A Docker CLI context name, as "docker context create" accepts it (others can never exist). */
export const CONTEXT_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.+-]+$/;

/** Docker options for an endpoint URL; `tls` adds certificates for tcp://. */
export function endpointOptions(endpoint: string, tls?: Pick<DockerOptions, 'ca' | 'cert' | 'key'> & { verify?: boolean }): DockerOptions {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new CudamatrixError(
      'MATRIX_INVALID',
      `Docker endpoint "${endpoint}" is not a URL; use unix:///var/run/docker.sock, tcp://host:2376 or ssh://user@host`,
    );
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
      return {
        host: url.hostname,
        port: Number(url.port || (secure ? 2376 : 2375)),
        protocol: secure ? 'https' : 'http',
        ...(secure ? tls : {}),
      };
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
      throw new CudamatrixError(
        'MATRIX_INVALID',
        `Docker endpoint "${endpoint}" has an unknown scheme; use unix://, tcp://, ssh:// or npipe://`,
      );
  }
}

/** A context of the Docker CLI's context store (~/.docker/contexts). */
function fromContext(name: string): ResolvedEngine {
  if (name === 'default')
    return {
      endpoint: process.env.DOCKER_HOST || DEFAULT_SOCKET,
      source: 'context default',
      options: endpointOptions(process.env.DOCKER_HOST || DEFAULT_SOCKET),
    };
  const id = createHash('sha256').update(name).digest('hex');
  const meta = path.join(configDir(), 'contexts', 'meta', id, 'meta.json');
  if (!existsSync(meta)) {
    throw new CudamatrixError(
      'TARGET_UNREACHABLE',
      `Docker context "${name}" does not exist (no ${meta}); list contexts with "docker context ls"`,
    );
  }
  const doc = JSON.parse(readFileSync(meta, 'utf8')) as { Endpoints?: { docker?: { Host?: string; SkipTLSVerify?: boolean } } };
  const host = doc.Endpoints?.docker?.Host;
  if (!host) throw new CudamatrixError('TARGET_UNREACHABLE', `Docker context "${name}" has no docker endpoint (${meta})`);
  const tls = tlsFiles(path.join(configDir(), 'contexts', 'tls', id, 'docker'));
  return { endpoint: host, source: `context ${name}`, options: endpointOptions(host, tls) };
}

/**
 * The engine to use. `given` says, for messages, where an explicit endpoint or context came
 * from: the matrix (default), or a command-line flag ("--endpoint").
 */
export function resolveEngine(explicit: { endpoint?: string; context?: string }, given = 'matrix'): ResolvedEngine {
  if (explicit.endpoint) return { endpoint: explicit.endpoint, source: given, options: endpointOptions(explicit.endpoint) };
  if (explicit.context) return fromContext(explicit.context);
  if (process.env.DOCKER_HOST) {
    const verify =
      process.env.DOCKER_TLS_VERIFY !== undefined && process.env.DOCKER_TLS_VERIFY !== '' && process.env.DOCKER_TLS_VERIFY !== '0';
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

/** Why an engine could not be reached, in words that say what to check. */
export function unreachable(engine: ResolvedEngine, error: unknown): CudamatrixError {
  if (error instanceof CudamatrixError) return error;
  const e = error as { code?: string; message?: string };
  const socket = engine.endpoint.startsWith('unix:') || engine.endpoint.startsWith('npipe:');
  const why =
    e.code === 'ENOENT'
      ? 'no socket there (is dockerd running?)'
      : e.code === 'EACCES'
        ? 'permission denied on the socket (add the user to the docker group)'
        : e.code === 'ECONNREFUSED' && socket
          ? 'nothing is listening on the socket: a stale socket file, left by a dockerd that is no longer running (is dockerd running?)'
          : e.code === 'ECONNREFUSED'
            ? `nothing is listening there (${e.message ?? e.code}): is dockerd running there, and listening on that address?`
            : e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN'
              ? `the host name does not resolve (${e.message ?? e.code})`
              : (e.message ?? String(error));
  return new CudamatrixError('TARGET_UNREACHABLE', `cannot reach the Docker engine at ${engine.endpoint} (from ${engine.source}): ${why}`, {
    cause: error,
  });
}
