/**
 * Issue 9, defect 5: when the engine cannot run a command in the container (the container was
 * killed, the binary vanished), what it says is not probe output. It was read as such
 * ("PROBE_PROTOCOL: stdout line 1: not JSON: OCI runtime exec failed ..."); it must be a
 * transport failure (TRANSPORT_FAILED, infrastructure) in the engine's words, the target's
 * remaining cells must end with it, and the container and its volumes must still be removed.
 * On the suite's Docker engine (test/global-setup-docker.ts); images named, so that the probe image
 * builds of test/docker/docker.test.ts are not disturbed.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type RunEvent } from '../../events/events.ts';
import { defaultProbeNames } from '../../probes/catalogue.ts';
import { buildProbe } from '../../probes/build.ts';
import { nodeArch } from '../../transports/local.ts';
import { connectChain } from '../../transports/registry.ts';
import type { Session } from '../../transports/transport.ts';
import { startCli, whenOutput } from '../cli.ts';
import {
  buildDelayImage,
  buildTestBase,
  dockerToolsReady,
  docker,
  dockerEnv,
  leftoversOf,
  testDockerHost,
  testDockerUnavailable,
} from './docker.ts';
import { integrationAvailable, tempDir, testCacheDir } from '../helpers.ts';

const noEngine = testDockerUnavailable();
const ready = dockerToolsReady() && integrationAvailable('a Docker engine for the tests', !noEngine, noEngine);

let base: string;
let slow: string;
let probe: { path: string; hash: string };
beforeAll(async () => {
  if (!ready) return;
  const built = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
  probe = { path: built.path, hash: built.hash };
  base = buildTestBase(built.path);
  // Each probe takes a second: time to act between two of them.
  slow = buildDelayImage(1000, base);
}, 180_000);

const PROBE = '/opt/cudamatrix/bin/cudaprobe';

/**
 * What the engine says about a container killed around a command, depending on when the kill
 * lands: while the probe runs, before its exec is created, or while the exec starts.
 */
const ENGINE_WORDS =
  /container \S+ on \S+ (stopped while cudaprobe ran in it \((exited|removing), exit code 137\)|was removed while cudaprobe ran in it|failed: (Container [0-9a-f]{64} is not running|No such exec instance|No such container))|could not run cudaprobe in container \S+ on \S+: (OCI runtime exec failed|cannot exec in a (stopped|deleted) state|No such exec instance|No such container)/;

async function openSession(runId: string): Promise<{ session: Session; id: string }> {
  const session = await connectChain([{ kind: 'docker', image: base, gpus: 'none', endpoint: testDockerHost }], {
    target: 'exec-failures',
    runId,
    binaryFor: async () => probe,
  });
  const id = docker(['ps', '-q', '--filter', `label=cudamatrix.run-id=${runId}`]).trim();
  return { session, id };
}

/** Whether the container runs; a killed one is removed by the engine (AutoRemove), which counts as not. */
const running = (id: string) => {
  try {
    return docker(['inspect', '-f', '{{.State.Running}}', id], { stdio: ['ignore', 'pipe', 'ignore'] }).trim() === 'true';
  } catch {
    return false;
  }
};

/** The cells of probes: all (the catalogue's probes less the opt-in ones). */
const SUITE = defaultProbeNames().length;

// A whole run through the CLI (tsx start-up, image, the default suite): a bound on a hang, generous
// so that a loaded machine does not fail it (60 s was exceeded once with 8 test suites on 2 cores).
const RUN_TIMEOUT = { timeout: 180_000 };

function runAll(name: string, dir: string) {
  const file = path.join(dir, 'matrix.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'defaults: {probes: all}',
      'targets:',
      `  - name: ${name}`,
      `    transport: {kind: docker, image: ${slow}, gpus: none}`,
      '',
    ].join('\n'),
  );
  return startCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], { env: dockerEnv() });
}

function eventsOf(dir: string): RunEvent[] {
  return readEventLog(path.join(dir, 'runs', readdirSync(path.join(dir, 'runs'))[0]!, 'events.jsonl'));
}

/** The first failed cell, and that every cell after it ended with the same transport error. */
function firstFailure(events: RunEvent[], target: string) {
  const cells = events.flatMap((e) => (e.type === 'cell-end' && e.target === target && e.planned ? [e] : []));
  const at = cells.findIndex((cell) => cell.status === 'error');
  return { cells, at, failed: cells[at], rest: cells.slice(at) };
}

describe.runIf(ready)("a container that cannot run commands any more is a transport failure, in the engine's words", () => {
  it('killed between two commands: the next one fails as TRANSPORT_FAILED saying the container is not running; so do later ones; removed at the end', async () => {
    const runId = `exec-killed-${process.pid}`;
    const { session, id } = await openSession(runId);
    try {
      expect((await session.exec([PROBE, 'run', 'sysinfo'])).exitCode).toBe(3);
      docker(['kill', id]);
      expect(running(id)).toBe(false);
      const next = session.exec([PROBE, 'run', 'sysinfo']);
      await expect(next).rejects.toMatchObject({ code: 'TRANSPORT_FAILED' });
      // Not running, or already removed by the engine (AutoRemove), depending on when the engine got to it.
      await expect(next).rejects.toThrow(/Container [0-9a-f]{64} is not running|No such container: [0-9a-f]{64}/);
      await expect(session.exec(['/bin/busybox', 'true'])).rejects.toMatchObject({ code: 'TRANSPORT_FAILED' });
    } finally {
      await session[Symbol.asyncDispose]();
    }
    expect(leftoversOf(runId)).toEqual({ containers: [], volumes: [] });
  });

  it('killed while a command starts ("cannot exec in a stopped state"): never a result made of the engine\'s error text', async () => {
    // The kill and the command race: either the command ran, or it is a transport failure.
    for (let round = 0; round < 4; round++) {
      const runId = `exec-race-${process.pid}-${round}`;
      const { session, id } = await openSession(runId);
      try {
        const kill = new Promise<void>((resolve) => setTimeout(() => resolve(void docker(['kill', id], { stdio: 'ignore' })), round * 10));
        const outcome = await session.exec([PROBE, 'run', 'sysinfo']).then(
          (result) => ({ result }),
          (error: { code?: string; message: string }) => ({ error }),
        );
        await kill;
        if ('error' in outcome) {
          expect(outcome.error).toMatchObject({ code: 'TRANSPORT_FAILED', message: expect.stringMatching(/container \S+ on \S+/) });
        } else {
          expect(outcome.result.stdout).not.toMatch(/OCI runtime|cannot exec|No such exec/);
          expect(outcome.result.exitCode).toBe(3);
        }
      } finally {
        await session[Symbol.asyncDispose]();
      }
      expect(leftoversOf(runId)).toEqual({ containers: [], volumes: [] });
    }
  });

  it('the probe binary removed: "OCI runtime exec failed ... no such file or directory" is TRANSPORT_FAILED, not probe output', async () => {
    const runId = `exec-vanished-${process.pid}`;
    const { session, id } = await openSession(runId);
    try {
      docker(['exec', id, '/bin/busybox', 'rm', PROBE]);
      const pending = session.exec([PROBE, 'run', 'sysinfo']);
      await expect(pending).rejects.toMatchObject({ code: 'TRANSPORT_FAILED' });
      await expect(pending).rejects.toThrow(
        /the Docker engine could not run cudaprobe in container \S+ on \S+: OCI runtime exec failed: .*no such file or directory/,
      );
    } finally {
      await session[Symbol.asyncDispose]();
    }
    expect(leftoversOf(runId)).toEqual({ containers: [], volumes: [] });
  });

  it(
    'in a run: the container killed (through the engine, by its id) between two probes ends the target with TRANSPORT_FAILED for every remaining cell',
    RUN_TIMEOUT,
    async () => {
      const dir = tempDir();
      const { child, done } = runAll('killed-mid-run', dir);
      // Probe 2 is then in its one-second wait (the kill may still land as its exec starts).
      await whenOutput(child, '[1/', () => {
        const id = docker(['ps', '-q', '--filter', 'label=cudamatrix.target=killed-mid-run']).trim();
        setTimeout(() => docker(['kill', id]), 300);
      });
      const result = await done;
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.code).toBe(3);
      const events = eventsOf(dir);
      const { cells, at, failed, rest } = firstFailure(events, 'killed-mid-run');
      expect(cells).toHaveLength(SUITE);
      expect(at).toBeGreaterThan(0);
      expect(failed).toMatchObject({ errorCode: 'TRANSPORT_FAILED', reason: expect.stringMatching(ENGINE_WORDS) });
      expect(rest.every((cell) => cell.errorCode === 'TRANSPORT_FAILED' && cell.reason === failed!.reason)).toBe(true);
      expect(events.find((e) => e.type === 'target-error')).toMatchObject({ code: 'TRANSPORT_FAILED', message: failed!.reason });
      expect(cells.some((cell) => cell.errorCode === 'PROBE_PROTOCOL' || cell.errorCode === 'PROBE_CRASHED')).toBe(false);
      expect(leftoversOf((events[0] as { runId: string }).runId)).toEqual({ containers: [], volumes: [] });
    },
  );

  it(
    'in a run: the probe binary removed inside the container ends the target with the engine\'s "OCI runtime exec failed" as TRANSPORT_FAILED',
    RUN_TIMEOUT,
    async () => {
      const dir = tempDir();
      const { child, done } = runAll('vanished-mid-run', dir);
      await whenOutput(child, '[1/', () => {
        const id = docker(['ps', '-q', '--filter', 'label=cudamatrix.target=vanished-mid-run']).trim();
        docker(['exec', id, '/bin/busybox', 'rm', PROBE]);
      });
      const result = await done;
      expect(result.code).toBe(3);
      const events = eventsOf(dir);
      const { cells, at, failed, rest } = firstFailure(events, 'vanished-mid-run');
      expect(cells).toHaveLength(SUITE);
      expect(at).toBeGreaterThan(0);
      expect(failed).toMatchObject({
        errorCode: 'TRANSPORT_FAILED',
        reason: expect.stringMatching(
          /^the Docker engine could not run cudaprobe in container \S+ on \S+: OCI runtime exec failed: .*no such file or directory/,
        ),
      });
      expect(rest.every((cell) => cell.errorCode === 'TRANSPORT_FAILED' && cell.reason === failed!.reason)).toBe(true);
      expect(cells.some((cell) => cell.errorCode === 'PROBE_PROTOCOL')).toBe(false);
      expect(leftoversOf((events[0] as { runId: string }).runId)).toEqual({ containers: [], volumes: [] });
    },
  );
});
