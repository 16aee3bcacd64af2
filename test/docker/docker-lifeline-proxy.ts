/**
 * A way to the test engine that never tells it a controller has gone: a unix socket that
 * forwards each connection to the engine and, when the controller's side ends (cudamatrix
 * killed), keeps the engine's side open. That is what a network partition, or a controller
 * machine that vanished without closing its sockets, looks like to the engine: the one case in
 * which a probe container's lifeline (transports/docker/transport.ts) cannot end it, and what
 * `cudamatrix doctor --reap` is still for. close() ends every connection it holds.
 */
import net from 'node:net';
import path from 'node:path';
import { tempDir } from '../helpers.ts';

export interface HoldingProxy {
  /** unix:///…/docker.sock, for DOCKER_HOST. */
  host: string;
  /** How many engine connections it holds whose controller side has ended. */
  held(): number;
  close(): Promise<void>;
}

function connectTo(engineHost: string): net.Socket {
  const url = new URL(engineHost);
  if (url.protocol === 'unix:') return net.connect({ path: url.pathname });
  if (url.protocol === 'tcp:' || url.protocol === 'http:') return net.connect({ host: url.hostname, port: Number(url.port || 2375) });
  throw new Error(`the holding proxy speaks unix:// and tcp:// only, not ${engineHost}`);
}

export async function startHoldingProxy(engineHost: string): Promise<HoldingProxy> {
  const socket = path.join(tempDir('cm-proxy-'), 'docker.sock');
  const upstreams = new Set<net.Socket>();
  const orphaned = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const up = connectTo(engineHost);
    upstreams.add(up);
    up.on('error', () => undefined);
    client.on('error', () => undefined);
    client.on('data', (chunk: Buffer) => void up.write(chunk));
    up.on('data', (chunk: Buffer) => void (client.destroyed ? undefined : client.write(chunk)));
    // The engine ending its side ends the controller's; the controller ending its side ends nothing.
    up.on('end', () => client.end());
    up.on('close', () => {
      upstreams.delete(up);
      orphaned.delete(up);
      client.destroy();
    });
    client.on('close', () => {
      if (!up.destroyed) orphaned.add(up);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, resolve);
  });
  return {
    host: `unix://${socket}`,
    held: () => orphaned.size,
    async close() {
      for (const up of upstreams) up.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
