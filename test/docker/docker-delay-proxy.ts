/**
 * A slow but live Docker engine: a unix socket that forwards every connection to the test
 * engine, and holds back the first request whose request line matches `slow` (and whatever
 * follows it on that connection) for `delayMs` before forwarding it. Every other request, the
 * pings of cudamatrix's watchdog among them, passes at once: the engine answers, only slowly.
 */
import net from 'node:net';
import path from 'node:path';
import { tempDir } from '../helpers.ts';

export interface DelayProxy {
  /** unix:///…/docker.sock */
  host: string;
  /** How many requests it held back (0 or 1), and how many pings it passed. */
  counts(): { delayed: number; pings: number };
  close(): Promise<void>;
}

export async function startDelayProxy(engineSocket: string, slow: RegExp, delayMs: number): Promise<DelayProxy> {
  const socket = path.join(tempDir('cm-delay-proxy-'), 'docker.sock');
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let delayed = 0;
  let pings = 0;
  const server = net.createServer((client) => {
    const up = net.connect({ path: engineSocket });
    sockets.add(client).add(up);
    let heldUntil = 0;
    up.on('error', () => undefined);
    client.on('error', () => undefined);
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      if (/^GET \S*\/_ping /m.test(text)) pings++;
      if (delayed === 0 && slow.test(text.split('\r\n')[0] ?? '')) {
        delayed++;
        heldUntil = Date.now() + delayMs;
      }
      const wait = heldUntil - Date.now();
      if (wait <= 0) return void up.write(chunk);
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!up.destroyed) up.write(chunk);
      }, wait);
      timers.add(timer);
    });
    up.on('data', (chunk: Buffer) => void (client.destroyed ? undefined : client.write(chunk)));
    up.on('end', () => client.end());
    client.on('end', () => up.end());
    up.on('close', () => (sockets.delete(up), client.destroy()));
    client.on('close', () => (sockets.delete(client), up.destroy()));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, resolve);
  });
  return {
    host: `unix://${socket}`,
    counts: () => ({ delayed, pings }),
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const connection of sockets) connection.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
