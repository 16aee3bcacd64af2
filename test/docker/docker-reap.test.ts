/**
 * Issue 9, defect 6: `doctor --reap` on an engine shared by several machines (a CI engine used
 * by several runners) removed the live runs of the other machines: any container labelled with
 * another host name counted as dead, and its run failed. Only what is provably over may go: a
 * run of this machine whose cudamatrix is gone, or, with --older-than, a run older than that.
 *
 * The other machine is a real cudamatrix run in a UTS namespace of its own with another host
 * name (unshare --uts), whose probe hangs (cudaprobe's test hook set in the image). The dead run
 * of this machine reaches the engine through a proxy that never closes the engine's side of a
 * connection: without it, the engine would see the killed run's connection end and remove its
 * container by itself (the lifeline, test/docker/docker-lifeline.test.ts), and there would be nothing
 * to reap. On a Docker engine of this file's own (its own socket, data root and pidfile, started
 * here and stopped by its PID at the end): `--older-than 1s` removes every run's container on
 * the engine it is given, whoever started it, and on the suite's engine that would be the
 * containers of the other test files running meanwhile.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog } from '../../events/events.ts';
import { buildProbe } from '../../probes/build.ts';
import { nodeArch } from '../../transports/local.ts';
import { cliEntry, runCli, startCli, tsxLoader, type CliResult } from '../cli.ts';
import { findDockerd, startTestEngine, type TestEngine } from './docker-engine.ts';
import {
  buildDelayImage,
  buildTestBase,
  containerOfTarget,
  dockerOnAsync,
  dockerToolsReady,
  dockerOn,
  leftoversOf,
  probeRunsIn,
  until,
} from './docker.ts';
import { startHoldingProxy, type HoldingProxy } from './docker-lifeline-proxy.ts';
import { hasCommand, integrationAvailable, repoRoot, tempDir, testCacheDir } from '../helpers.ts';

const ready =
  integrationAvailable('dockerd (this test starts a Docker engine of its own)', findDockerd() !== undefined, 'apt-get install docker.io') &&
  integrationAvailable('root (dockerd must be started as root)', process.getuid?.() === 0, 'run the tests as root') &&
  dockerToolsReady() &&
  integrationAvailable(
    'unshare (util-linux) and root, for a second host name',
    hasCommand('unshare', ['--uts', 'true']),
    'apt-get install util-linux; run as root',
  );

let own: TestEngine | undefined;
let hang: string;
beforeAll(async () => {
  if (!ready) return;
  own = await startTestEngine(tmpdir());
  const probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
  // Each probe waits ten minutes: a run that is alive for as long as the test needs.
  hang = buildDelayImage(600_000, buildTestBase(probe.path, 'cudamatrix-test-base', own.host), own.host);
}, 180_000);

const engine = () => own!.host;
const docker = (args: string[]) => dockerOn(engine(), args);
/** A run's environment: this file's engine, and none of this machine's Docker settings. */
const engineEnv = (): NodeJS.ProcessEnv => ({
  DOCKER_HOST: engine(),
  DOCKER_CONTEXT: undefined,
  DOCKER_TLS_VERIFY: undefined,
  DOCKER_CERT_PATH: undefined,
});

const children: ChildProcess[] = [];
let proxy: HoldingProxy | undefined;
afterAll(async () => {
  await proxy?.close();
  // Every run this file started has ended.
  expect(children.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => child.pid)).toEqual([]);
  // Stopped by its PID; its dockerd and containerd gone, its folder removed.
  if (own) expect(await own.stop()).toEqual([]);
}, 120_000);

function matrix(dir: string, target: string): string {
  const file = path.join(dir, 'matrix.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'defaults: {probes: [sysinfo]}',
      'targets:',
      `  - name: ${target}`,
      `    transport: {kind: docker, image: ${hang}, gpus: none}`,
      '',
    ].join('\n'),
  );
  return file;
}

/** A run started through `unshare --uts` with the host name `host`: another machine, as far as the labels go. */
function startElsewhere(host: string, args: string[]): { child: ChildProcess; done: Promise<CliResult> } {
  const child = spawn(
    'unshare',
    ['--uts', 'sh', '-c', `hostname ${host} && exec "$0" "$@"`, process.execPath, '--import', tsxLoader, cliEntry, ...args],
    {
      cwd: repoRoot,
      env: { ...process.env, NO_COLOR: '1', ...engineEnv() },
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const done = new Promise<CliResult>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

const containerOf = (target: string) => containerOfTarget(docker, target);
// Asynchronous: the holding proxy this test's dead run goes through lives in this process.
const probeRuns = (target: string) => probeRunsIn((args) => dockerOnAsync(engine(), args), target);
function runIdIn(dir: string): string {
  const runs = path.join(dir, 'runs');
  return (readEventLog(path.join(runs, readdirSync(runs)[0]!, 'events.jsonl'))[0] as { runId: string }).runId;
}
const labelOf = (id: string, label: string) => docker(['inspect', '-f', `{{index .Config.Labels "${label}"}}`, id]).trim();

describe.runIf(ready)('doctor --reap on an engine that several machines share', () => {
  it('keeps the live run of another host (and says why), removes the dead run of this one; --older-than removes what is older, whoever started it', async () => {
    // Another machine's run, alive: its probe hangs.
    const otherDir = tempDir();
    const other = startElsewhere('other-runner', [
      'run',
      '-m',
      matrix(otherDir, 'reap-other'),
      '--results-dir',
      path.join(otherDir, 'runs'),
    ]);
    children.push(other.child);
    // A run of this machine that crashed: its process is gone, its container left behind (the
    // engine never learns that its connection ended).
    proxy = await startHoldingProxy(engine());
    const deadDir = tempDir();
    const dead = startCli(['run', '-m', matrix(deadDir, 'reap-dead'), '--results-dir', path.join(deadDir, 'runs')], {
      env: { ...engineEnv(), DOCKER_HOST: proxy.host },
    });
    children.push(dead.child);
    try {
      // A run that ended (or failed) before its probe ran says why at once, not after 60 s.
      const outputs = { other: { stdout: '', stderr: '' }, dead: { stdout: '', stderr: '' } };
      for (const [name, child] of [
        ['other', other.child],
        ['dead', dead.child],
      ] as const) {
        child.stdout!.on('data', (chunk) => (outputs[name].stdout += chunk));
        child.stderr!.on('data', (chunk) => (outputs[name].stderr += chunk));
      }
      await until('the probes of both runs running in their containers', () => {
        for (const [name, runChild] of [
          ['other', other.child],
          ['dead', dead.child],
        ] as const) {
          if (runChild.exitCode !== null || runChild.signalCode !== null)
            throw new Error(
              `the ${name} run ended before its probe ran (${runChild.exitCode ?? runChild.signalCode}): ${outputs[name].stdout.slice(-1500)}\n${outputs[name].stderr.slice(-1500)}`,
            );
        }
        return Promise.all([probeRuns('reap-other'), probeRuns('reap-dead')]).then(
          ([otherRunning, deadRunning]) => otherRunning && deadRunning,
        );
      }).catch((error: Error) => {
        throw new Error(
          `${error.message}; containers: other ${containerOf('reap-other') || 'none'}, dead ${containerOf('reap-dead') || 'none'}; the runs said: other ${JSON.stringify(outputs.other).slice(-1500)}, dead ${JSON.stringify(outputs.dead).slice(-1500)}`,
        );
      });
      expect(labelOf(containerOf('reap-other'), 'cudamatrix.host')).toBe('other-runner');
      process.kill(dead.child.pid!, 'SIGKILL');
      await dead.done;
      const otherRun = runIdIn(otherDir);
      const deadRun = runIdIn(deadDir);
      const otherContainer = containerOf('reap-other');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(proxy.held()).toBeGreaterThan(0);
      expect(leftoversOf(deadRun, engine()).containers).toHaveLength(1);

      const reap = await runCli(['doctor', '--reap', '--endpoint', engine()], { env: engineEnv() });
      expect(reap.stderr).toBe('');
      expect(reap.code).toBe(0);
      expect(reap.stdout).toMatch(
        new RegExp(`^removed \\S+ \\(run ${deadRun}\\): its cudamatrix \\(pid ${dead.child.pid}\\) is no longer running$`, 'm'),
      );
      expect(reap.stdout).toMatch(
        new RegExp(
          `^kept \\S+ \\(run ${otherRun}\\): its run was started on host "other-runner", not on this one \\("[^"]+"\\): whether that cudamatrix still runs cannot be told from here$`,
          'm',
        ),
      );
      expect(reap.stdout).toMatch(
        new RegExp(`container\\(s\\) of earlier runs removed from ${engine().replace(/[/.]/g, '\\$&')} \\(from --endpoint\\), \\d+ kept`),
      );
      expect(reap.stdout).toContain('--older-than DURATION (e.g. --older-than 6h)');
      expect(leftoversOf(deadRun, engine())).toMatchObject({ containers: [] });
      // The other machine's run is untouched: its container runs, its probe still waits.
      expect(docker(['inspect', '-f', '{{.State.Running}}', otherContainer]).trim()).toBe('true');
      expect(await probeRuns('reap-other')).toBe(true);
      expect(other.child.exitCode).toBeNull();

      // A bound it is within: kept, and said so.
      const young = await runCli(['doctor', '--reap', '--endpoint', engine(), '--older-than', '6h'], { env: engineEnv() });
      expect(young.code).toBe(0);
      expect(young.stdout).toMatch(
        new RegExp(
          `^kept \\S+ \\(run ${otherRun}\\): its run was started on host "other-runner".*; started \\d+ s ago, less than --older-than 6 h$`,
          'm',
        ),
      );
      expect(other.child.exitCode).toBeNull();

      // A bound it is past: removed, whoever started it; that run then ends as a transport failure.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const old = await runCli(['doctor', '--reap', '--endpoint', engine(), '--older-than', '1s'], { env: engineEnv() });
      expect(old.code).toBe(0);
      expect(old.stdout).toMatch(new RegExp(`^removed \\S+ \\(run ${otherRun}\\): started \\d+ s ago, more than --older-than 1 s$`, 'm'));
      const ended = await other.done;
      expect(ended.code).toBe(3);
      const cell = readEventLog(path.join(otherDir, 'runs', readdirSync(path.join(otherDir, 'runs'))[0]!, 'events.jsonl')).find(
        (e) => e.type === 'cell-end',
      );
      expect(cell).toMatchObject({
        probe: 'sysinfo',
        status: 'error',
        errorCode: 'TRANSPORT_FAILED',
        reason: expect.stringMatching(/container \S+ on \S+ (was removed|stopped) while cudaprobe ran in it/),
      });
      expect(leftoversOf(otherRun, engine())).toEqual({ containers: [], volumes: [] });
      expect(leftoversOf(deadRun, engine())).toEqual({ containers: [], volumes: [] });
    } finally {
      for (const runChild of [other.child, dead.child])
        if (runChild.exitCode === null && runChild.signalCode === null) runChild.kill('SIGKILL');
    }
  }, 120_000);

  it('says the engine came from --endpoint when it cannot be reached', async () => {
    const dir = tempDir();
    const result = await runCli(['doctor', '--reap', '--endpoint', `unix://${dir}/none.sock`], { env: engineEnv() });
    expect(result.code).toBe(3);
    expect(existsSync(`${dir}/none.sock`)).toBe(false);
    expect(result.stderr).toContain(
      `error [TARGET_UNREACHABLE]: cannot reach the Docker engine at unix://${dir}/none.sock (from --endpoint): no socket there (is dockerd running?)`,
    );
  });
});

describe('doctor --older-than', () => {
  it('needs --reap, and a duration', async () => {
    const alone = await runCli(['doctor', '--older-than', '6h']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/^error \[USAGE\]: --older-than needs --reap\b/m);
    const bad = await runCli(['doctor', '--reap', '--endpoint', 'unix:///nowhere/docker.sock', '--older-than', 'six hours']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('error [USAGE]: --older-than needs a duration such as 6h, 90m, 2d or 300s, got "six hours"');
  });
});
