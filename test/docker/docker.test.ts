/**
 * The Docker transport against a real Docker engine (docker.io): the suite's own dockerd
 * (--bridge=none --iptables=false, its own socket and data root), started by test/global-setup-docker.ts
 * under CUDAMATRIX_REQUIRE_INTEGRATION=1 or CUDAMATRIX_TEST_START_DOCKERD=1, or the engine
 * CUDAMATRIX_TEST_DOCKER_HOST names; never the one DOCKER_HOST or the Docker context points at.
 * Without one, these tests skip and say why. No image can be pulled: the base is built
 * FROM scratch here, and docker/Dockerfile is built on it with BASE pointing at it. There is no
 * NVIDIA runtime on this engine: the probes take the no-driver path, and a GPU request must fail
 * as NVIDIA_RUNTIME_MISSING.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildProbe } from '../../probes/build.ts';
import type { FactRecord, SysinfoRecord } from '../../probes/protocol.ts';
import { readEventLog, type RunEvent } from '../../events/events.ts';
import { noGpuAsAsked } from '../../run/execute.ts';
import { connectChain } from '../../transports/registry.ts';
import { nodeArch } from '../../transports/local.ts';
import { runCli, startCli, whenOutput } from '../cli.ts';
import {
  buildBareImage,
  buildTestBase,
  dockerToolsReady,
  docker,
  dockerEnv,
  leftoversOf,
  testDockerHost,
  testDockerUnavailable,
} from './docker.ts';
import { startHoldingProxy } from './docker-lifeline-proxy.ts';
import { integrationAvailable, tempDir, testCacheDir, validateJunit } from '../helpers.ts';

const noEngine = testDockerUnavailable();
const ready = dockerToolsReady() && integrationAvailable('a Docker engine for the tests', !noEngine, noEngine);

let base: string;
beforeAll(async () => {
  if (!ready) return;
  const probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
  base = buildTestBase(probe.path);
  // The first test must see docker/Dockerfile built: drop the probe images of earlier runs.
  const old = docker(['images', '-q', 'cudamatrix-probe']).trim().split('\n').filter(Boolean);
  if (old.length) docker(['rmi', '-f', ...old]);
}, 180_000);

function matrix(dir: string, targets: { name: string; transport: Record<string, unknown> | 'local' }[], probes = 'all'): string {
  const file = path.join(dir, 'matrix.yaml');
  const lines = ['version: 1', 'concurrency: 4', `defaults: {probes: ${probes}}`, 'targets:'];
  for (const target of targets)
    lines.push(`  - name: ${target.name}`, `    transport: ${target.transport === 'local' ? 'local' : JSON.stringify(target.transport)}`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

const inDocker = (extra: Record<string, unknown> = {}) => ({ kind: 'docker', base, gpus: 'none', ...extra });

async function runMatrix(file: string, dir: string, args: string[] = []) {
  const result = await runCli(
    ['run', '-m', file, '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'junit.xml'), ...args],
    {
      env: dockerEnv(),
    },
  );
  const runs = readdirSync(path.join(dir, 'runs'));
  const events: RunEvent[] = readEventLog(path.join(dir, 'runs', runs[0]!, 'events.jsonl'));
  return { ...result, events, runId: (events[0] as { runId: string }).runId };
}

describe.runIf(ready)('cudamatrix run in a container on a real Docker engine', () => {
  it('builds docker/Dockerfile on the local base, runs every probe inside, gives the local facts, and removes the container', async () => {
    const dir = tempDir();
    const result = await runMatrix(
      matrix(dir, [
        { name: 'in-docker', transport: inDocker() },
        { name: 'here', transport: 'local' },
      ]),
      dir,
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/building cudamatrix-probe:[0-9a-f]{16}-[0-9a-f]{12} FROM cudamatrix-test-base/);
    const cells = result.events.flatMap((e) => (e.type === 'cell-end' && e.planned ? [e] : []));
    const by = (target: string) => cells.filter((cell) => cell.target === target);
    // The container asks for no GPU (gpus: none): the cells a driver would have run say so before
    // the reason they share with here; a Windows-only probe is not for Linux either way.
    const asked = `${noGpuAsAsked('gpus: none')}: `;
    const unasked = (reason: string | undefined) => (reason?.startsWith(asked) ? reason.slice(asked.length) : reason);
    expect(
      by('in-docker')
        .filter((cell) => !cell.reason?.startsWith(asked))
        .map((cell) => cell.probe),
    ).toEqual(['windows-registry']);
    expect(by('in-docker').map((cell) => [cell.probe, cell.status, unasked(cell.reason)])).toEqual(
      by('here').map((cell) => [cell.probe, cell.status, cell.reason]),
    );
    // Facts that describe the filesystem the probe sees are left out of the comparison: which
    // CUDA runtime library the image has, and whether the machine itself is a container.
    const differs = new Set(['cudart_found', 'cudart_library', 'cudart_version', 'container', 'container_runtime']);
    const facts = (target: string) =>
      by(target).flatMap((cell) =>
        cell.records
          .filter(
            (record): record is SysinfoRecord | FactRecord =>
              (record.type === 'sysinfo' || record.type === 'fact') && !differs.has(record.name),
          )
          .map((record) => [cell.probe, record.name, record.value]),
      );
    expect(facts('in-docker')).toEqual(facts('here'));
    // Inside, sysinfo says it ran in a container, and that no NVIDIA runtime provided a GPU.
    const inside = Object.fromEntries(
      by('in-docker')[0]!.records.flatMap((record) => (record.type === 'sysinfo' ? [[record.name, record]] : [])),
    );
    expect(inside.container).toMatchObject({ value: 'docker', source: '/.dockerenv present' });
    expect(inside.container_runtime).toMatchObject({ value: null, reason: 'no NVIDIA container runtime markers' });
    const readyEvent = result.events.find((e) => e.type === 'target-ready' && e.target === 'in-docker');
    expect(readyEvent).toMatchObject({ platform: 'linux', probe: { uploaded: false, path: '/opt/cudamatrix/bin/cudaprobe' } });
    await validateJunit(readFileSync(path.join(dir, 'junit.xml'), 'utf8'));
    expect(leftoversOf(result.runId)).toEqual({ containers: [], volumes: [] });
  });

  it('builds the image once: a second run reuses it; gpus: none measuring nothing is a healthy node', async () => {
    const dir = tempDir();
    const nhc = path.join(dir, 'health.txt');
    const result = await runMatrix(matrix(dir, [{ name: 'again', transport: inDocker() }], '[sysinfo]'), dir, ['--reporter', `nhc:${nhc}`]);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain('building cudamatrix-probe');
    // The target asks for no GPU (logged on its target-start): no driver there is as asked.
    expect(result.events.find((e) => e.type === 'target-start')).toMatchObject({ noGpu: true });
    expect(readFileSync(nhc, 'utf8')).toBe('again 0 OK: 1 cells (1 skipped: the target asks for no GPU), 0 expectations passed\n');
  });

  it('asks for GPUs as docker run --gpus does, and an engine without the NVIDIA runtime says how to get it', async () => {
    const dir = tempDir();
    const result = await runMatrix(
      matrix(
        dir,
        [
          { name: 'gpu', transport: inDocker({ gpus: 'all' }) },
          { name: 'ok', transport: inDocker() },
        ],
        '[sysinfo]',
      ),
      dir,
    );
    expect(result.code).toBe(3);
    const error = result.events.find((e) => e.type === 'target-error');
    expect(error).toMatchObject({ target: 'gpu', code: 'NVIDIA_RUNTIME_MISSING' });
    if (error?.type !== 'target-error') throw new Error('no target-error');
    expect(error.message).toContain('could not select device driver');
    expect(error.message).toContain('Install the NVIDIA Container Toolkit');
    expect(error.message).toContain('nvidia-ctk runtime configure --runtime=docker');
    expect(result.events.find((e) => e.type === 'cell-end' && e.target === 'ok')).toMatchObject({ status: 'skipped' });
    expect(leftoversOf(result.runId)).toEqual({ containers: [], volumes: [] });
  });

  it('copies the probe into a named image the engine has', async () => {
    const dir = tempDir();
    const result = await runMatrix(
      matrix(dir, [{ name: 'named', transport: { kind: 'docker', image: base, gpus: 'none' } }], '[sysinfo, sync-latency]'),
      dir,
    );
    expect(result.code).toBe(0);
    expect(result.events.find((e) => e.type === 'target-ready')).toMatchObject({
      probe: { uploaded: true, path: '/opt/cudamatrix/bin/cudaprobe' },
    });
    expect(result.events.filter((e) => e.type === 'cell-end').map((e) => e.type === 'cell-end' && e.status)).toEqual([
      'skipped',
      'skipped',
    ]);
    expect(leftoversOf(result.runId)).toEqual({ containers: [], volumes: [] });
  });

  it('reports a probe that fails in its container as an error, and removes the container', async () => {
    const dir = tempDir();
    // Valid for the matrix, refused by the probe: a safety cap smaller than one chunk.
    const file = matrix(dir, [{ name: 'failing', transport: inDocker() }], '[pinned-ceiling]');
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace(
        'defaults: {probes: [pinned-ceiling]}',
        'defaults: {probes: [pinned-ceiling], params: {pinned-ceiling: {max_gib: 0.1}}}',
      ),
    );
    const result = await runMatrix(file, dir);
    // A parameter the probe refuses is a configuration error.
    expect(result.code).toBe(2);
    expect(result.events.find((e) => e.type === 'cell-end' && e.probe === 'pinned-ceiling')).toMatchObject({
      status: 'error',
      errorCode: 'USAGE',
      reason: 'parameters chunk_mib and max_gib must be positive, max_gib at least one chunk',
    });
    expect(leftoversOf(result.runId)).toEqual({ containers: [], volumes: [] });
  });

  it('says so when cudaprobe cannot run in the named image at all, and removes the container', async () => {
    const dir = tempDir();
    // busybox alone: cudaprobe (dynamically linked) cannot start without a C library.
    const result = await runMatrix(
      matrix(dir, [{ name: 'bare', transport: { kind: 'docker', image: buildBareImage(), gpus: 'none' } }], '[sysinfo]'),
      dir,
    );
    expect(result.code).toBe(3);
    expect(result.events.find((e) => e.type === 'target-error')).toMatchObject({
      code: 'TARGET_UNREACHABLE',
      message: expect.stringContaining('cudaprobe cannot run in image cudamatrix-test-bare: its container exited at once'),
    });
    expect(leftoversOf(result.runId)).toEqual({ containers: [], volumes: [] });
  });

  it('refuses an image the engine does not have (nothing is pulled unless pull: true)', async () => {
    const dir = tempDir();
    const result = await runMatrix(
      matrix(dir, [{ name: 'missing', transport: { kind: 'docker', image: 'cudamatrix-no-such-image:1', gpus: 'none' } }], '[sysinfo]'),
      dir,
    );
    expect(result.code).toBe(3);
    expect(result.events.find((e) => e.type === 'target-error')).toMatchObject({
      code: 'DOCKER_IMAGE_MISSING',
      message: expect.stringContaining('has no image cudamatrix-no-such-image:1; pull it there first, or set pull: true'),
    });
  });

  it('reaches the engine through a context made by the Docker CLI itself', async () => {
    const config = tempDir('cm-dockercli-');
    execFileSync('docker', ['context', 'create', 'cudamatrix-test', '--docker', `host=${testDockerHost}`], {
      env: { ...process.env, DOCKER_CONFIG: config },
      stdio: 'ignore',
    });
    const dir = tempDir();
    const file = matrix(dir, [{ name: 'via-context', transport: inDocker({ context: 'cudamatrix-test' }) }], '[sysinfo]');
    // No DOCKER_HOST: the context alone leads to the engine.
    const result = await runCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'junit.xml')], {
      env: { ...dockerEnv(), DOCKER_HOST: undefined, DOCKER_CONFIG: config },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`on ${testDockerHost}`);
  });

  it('says which engine it tried, and why, when none answers', async () => {
    const dir = tempDir();
    const result = await runMatrix(
      matrix(dir, [{ name: 'nowhere', transport: { kind: 'docker', endpoint: `unix://${dir}/no.sock`, gpus: 'none' } }], '[sysinfo]'),
      dir,
    );
    expect(result.code).toBe(3);
    expect(result.events.find((e) => e.type === 'target-error')).toMatchObject({
      code: 'TARGET_UNREACHABLE',
      message: expect.stringContaining(
        `cannot reach the Docker engine at unix://${dir}/no.sock (from matrix): no socket there (is dockerd running?)`,
      ),
    });
  });

  it('a stale socket (a file with nothing listening) gets the "is dockerd running?" hint a missing one gets', async () => {
    const dir = tempDir();
    const sock = path.join(dir, 'stale.sock');
    // A server that dies without unlinking its socket, as a killed dockerd does.
    const died = spawnSync(
      process.execPath,
      ['-e', `require('net').createServer().listen(${JSON.stringify(sock)}, () => process.kill(process.pid, 'SIGKILL'))`],
      { stdio: 'ignore' },
    );
    expect(died.signal).toBe('SIGKILL');
    expect(existsSync(sock)).toBe(true);
    const result = await runMatrix(
      matrix(dir, [{ name: 'stale', transport: { kind: 'docker', endpoint: `unix://${sock}`, gpus: 'none' } }], '[sysinfo]'),
      dir,
    );
    expect(result.code).toBe(3);
    expect(result.events.find((e) => e.type === 'target-error')).toMatchObject({
      code: 'TARGET_UNREACHABLE',
      message: expect.stringContaining(
        `cannot reach the Docker engine at unix://${sock} (from matrix): nothing is listening on the socket: a stale socket file, left by a dockerd that is no longer running (is dockerd running?)`,
      ),
    });
  });

  it('pulls no base for docker/Dockerfile unless pull: true: a base the engine lacks is named, with the fixes', async () => {
    const dir = tempDir();
    const missing = 'cudamatrix-test-no-such-base:1';
    const file = matrix(
      dir,
      [
        { name: 'no-base', transport: { kind: 'docker', base: missing, gpus: 'none' } },
        { name: 'default-base', transport: { kind: 'docker', gpus: 'none' } },
        { name: 'pulled-base', transport: { kind: 'docker', base: missing, gpus: 'none', pull: true } },
      ],
      '[sysinfo]',
    );
    const result = await runMatrix(file, dir);
    expect(result.code).toBe(3);
    const errors = Object.fromEntries(result.events.flatMap((e) => (e.type === 'target-error' ? [[e.target, e]] : [])));
    expect(errors['no-base']).toMatchObject({
      code: 'DOCKER_IMAGE_MISSING',
      message:
        `the Docker engine at ${testDockerHost} has no image ${missing}, the base docker/Dockerfile is built FROM, and nothing is pulled unless pull: true. ` +
        `Pull it on that engine first (docker pull ${missing}), set pull: true on this target, or name a base the engine has (base: ...; it needs glibc)`,
    });
    expect(errors['default-base']).toMatchObject({
      code: 'DOCKER_IMAGE_MISSING',
      message: expect.stringContaining(
        `has no image nvidia/cuda:12.6.3-base-ubuntu24.04, the base docker/Dockerfile is built FROM (the default base), and nothing is pulled unless pull: true`,
      ),
    });
    // With pull: true it is pulled (here it cannot be: no network), and no build is tried.
    expect(errors['pulled-base']).toMatchObject({
      code: 'TARGET_UNREACHABLE',
      message: expect.stringContaining(`pulling ${missing} on ${testDockerHost} failed: `),
    });
    expect(result.stderr).toContain(`pulling ${missing} on ${testDockerHost} ...`);
    expect(result.stderr).not.toMatch(/building cudamatrix-probe:\S+ FROM (cudamatrix-test-no-such-base|nvidia)/);
    expect(docker(['images', '-q', 'cudamatrix-test-no-such-base']).trim()).toBe('');
    expect(leftoversOf(result.runId)).toEqual({ containers: [], volumes: [] });
  });

  it('stops on Ctrl-C, writes what finished, and removes the container', async () => {
    const dir = tempDir();
    const file = matrix(
      dir,
      Array.from({ length: 3 }, (_, i) => ({ name: `c${i}`, transport: inDocker() })),
    );
    const { child, done } = startCli(['run', '-m', file, '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'junit.xml')], {
      env: dockerEnv(),
    });
    await whenOutput(child, '[2/', () => child.kill('SIGINT'));
    const result = await done;
    expect(result.code).toBe(130);
    const events = readEventLog(path.join(dir, 'runs', readdirSync(path.join(dir, 'runs'))[0]!, 'events.jsonl'));
    expect(events.at(-1)).toMatchObject({ type: 'run-end', interrupted: true });
    expect(leftoversOf((events[0] as { runId: string }).runId)).toEqual({ containers: [], volumes: [] });
  });

  it('doctor --reap removes what a crashed run left behind when the engine never learnt of the crash', async () => {
    // A crashed run's container normally goes by itself (its connection ends: the lifeline,
    // test/docker/docker-lifeline.test.ts). Not when the engine still believes that connection open:
    // the run reaches it through a proxy that holds the engine's side of each connection.
    const proxy = await startHoldingProxy(testDockerHost!);
    try {
      const dir = tempDir();
      const file = matrix(dir, [{ name: 'crash', transport: inDocker() }]);
      const { child, done } = startCli(
        ['run', '-m', file, '--results-dir', path.join(dir, 'runs'), '--junit', path.join(dir, 'junit.xml')],
        { env: { ...dockerEnv(), DOCKER_HOST: proxy.host } },
      );
      // A crash: nothing gets to clean up.
      await whenOutput(child, '[1/', () => child.kill('SIGKILL'));
      await done;
      const runId = (readEventLog(path.join(dir, 'runs', readdirSync(path.join(dir, 'runs'))[0]!, 'events.jsonl'))[0] as { runId: string })
        .runId;
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(proxy.held()).toBeGreaterThan(0);
      expect(leftoversOf(runId).containers).toHaveLength(1);
      // --endpoint, not DOCKER_HOST (which leads nowhere here), names the engine.
      const reap = await runCli(['doctor', '--reap', '--endpoint', testDockerHost!], {
        env: { ...dockerEnv(), DOCKER_HOST: `unix://${dir}/nowhere.sock` },
      });
      expect(reap.stderr).toBe('');
      expect(reap.code).toBe(0);
      expect(reap.stdout).toMatch(new RegExp(`removed \\S+ \\(run ${runId}\\)`));
      expect(leftoversOf(runId)).toEqual({ containers: [], volumes: [] });
    } finally {
      await proxy.close();
    }
  });

  it('doctor --target speaks of the engine and the container, not of host keys', async () => {
    const dir = tempDir();
    const result = await runCli(
      ['doctor', '--target', 'doctor-docker', '-m', matrix(dir, [{ name: 'doctor-docker', transport: inDocker() }])],
      {
        env: dockerEnv(),
      },
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.stdout).toContain(`✓ reachable    docker `);
    expect(result.stdout).toContain(`(cudamatrix-probe:`);
    expect(result.stdout).toContain(` on ${testDockerHost}: engine reached, container started`);
    expect(result.stdout).not.toMatch(/host key|authenticat/i);
    // The transport in words, not JSON (issue 20).
    expect(result.stdout).toMatch(
      new RegExp(`^i transport +docker \\(base ${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, gpus none\\)$`, 'm'),
    );
    // gpus: none asks for no GPU: no driver there is what was asked, not a fault to fix (issue 20).
    expect(result.stdout).toMatch(/^i driver +none, as asked: the target requests no GPU \(gpus: none in the matrix\)/m);
    expect(result.stdout).not.toMatch(/NVIDIA Container Toolkit|✗/);
    expect(result.stdout).toContain('it asks for no GPU (gpus: none)');
    expect(result.code).toBe(0);
    expect(docker(['ps', '-aq', '--filter', 'label=cudamatrix.target=doctor-docker']).trim()).toBe('');
  });

  it('doctor --target on an engine without the base names the base and its fixes, not the socket (new-user trial)', async () => {
    const dir = tempDir();
    const result = await runCli(
      [
        'doctor',
        '--target',
        'no-base',
        '-m',
        matrix(dir, [{ name: 'no-base', transport: inDocker({ base: 'cudamatrix-test-absent-base:1' }) }]),
      ],
      { env: dockerEnv() },
    );
    expect(result.code).toBe(3);
    expect(result.stdout).toMatch(/^✗ DOCKER_IMAGE_MISSING .*has no image cudamatrix-test-absent-base:1/m);
    // The engine answered: the guess that its socket is wrong would send the user the wrong way.
    expect(result.stdout).not.toContain('check the endpoint');
  });
});

describe.runIf(ready)('Docker sessions', () => {
  it('kills a hung command at its timeout, keeps the container usable, and removes it at the end', async () => {
    const probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
    const session = await connectChain([{ kind: 'docker', base, gpus: 'none', endpoint: testDockerHost }], {
      target: 'hang',
      runId: 'docker-timeout-test',
      binaryFor: async () => ({ path: probe.path, hash: probe.hash }),
    });
    try {
      // The container: labelled with the run, no network, docker-init as PID 1.
      const id = docker(['ps', '-q', '--filter', 'label=cudamatrix.run-id=docker-timeout-test']).trim();
      const inspected = JSON.parse(docker(['inspect', id]))[0];
      expect(inspected.HostConfig).toMatchObject({ NetworkMode: 'none', Init: true, AutoRemove: true });
      // Its main process ends with this session's connection (the lifeline).
      expect(inspected.Config).toMatchObject({ OpenStdin: true, StdinOnce: true });
      expect(inspected.Config.Labels).toMatchObject({ 'cudamatrix.run-id': 'docker-timeout-test', 'cudamatrix.target': 'hang' });
      const hung = await session.exec(['/bin/busybox', 'sh', '-c', '/bin/busybox sleep 300 & /bin/busybox sleep 301'], { timeoutMs: 1000 });
      expect(hung).toMatchObject({ timedOut: true, exitCode: null, signal: 'SIGKILL' });
      expect(hung.durationMs).toBeLessThan(15_000);
      const after = await session.exec(['/bin/busybox', 'sh', '-c', 'echo still here; /bin/busybox ps'], {});
      expect(after.exitCode).toBe(0);
      expect(after.stdout).toContain('still here');
      expect(after.stdout).not.toContain('sleep 30');
      const both = await session.exec(['/bin/busybox', 'sh', '-c', 'echo out; echo err >&2; exit 5']);
      expect(both).toMatchObject({ exitCode: 5, stdout: 'out\n', stderr: 'err\n' });
      // Files in and out through the archive API.
      const dir = tempDir();
      writeFileSync(path.join(dir, 'in.txt'), 'through the archive API\n');
      await session.put(path.join(dir, 'in.txt'), '/tmp/cudamatrix-run/in.txt');
      await session.get('/tmp/cudamatrix-run/in.txt', path.join(dir, 'out.txt'));
      expect(readFileSync(path.join(dir, 'out.txt'), 'utf8')).toBe('through the archive API\n');
    } finally {
      await session[Symbol.asyncDispose]();
    }
    expect(leftoversOf('docker-timeout-test')).toEqual({ containers: [], volumes: [] });
  });
});
