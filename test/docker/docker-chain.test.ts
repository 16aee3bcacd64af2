/**
 * A chained target [ssh, docker] (issue 11): an SSH hop to a host, then a container on the Docker
 * engine of that host, reached as DOCKER_HOST=ssh:// reaches one: `docker system dial-stdio` run
 * over the SSH session carries the engine's API. Real parts only: the loopback sshd of the tests,
 * whose sessions get DOCKER_HOST pointing at the suite's own dockerd, and that engine.
 *
 * The SSH hop lost mid-run (its sshd processes killed): the run ends saying which hop, and the
 * container does not outlive it. Before, it kept running on the engine for good: its main
 * process waited for a removal that could no longer come. Now the container's stdin is the
 * run's attach connection, through the hop (the lifeline, transports/docker/transport.ts): the
 * engine sees that connection end, cudaprobe wait --stdin exits, and AutoRemove removes it.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type RunEvent } from '../../events/events.ts';
import { buildProbe } from '../../probes/build.ts';
import { nodeArch } from '../../transports/local.ts';
import { runCli, startCli, type CliResult } from '../cli.ts';
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
import { sshdReady, startSshd, type Sshd } from '../sshd.ts';

const noEngine = testDockerUnavailable();
const ready = sshdReady() && dockerToolsReady() && integrationAvailable('a Docker engine for the tests', !noEngine, noEngine);

let sshd: Sshd;
let base: string;
let hang: string;
beforeAll(async () => {
  if (!ready) return;
  const probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
  base = buildTestBase(probe.path);
  // Probes that wait ten minutes first: the hop is lost while one runs.
  hang = buildDelayImage(600_000, base);
  // The host's docker CLI uses the suite's engine, as a real host's uses its own.
  sshd = await startSshd(1, [`SetEnv DOCKER_HOST=${testDockerHost}`]);
}, 180_000);
const started: ChildProcess[] = [];
afterAll(async () => {
  await sshd?.stop();
  // Every run this file started has ended.
  expect(started.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => child.pid)).toEqual([]);
});

/** The run's result, or null when it has not ended within `ms` (it is killed then, by its PID). */
async function within(run: { child: ChildProcess; done: Promise<CliResult> }, ms: number): Promise<CliResult | null> {
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

/**
 * The docker system dial-stdio commands of this file's SSH sessions: those with the suite
 * engine's DOCKER_HOST (sshd's SetEnv). Not every one on the machine: other test files (the WSL
 * stand-in) run such commands at the same time, for their own engines.
 */
const dialers = () => {
  let pids: string[];
  try {
    pids = execFileSync('pgrep', ['-f', 'docker system dial-stdio'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
  return pids.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`DOCKER_HOST=${testDockerHost}`);
    } catch {
      return false; // gone meanwhile
    }
  });
};

describe.runIf(ready)('[ssh, docker]: the engine of an SSH host, through docker system dial-stdio', () => {
  it('runs the probes in a container on the remote engine, and leaves no container and no dial-stdio behind', async () => {
    const dir = tempDir();
    const ssh = {
      kind: 'ssh',
      host: '127.0.0.1',
      port: sshd.ports[0],
      identityFile: sshd.key,
      knownHosts: sshd.knownHosts,
      sshConfig: false,
      agent: false,
    };
    const file = path.join(dir, 'matrix.yaml');
    writeFileSync(
      file,
      [
        'version: 1',
        'targets:',
        '  - name: remote-docker',
        `    transport: ${JSON.stringify([ssh, { kind: 'docker', base, gpus: 'none' }])}`,
        '    probes: [sysinfo, event-timing]',
        '',
      ].join('\n'),
    );
    // The controller's own DOCKER_HOST points nowhere: only the SSH hop's engine can be meant.
    const result = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], {
      env: { ...dockerEnv(), DOCKER_HOST: 'unix:///nonexistent/docker.sock' },
    });
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const [run] = readdirSync(path.join(dir, 'runs'));
    const events: RunEvent[] = readEventLog(path.join(dir, 'runs', run!, 'events.jsonl'));
    const readyEvent = events.find((e) => e.type === 'target-ready');
    expect(readyEvent).toMatchObject({
      platform: 'linux',
      session: expect.stringMatching(/^docker \S+ \(.*\) on docker system dial-stdio on ssh root@127\.0\.0\.1:\d+$/),
    });
    const cells = events.flatMap((e) => (e.type === 'cell-end' && e.planned ? [e] : []));
    expect(cells.map((cell) => [cell.probe, cell.status])).toEqual([
      ['sysinfo', 'skipped'],
      ['event-timing', 'skipped'],
    ]);
    const sysinfo = Object.fromEntries(
      cells[0]!.records.flatMap((record) => (record.type === 'sysinfo' ? [[record.name, record.value]] : [])),
    );
    expect(sysinfo.container).toBe('docker');
    const runId = (events[0] as { runId: string }).runId;
    expect(leftoversOf(runId)).toEqual({ containers: [], volumes: [] });
    expect(dialers()).toEqual([]);
  }, 300_000);

  it('the SSH hop lost mid-probe: the run ends naming the hop, and the engine removes the container by itself (no reap)', async () => {
    // An sshd of this test's own: all of its processes are killed, as a host or link dying is.
    const own = await startSshd(1, [`SetEnv DOCKER_HOST=${testDockerHost}`]);
    let run: ReturnType<typeof startCli> | undefined;
    let lost = false;
    try {
      const dir = tempDir();
      const port = own.ports[0]!;
      const ssh = {
        kind: 'ssh',
        host: '127.0.0.1',
        port,
        identityFile: own.key,
        knownHosts: own.knownHosts,
        sshConfig: false,
        agent: false,
      };
      const file = path.join(dir, 'matrix.yaml');
      writeFileSync(
        file,
        [
          'version: 1',
          'targets:',
          '  - name: hop-lost',
          `    transport: ${JSON.stringify([ssh, { kind: 'docker', image: hang, gpus: 'none' }])}`,
          '    probes: [sysinfo, event-timing]',
          '',
        ].join('\n'),
      );
      run = startCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], {
        env: { ...dockerEnv(), DOCKER_HOST: 'unix:///nonexistent/docker.sock' },
      });
      started.push(run.child);
      const containerOf = () => containerOfTarget(docker, 'hop-lost');
      await until('cudaprobe run sysinfo in the container', () => probeRunsIn(docker, 'hop-lost'), 60_000);
      const runId = docker(['inspect', '-f', '{{index .Config.Labels "cudamatrix.run-id"}}', containerOf()]).trim();
      // The lifeline and the probe's exec, each a dial-stdio on the host.
      expect(dialers().length).toBeGreaterThanOrEqual(2);
      own.killAll();
      lost = true;
      const lostAt = Date.now();
      const result = await within(run, 60_000);
      expect(result, 'the run did not end within 60 s of the hop dying').not.toBeNull();
      expect(result!.stderr).not.toMatch(/\n\s+at /);
      expect(result!.code).toBe(3);
      const events: RunEvent[] = readEventLog(path.join(dir, 'runs', readdirSync(path.join(dir, 'runs'))[0]!, 'events.jsonl'));
      const cells = events.flatMap((e) => (e.type === 'cell-end' && e.planned ? [e] : []));
      expect(cells.map((cell) => [cell.probe, cell.status, cell.errorCode])).toEqual([
        ['sysinfo', 'error', 'TRANSPORT_FAILED'],
        ['event-timing', 'error', 'TRANSPORT_FAILED'],
      ]);
      // Which hop: the engine is reached through dial-stdio on that SSH host.
      const hop = new RegExp(`docker system dial-stdio on ssh root@127\\.0\\.0\\.1:${port}\\b`);
      expect(cells[0]!.reason).toMatch(hop);
      expect(events.find((e) => e.type === 'target-error')).toMatchObject({
        code: 'TRANSPORT_FAILED',
        message: expect.stringMatching(hop),
      });
      // Nothing reaps it: the engine has removed it, and its volume, by itself.
      const gone = await until('the container of the run removed by the engine', () => leftoversOf(runId).containers.length === 0, 15_000);
      expect(leftoversOf(runId)).toEqual({ containers: [], volumes: [] });
      console.log(
        `[ssh, docker] hop lost: the run ended ${((Date.now() - lostAt) / 1000).toFixed(1)} s later (${cells[0]!.reason}); its container was gone ${(gone / 1000).toFixed(1)} s after that`,
      );
      await until('no docker system dial-stdio left on the host', () => dialers().length === 0, 15_000);
    } finally {
      if (run?.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
      if (!lost) own.killAll();
      await own.stop();
    }
  }, 180_000);

  it('says which hop failed when the SSH host has no docker that answers', async () => {
    const dir = tempDir();
    const ssh = {
      kind: 'ssh',
      host: '127.0.0.1',
      port: sshd.ports[0],
      identityFile: sshd.key,
      knownHosts: sshd.knownHosts,
      sshConfig: false,
      agent: false,
    };
    const file = path.join(dir, 'matrix.yaml');
    const docker = { kind: 'docker', base, gpus: 'none', endpoint: 'unix:///nonexistent/docker.sock', connectTimeout: 5 };
    writeFileSync(
      file,
      [
        'version: 1',
        'targets:',
        '  - name: remote-docker',
        `    transport: ${JSON.stringify([ssh, docker])}`,
        '    probes: [sysinfo]',
        '',
      ].join('\n'),
    );
    const result = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], { env: dockerEnv() });
    expect(result.code).toBe(3);
    expect(result.stdout + result.stderr).toMatch(/TARGET_UNREACHABLE/);
    expect(result.stdout + result.stderr).toMatch(
      /docker --host unix:\/\/\/nonexistent\/docker\.sock system dial-stdio on ssh root@127\.0\.0\.1:\d+/,
    );
    expect(dialers()).toEqual([]);
  }, 120_000);
});
