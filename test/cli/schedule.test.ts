/**
 * Scheduling across hosts, with a real sshd on 127.0.0.1 as the second host: a host busy with
 * its own targets must never keep a free slot from another host that has work (defect 4).
 */
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog } from '../../events/events.ts';
import { runCli } from '../cli.ts';
import { tempDir } from '../helpers.ts';
import { sshdReady, startSshd, type Sshd } from '../sshd.ts';

const ready = sshdReady();

let sshd: Sshd;
beforeAll(async () => {
  if (ready) sshd = await startSshd(1);
});
afterAll(async () => {
  await sshd?.stop();
});

describe.runIf(ready)('the scheduler', () => {
  it('gives a free slot to another host at once, while one host works through its own targets', async () => {
    const dir = tempDir();
    const hop = {
      kind: 'ssh',
      host: '127.0.0.1',
      port: sshd.ports[0],
      identityFile: sshd.key,
      knownHosts: sshd.knownHosts,
      sshConfig: false,
      retries: 0,
    };
    const local = Array.from({ length: 8 }, (_, i) => `  - name: local-${i}`);
    const file = path.join(dir, 'matrix.yaml');
    writeFileSync(
      file,
      [
        'version: 1',
        'concurrency: 2',
        'defaults: {probes: [sysinfo]}',
        'targets:',
        ...local,
        `  - name: remote`,
        `    transport: ${JSON.stringify(hop)}`,
        '',
      ].join('\n'),
    );
    // Each local probe waits 400 ms (cudaprobe's test hook; the remote sessions do not get it):
    // the eight local targets, one at a time on this host, take over 3 s.
    const result = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], { env: { CUDAPROBE_TEST_DELAY_MS: '400' } });
    expect(result.code).toBe(0);
    const events = readEventLog(path.join(dir, 'runs', readdirSync(path.join(dir, 'runs'))[0]!, 'events.jsonl'));
    const started = (e: { type: string; time?: string; started?: string }) => Date.parse(e.type === 'run-start' ? e.started! : e.time!);
    const runStart = started(events[0]!);
    const lastLocalEnd = events.filter((e) => e.type === 'cell-end' && e.target.startsWith('local-')).at(-1)!;
    expect(started(lastLocalEnd) - runStart).toBeGreaterThan(3000);
    // The remote target starts second, before any cell has ended: the slot this host cannot use
    // goes to it at once. Before, the SSH target started only after seven local ones had finished.
    const order = events.filter((e) => e.type === 'target-start' || e.type === 'cell-end').map((e) => `${e.type} ${e.target}`);
    expect(order.slice(0, 2)).toEqual(['target-start local-0', 'target-start remote']);
  });
});
