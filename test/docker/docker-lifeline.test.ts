/**
 * A probe container must not outlive its controlling connection. Its main process is
 * `cudaprobe wait --stdin`, its stdin the run's attach connection (StdinOnce, AutoRemove): when
 * cudamatrix dies without disposing its session (SIGKILL), the engine sees that connection end,
 * closes the stdin, cudaprobe exits 0, and the engine removes the container and its volumes by
 * itself, with no later run or `doctor --reap` needed. Before, the container ran on for good.
 * (A lost SSH hop to the engine: test/docker/docker-chain.test.ts. A connection the engine still
 * believes open, the case left to `doctor --reap`: test/docker/docker.test.ts, test/docker/docker-reap.test.ts.)
 *
 * On the suite's Docker engine (test/global-setup-docker.ts); images named, so that the probe image
 * builds of test/docker/docker.test.ts are not disturbed.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProbe } from '../../probes/build.ts';
import { nodeArch } from '../../transports/local.ts';
import { connectChain } from '../../transports/registry.ts';
import { startCli } from '../cli.ts';
import {
  buildDelayImage,
  buildTestBase,
  containerOfTarget,
  docker,
  dockerEnv,
  dockerToolsReady,
  leftoversOf,
  probeRunsIn,
  testDockerHost,
  testDockerUnavailable,
  until,
} from './docker.ts';
import { integrationAvailable, tempDir, testCacheDir } from '../helpers.ts';

const noEngine = testDockerUnavailable();
const ready = dockerToolsReady() && integrationAvailable('a Docker engine for the tests', !noEngine, noEngine);

let base: string;
let hang: string;
let probe: { path: string; hash: string };
beforeAll(async () => {
  if (!ready) return;
  const built = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
  probe = { path: built.path, hash: built.hash };
  base = buildTestBase(built.path);
  // Each probe waits ten minutes first: cudamatrix is killed while one runs.
  hang = buildDelayImage(600_000, base);
}, 180_000);

const started: ChildProcess[] = [];
afterAll(() => {
  // Every run this file started has ended.
  expect(started.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => child.pid)).toEqual([]);
});

const containerOf = (target: string) => containerOfTarget(docker, target);
const probeRuns = (target: string) => probeRunsIn(docker, target);

/** What the engine reported of a container between two times (unix seconds): "die 0", "destroy". */
const eventsOf = (id: string, since: number) =>
  docker([
    'events',
    '--since',
    String(since),
    '--until',
    String(Math.ceil(Date.now() / 1000) + 1),
    '--filter',
    `container=${id}`,
    '--format',
    '{{.Action}} {{index .Actor.Attributes "exitCode"}}',
  ])
    .trim()
    .split('\n')
    .map((line) => line.trim());

describe.runIf(ready)('the lifeline: a probe container ends with its controlling connection', () => {
  it('cudamatrix SIGKILLed mid-probe: the engine removes the container and its volume within seconds, with no reap', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'matrix.yaml');
    writeFileSync(
      file,
      [
        'version: 1',
        'targets:',
        '  - name: lifeline-kill',
        `    transport: {kind: docker, image: ${hang}, gpus: none}`,
        '    probes: [sysinfo]',
        '',
      ].join('\n'),
    );
    const since = Math.floor(Date.now() / 1000) - 1;
    const run = startCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], { env: dockerEnv() });
    started.push(run.child);
    try {
      await until('cudaprobe run sysinfo in the container', () => probeRuns('lifeline-kill'), 60_000);
    } catch (error) {
      run.child.kill('SIGKILL');
      throw error;
    }
    const id = containerOf('lifeline-kill');
    const runId = docker(['inspect', '-f', '{{index .Config.Labels "cudamatrix.run-id"}}', id]).trim();
    const inspected = JSON.parse(docker(['inspect', id]))[0];
    expect(inspected.HostConfig).toMatchObject({ AutoRemove: true, Init: true });
    expect(inspected.Config).toMatchObject({ OpenStdin: true, StdinOnce: true, Cmd: ['wait', '--stdin', '--usr1-kills-others'] });
    // A crash: nothing in cudamatrix gets to clean up.
    run.child.kill('SIGKILL');
    await run.done;
    const took = await until('the container of the killed run removed', () => leftoversOf(runId).containers.length === 0, 15_000);
    expect(leftoversOf(runId)).toEqual({ containers: [], volumes: [] });
    // Ended by its own main process (cudaprobe wait, exit 0 at the end of its stdin), then
    // destroyed by the engine: not killed, not removed from outside.
    const seen = eventsOf(id, since);
    expect(seen).toContain('die 0');
    expect(seen).toContain('destroy');
    expect(seen.filter((e) => e.startsWith('kill'))).toEqual([]);
    console.log(`SIGKILLed cudamatrix: its container was gone ${(took / 1000).toFixed(1)} s later (engine events: ${seen.join(', ')})`);
  }, 120_000);

  it('a command past its timeout is killed inside the container, which runs on, the same one, for the next command', async () => {
    const runId = `lifeline-timeout-${process.pid}`;
    const session = await connectChain([{ kind: 'docker', image: base, gpus: 'none', endpoint: testDockerHost }], {
      target: 'lifeline-timeout',
      runId,
      binaryFor: async () => probe,
    });
    try {
      const id = docker(['ps', '-q', '--filter', `label=cudamatrix.run-id=${runId}`]).trim();
      const startedAt = () => docker(['inspect', '-f', '{{.State.StartedAt}} {{.RestartCount}} {{.State.Running}}', id]).trim();
      const before = startedAt();
      for (const round of [1, 2]) {
        const hung = await session.exec(['/bin/busybox', 'sh', '-c', '/bin/busybox sleep 300 & /bin/busybox sleep 301'], {
          timeoutMs: 500,
        });
        // Ended by the kill at its timeout (sleep 301 would run for minutes), not before it.
        expect(hung, `round ${round}`).toMatchObject({ timedOut: true, exitCode: null, signal: 'SIGKILL' });
        expect(hung.durationMs).toBeGreaterThanOrEqual(500);
        const ps = await session.exec(['/bin/busybox', 'ps', '-o', 'pid,args']);
        expect(ps.exitCode).toBe(0);
        // Left: docker-init, cudaprobe wait, and ps itself.
        expect(ps.stdout).not.toContain('sleep 30');
        expect(ps.stdout).toContain('cudaprobe wait --stdin');
      }
      // Not restarted: it never stopped (a stop would have removed it).
      expect(startedAt()).toBe(before);
      expect(before).toMatch(/ 0 true$/);
    } finally {
      await session[Symbol.asyncDispose]();
    }
    expect(leftoversOf(runId)).toEqual({ containers: [], volumes: [] });
  });
});
