/**
 * The Docker engine of a later hop ([ssh, docker], [wsl, docker]): reached as DOCKER_HOST=ssh://
 * reaches it, through `docker system dial-stdio` run by the previous hop's session, which carries
 * the engine's API over the command's stdin and stdout. Each HTTP connection is one such
 * command; the engine is the one the docker CLI there uses (its DOCKER_HOST or context), or the
 * target's `endpoint`/`context`, handed to that CLI.
 */
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { CudamatrixError } from '../../core/errors.ts';
import type { Session } from '../transport.ts';
import type { ResolvedEngine } from './engine.ts';

export function engineThrough(
  via: Session,
  target: string,
  where: { endpoint?: string; context?: string },
): ResolvedEngine & { close(): void } {
  const openStream = via.openStream?.bind(via);
  if (!openStream) {
    throw new CudamatrixError(
      'MATRIX_INVALID',
      `target "${target}": a docker hop after ${via.description} needs a hop that can stream a command (ssh to a Linux host, wsl, local)`,
    );
  }
  const argv = [
    'docker',
    ...(where.endpoint ? ['--host', where.endpoint] : []),
    ...(where.context ? ['--context', where.context] : []),
    'system',
    'dial-stdio',
  ];
  const agent = new http.Agent();
  const streams = new Set<Duplex>();
  // The Agent asks for a connection; the callback form lets it come asynchronously.
  (
    agent as unknown as { createConnection: (options: unknown, callback: (error: Error | null, stream?: Duplex) => void) => void }
  ).createConnection = (_options, callback) => {
    openStream(argv).then(
      (stream) => {
        streams.add(stream);
        // The HTTP client listens for errors only while a request uses the connection; one that
        // fails between requests (the engine refusing an exec start) must not crash the process.
        stream.on('error', () => undefined);
        stream.once('close', () => streams.delete(stream));
        callback(null, stream);
      },
      (error: Error) => callback(error),
    );
  };
  return {
    endpoint: `${argv.join(' ')} on ${via.description}`,
    source: 'the previous hop',
    // host (not socketPath): docker-modem then speaks HTTP over what the agent gives it.
    options: { protocol: 'http', host: 'localhost', port: 2375, agent } as ResolvedEngine['options'],
    close() {
      for (const stream of streams) stream.destroy();
      agent.destroy();
    },
  };
}
