/**
 * Issue 9, defect 7: every wait on a Docker engine is bounded, and says it timed out.
 * - A dockerd of this file's own (its own socket, data root and pidfile, started here and
 *   stopped by its PID at the end: never the suite's engine, never the system's), frozen with
 *   SIGSTOP while a probe runs: the probe's timeout (3 s) fires, the kill it sends is not
 *   answered, and the run ends within the bounds with "did not answer within N s". Before, it
 *   hung until dockerd was resumed.
 * - A TCP port that accepts connections and never answers, as the endpoint: the target fails
 *   within connectTimeout, saying so. Before, it took 122 s and said "socket hang up".
 */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type RunEvent } from '../../events/events.ts';
import { buildProbe } from '../../probes/build.ts';
import { nodeArch } from '../../transports/local.ts';
import { runCli, startCli, type CliResult } from '../cli.ts';
import { findDockerd, startTestEngine, type TestEngine } from './docker-engine.ts';
import { FROZEN_AFTER_S } from '../../transports/docker/bounded-calls.ts';
import { startDelayProxy } from './docker-delay-proxy.ts';
import { buildDelayImage, buildTestBase, dockerOnAsync, dockerToolsReady, dockerOn, leftoversOf, probeRunsIn, until } from './docker.ts';
import { integrationAvailable, tempDir, testCacheDir } from '../helpers.ts';

const canStartEngine =
  integrationAvailable('dockerd (this test starts a Docker engine of its own)', findDockerd() !== undefined, 'apt-get install docker.io') &&
  integrationAvailable('root (dockerd must be started as root)', process.getuid?.() === 0, 'run the tests as root') &&
  dockerToolsReady();

/** A run, with no Docker settings of this machine: the matrix names the engine. */
const noDockerEnv = { DOCKER_HOST: undefined, DOCKER_CONTEXT: undefined, DOCKER_TLS_VERIFY: undefined, DOCKER_CERT_PATH: undefined };

function matrix(dir: string, transport: Record<string, unknown>, extra: string[] = []): string {
  const file = path.join(dir, 'matrix.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'defaults: {probes: [sysinfo, sync-latency]}',
      'targets:',
      '  - name: frozen',
      `    transport: ${JSON.stringify(transport)}`,
      ...extra,
      '',
    ].join('\n'),
  );
  return file;
}

const eventsOf = (dir: string): RunEvent[] => readEventLog(path.join(dir, 'runs', readdirSync(path.join(dir, 'runs'))[0]!, 'events.jsonl'));

const started: ChildProcess[] = [];
/** How long the slow engine holds back one call: longer than the watchdog's bound, shorter than callTimeout's 60 s. */
const SLOW_MS = 40_000;

/** The CLI, remembered: the file checks at the end that each one has ended. */
function start(args: string[]): ReturnType<typeof startCli> {
  const run = startCli(args, { env: noDockerEnv });
  started.push(run.child);
  return run;
}

/** The run's result, or null when it has not ended within `ms` (then it is killed, by its PID). */
async function within(run: ReturnType<typeof startCli>, ms: number): Promise<CliResult | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  const result = await Promise.race([run.done, late]);
  clearTimeout(timer);
  if (result === null && run.child.exitCode === null && run.child.pid) {
    process.kill(run.child.pid, 'SIGKILL');
    await run.done;
  }
  return result;
}

describe.runIf(canStartEngine)('a Docker engine frozen (SIGSTOP) while a probe runs', () => {
  let own: TestEngine | undefined;
  let base: string;
  let hang: string;
  beforeAll(async () => {
    own = await startTestEngine(tmpdir());
    const probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
    base = buildTestBase(probe.path, 'cudamatrix-test-base', own.host);
    // Probes that wait ten minutes: the engine is frozen while one runs.
    hang = buildDelayImage(600_000, base, own.host);
  }, 180_000);
  afterAll(async () => {
    if (!own) return;
    process.kill(own.pid, 'SIGCONT');
    // Stopped by its PID; its dockerd and containerd gone, its folder removed.
    expect(await own.stop()).toEqual([]);
  }, 120_000);

  it('ends the run within the bounds (probe timeout 3 s, connectTimeout and callTimeout 5 s) with "did not answer within", and reap cleans up after SIGCONT', async () => {
    const engine = own!;
    const dir = tempDir();
    const file = matrix(dir, { kind: 'docker', endpoint: engine.host, image: hang, gpus: 'none', connectTimeout: 5, callTimeout: 5 }, [
      '    timeout: 3s',
    ]);
    const run = start(['run', '-m', file, '--results-dir', path.join(dir, 'runs')]);
    let result: CliResult | null;
    let frozenAt: number;
    try {
      // The probe runs (waiting in the container) once docker top shows it.
      await until('cudaprobe run sysinfo in the container', () => probeRunsIn((args) => dockerOn(engine.host, args), 'frozen'));
      process.kill(engine.pid, 'SIGSTOP');
      frozenAt = Date.now();
      result = await within(run, 60_000);
    } finally {
      process.kill(engine.pid, 'SIGCONT');
    }
    const took = Date.now() - frozenAt!;
    expect(result, 'the run did not end within 60 s of the engine freezing').not.toBeNull();
    // 3 s for the probe's timeout, 5 s for the kill, 5 s for the removal, and the CLI's own time.
    expect(took).toBeLessThan(30_000);
    expect(result!.code).toBe(3);
    expect(result!.stderr).not.toMatch(/\n\s+at /);
    const events = eventsOf(dir);
    const runId = (events[0] as { runId: string }).runId;
    const said = `the Docker engine at ${engine.host} (from matrix) did not answer within 5 s (killing the container to stop a command past its timeout)`;
    const cells = events.flatMap((e) => (e.type === 'cell-end' && e.planned ? [e] : []));
    expect(cells.map((cell) => [cell.probe, cell.errorCode])).toEqual([
      ['sysinfo', 'TRANSPORT_FAILED'],
      ['sync-latency', 'TRANSPORT_FAILED'],
    ]);
    expect(cells[0]!.reason).toContain(said);
    expect(events.find((e) => e.type === 'target-error')).toMatchObject({
      code: 'TRANSPORT_FAILED',
      message: expect.stringContaining(said),
    });
    // The removal could not be answered either: the run says so, and what removes it later.
    expect(result!.stderr).toMatch(
      /warning: container \S+ on \S+ was not removed \(the Docker engine at \S+ \(from matrix\) did not answer within 5 s \(removing the container\).*"cudamatrix doctor --reap" removes it once the engine answers/,
    );

    // Resumed: the container of that run (its cudamatrix gone) is reaped.
    const reap = await runCli(['doctor', '--reap', '--endpoint', engine.host], { env: noDockerEnv });
    expect(reap.code).toBe(0);
    expect(leftoversOf(runId, engine.host)).toEqual({ containers: [], volumes: [] });
  }, 150_000);

  it(`is noticed by the watchdog's pings within ${FROZEN_AFTER_S} s, mid-probe, whatever the probe's timeout; the removal then fails at once`, async () => {
    const engine = own!;
    const dir = tempDir();
    // No connectTimeout or callTimeout: the defaults. The probe may run for ten minutes.
    const file = matrix(dir, { kind: 'docker', endpoint: engine.host, image: hang, gpus: 'none' }, ['    timeout: 10m']);
    const run = start(['run', '-m', file, '--results-dir', path.join(dir, 'runs')]);
    let result: CliResult | null;
    let frozenAt: number;
    try {
      await until('cudaprobe run sysinfo in the container', () => probeRunsIn((args) => dockerOnAsync(engine.host, args), 'frozen'));
      process.kill(engine.pid, 'SIGSTOP');
      frozenAt = Date.now();
      result = await within(run, 120_000);
    } finally {
      process.kill(engine.pid, 'SIGCONT');
    }
    const took = Date.now() - frozenAt!;
    // Before: the probe's 10 minutes, then 60 s for the kill and 60 s for the removal.
    expect(result, 'the run did not end within 120 s of the engine freezing').not.toBeNull();
    expect(took).toBeGreaterThanOrEqual(FROZEN_AFTER_S * 1000 - 1000);
    // 30 s of unanswered pings, one ping interval (5 s), and the CLI's own time on a busy machine.
    expect(took).toBeLessThan(FROZEN_AFTER_S * 1000 + 30_000);
    expect(result!.code).toBe(3);
    expect(result!.stderr).not.toMatch(/\n\s+at /);
    const said = `the Docker engine at ${engine.host} (from matrix) answered no ping for ${FROZEN_AFTER_S} s (running cudaprobe)`;
    const events = eventsOf(dir);
    const runId = (events[0] as { runId: string }).runId;
    expect(events.find((e) => e.type === 'target-error')).toMatchObject({
      code: 'TRANSPORT_FAILED',
      message: expect.stringContaining(said),
    });
    expect(result!.stderr).toMatch(
      /warning: container \S+ on \S+ was not removed \(the Docker engine at \S+ \(from matrix\) answered no ping for 30 s \(removing the container\)/,
    );
    const reap = await runCli(['doctor', '--reap', '--endpoint', engine.host], { env: noDockerEnv });
    expect(reap.code).toBe(0);
    expect(leftoversOf(runId, engine.host)).toEqual({ containers: [], volumes: [] });
  }, 300_000);

  it(`does not fail a call that is slow but live: a container create held back ${SLOW_MS / 1000} s while pings answer`, async () => {
    const engine = own!;
    const proxy = await startDelayProxy(new URL(engine.host).pathname, /^POST \S*\/containers\/create/, SLOW_MS);
    try {
      const dir = tempDir();
      const file = matrix(dir, { kind: 'docker', endpoint: proxy.host, image: base, gpus: 'none' });
      const from = Date.now();
      const result = await within(start(['run', '-m', file, '--results-dir', path.join(dir, 'runs')]), 180_000);
      expect(result, 'the run did not end within 180 s').not.toBeNull();
      expect(proxy.counts().delayed).toBe(1);
      expect(Date.now() - from).toBeGreaterThanOrEqual(SLOW_MS);
      expect(proxy.counts().pings).toBeGreaterThan(1);
      expect(result!.stderr + result!.stdout).not.toContain('answered no ping');
      // No driver in the container: every probe skipped, nothing failed.
      expect(result!.code, result!.stdout + result!.stderr).toBe(0);
      expect(
        eventsOf(dir)
          .filter((e) => e.type === 'cell-end' && e.planned)
          .map((e) => (e as { status: string }).status),
      ).toEqual(['skipped', 'skipped']);
    } finally {
      await proxy.close();
    }
  }, 300_000);
});

describe('an endpoint that accepts connections and never answers', () => {
  let server: net.Server;
  const sockets: net.Socket[] = [];
  let port: number;
  beforeAll(async () => {
    server = net.createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('fails within connectTimeout, saying that the engine did not answer (not "socket hang up" two minutes later)', async () => {
    const dir = tempDir();
    const endpoint = `tcp://127.0.0.1:${port}`;
    const file = matrix(dir, { kind: 'docker', endpoint, gpus: 'none', connectTimeout: 2 });
    const started = Date.now();
    const result = await within(start(['run', '-m', file, '--results-dir', path.join(dir, 'runs')]), 60_000);
    expect(result, 'the run did not end within 60 s').not.toBeNull();
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(result!.code).toBe(3);
    expect(sockets.length).toBeGreaterThan(0);
    expect(eventsOf(dir).find((e) => e.type === 'target-error')).toMatchObject({
      code: 'TARGET_UNREACHABLE',
      message: expect.stringContaining(
        `the Docker engine at ${endpoint} (from matrix) did not answer within 2 s (ping); is it frozen (dockerd stopped), overloaded, or is something other than a Docker engine listening there?`,
      ),
    });
  }, 90_000);

  it('doctor --reap gives up after its connect bound too (15 s), naming the endpoint and where it came from', async () => {
    const endpoint = `tcp://127.0.0.1:${port}`;
    const started = Date.now();
    const result = await within(start(['doctor', '--reap', '--endpoint', endpoint]), 60_000);
    expect(result, 'doctor --reap did not end within 60 s').not.toBeNull();
    expect(Date.now() - started).toBeLessThan(35_000);
    expect(result!.code).toBe(3);
    expect(result!.stderr).toContain(
      `error [TARGET_UNREACHABLE]: the Docker engine at ${endpoint} (from --endpoint) did not answer within 15 s (listing the containers of cudamatrix runs)`,
    );
  }, 90_000);
});

// Every run this file started has ended (within() kills one that has not, by its PID).
afterAll(() => {
  expect(started.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => child.pid)).toEqual([]);
});
