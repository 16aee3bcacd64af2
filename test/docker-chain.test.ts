/**
 * A chained target [ssh, docker] (issue 11): an SSH hop to a host, then a container on the Docker
 * engine of that host, reached as DOCKER_HOST=ssh:// reaches one: `docker system dial-stdio` run
 * over the SSH session carries the engine's API. Real parts only: the loopback sshd of the tests,
 * whose sessions get DOCKER_HOST pointing at the suite's own dockerd, and that engine.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type RunEvent } from '../events/events.ts';
import { buildProbe } from '../probes/build.ts';
import { nodeArch } from '../runners/local.ts';
import { runCli } from './cli.ts';
import { buildTestBase, dockerEnv, dockerToolsReady, leftoversOf, testDockerHost, testDockerUnavailable } from './docker.ts';
import { integrationAvailable, tempDir, testCacheDir } from './helpers.ts';
import { sshdReady, startSshd, type Sshd } from './sshd.ts';

const noEngine = testDockerUnavailable();
const ready = sshdReady() && dockerToolsReady() && integrationAvailable('a Docker engine for the tests', !noEngine, noEngine);

let sshd: Sshd;
let base: string;
beforeAll(async () => {
  if (!ready) return;
  const probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
  base = buildTestBase(probe.path);
  // The host's docker CLI uses the suite's engine, as a real host's uses its own.
  sshd = await startSshd(1, [`SetEnv DOCKER_HOST=${testDockerHost}`]);
}, 180_000);
afterAll(async () => {
  await sshd?.stop();
});

const dialers = () => {
  try {
    return execFileSync('pgrep', ['-f', 'docker system dial-stdio'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
};

describe.runIf(ready)('[ssh, docker]: the engine of an SSH host, through docker system dial-stdio', () => {
  it('runs the probes in a container on the remote engine, and leaves no container and no dial-stdio behind', async () => {
    const dir = tempDir();
    const ssh = { kind: 'ssh', host: '127.0.0.1', port: sshd.ports[0], identityFile: sshd.key, knownHosts: sshd.knownHosts, sshConfig: false, agent: false };
    const file = path.join(dir, 'matrix.yaml');
    writeFileSync(file, ['version: 1', 'targets:', '  - name: remote-docker', `    transport: ${JSON.stringify([ssh, { kind: 'docker', base, gpus: 'none' }])}`, '    probes: [sysinfo, event-timing]', ''].join('\n'));
    // The controller's own DOCKER_HOST points nowhere: only the SSH hop's engine can be meant.
    const r = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], { env: { ...dockerEnv(), DOCKER_HOST: 'unix:///nonexistent/docker.sock' } });
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const [run] = readdirSync(path.join(dir, 'runs'));
    const events: RunEvent[] = readEventLog(path.join(dir, 'runs', run!, 'events.jsonl'));
    const readyEvent = events.find((e) => e.type === 'target-ready');
    expect(readyEvent).toMatchObject({ platform: 'linux', session: expect.stringMatching(/^docker \S+ \(.*\) on docker system dial-stdio on ssh root@127\.0\.0\.1:\d+$/) });
    const cells = events.flatMap((e) => (e.type === 'cell-end' && e.planned ? [e] : []));
    expect(cells.map((c) => [c.probe, c.status])).toEqual([
      ['sysinfo', 'skipped'],
      ['event-timing', 'skipped'],
    ]);
    const sysinfo = Object.fromEntries(cells[0]!.records.flatMap((x) => (x.type === 'sysinfo' ? [[x.name, x.value]] : [])));
    expect(sysinfo.container).toBe('docker');
    const runId = (events[0] as { runId: string }).runId;
    expect(leftoversOf(runId)).toEqual({ containers: [], volumes: [] });
    expect(dialers()).toEqual([]);
  }, 300_000);

  it('says which hop failed when the SSH host has no docker that answers', async () => {
    const dir = tempDir();
    const ssh = { kind: 'ssh', host: '127.0.0.1', port: sshd.ports[0], identityFile: sshd.key, knownHosts: sshd.knownHosts, sshConfig: false, agent: false };
    const file = path.join(dir, 'matrix.yaml');
    const docker = { kind: 'docker', base, gpus: 'none', endpoint: 'unix:///nonexistent/docker.sock', connectTimeout: 5 };
    writeFileSync(file, ['version: 1', 'targets:', '  - name: remote-docker', `    transport: ${JSON.stringify([ssh, docker])}`, '    probes: [sysinfo]', ''].join('\n'));
    const r = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs')], { env: dockerEnv() });
    expect(r.code).toBe(3);
    expect(r.stdout + r.stderr).toMatch(/TARGET_UNREACHABLE/);
    expect(r.stdout + r.stderr).toMatch(/docker --host unix:\/\/\/nonexistent\/docker\.sock system dial-stdio on ssh root@127\.0\.0\.1:\d+/);
    expect(dialers()).toEqual([]);
  }, 120_000);
});
