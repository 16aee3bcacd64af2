/**
 * A streamed command destroyed before it ended: stopped with its stop signal, and killed when it
 * outlives that (as salloc outlives TERM, which it passes on to its command), so that none is
 * left behind.
 */
import { existsSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { streamProcess } from './stream.ts';

/** The first line the command prints: its PID. */
function firstLine(stream: Duplex): Promise<string> {
  return new Promise((resolve) => {
    let seen = '';
    stream.on('data', (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      if (seen.includes('\n')) resolve(seen.split('\n')[0]!);
    });
  });
}

const alive = (pid: string) => existsSync(`/proc/${pid}`);

// What a failing test left running is killed, so that it does not load the rest of the suite.
const started: string[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) if (alive(pid)) process.kill(Number(pid), 'SIGKILL');
});

describe.skipIf(process.platform !== 'linux')('streamProcess: destroying the stream stops the command', () => {
  it('with the stop signal asked for (HUP here), which the command sees', async () => {
    const stream = await streamProcess(['sh', '-c', `trap 'exit 7' HUP; trap '' TERM; echo $$; while :; do sleep 0.1; done`], {
      stopSignal: 'SIGHUP',
    });
    const pid = await firstLine(stream);
    started.push(pid);
    expect(alive(pid)).toBe(true);
    stream.destroy();
    // Gone well before the grace after which it would be killed.
    await expect.poll(() => alive(pid), { timeout: 3_000, interval: 50 }).toBe(false);
  });

  it('killed after the grace when it ignores the signal', async () => {
    const stream = await streamProcess(['sh', '-c', `trap '' TERM; echo $$; exec sleep 60`]);
    const pid = await firstLine(stream);
    started.push(pid);
    stream.destroy();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(alive(pid)).toBe(true); // TERM ignored
    await expect.poll(() => alive(pid), { timeout: 15_000, interval: 100 }).toBe(false);
  }, 20_000);
});
