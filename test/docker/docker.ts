/**
 * The Docker engine the tests use, and a base image made here: no image can be pulled, so the
 * base is built FROM scratch from a root filesystem assembled from this machine: busybox-static,
 * the shared libraries cudaprobe needs (as ldd names them) and /etc/os-release.
 *
 * The engine is the suite's own (started by test/global-setup-docker.ts) or the one
 * CUDAMATRIX_TEST_DOCKER_HOST names; never the one DOCKER_HOST or the Docker context points at.
 * Every docker CLI call here names it with -H, and CLI runs get it as DOCKER_HOST (dockerEnv).
 */
import { execFile, execFileSync, type ExecFileSyncOptions } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { dockerCliEnv, engineAnswers } from './docker-engine.ts';
import { commandsAvailable, findOnPath, tempDir } from '../helpers.ts';

/** The engine for the tests, or null (then testDockerUnavailable says why). */
export const testDockerHost: string | null = inject('dockerHost');

/** Why there is no engine for the tests ('' when there is one that answers). */
export function testDockerUnavailable(): string {
  if (testDockerHost === null) return inject('dockerUnavailable');
  return engineAnswers(testDockerHost) ? '' : `the Docker engine for the tests at ${testDockerHost} does not answer`;
}

function host(): string {
  if (testDockerHost === null) throw new Error(`no Docker engine for the tests: ${inject('dockerUnavailable')}`);
  return testDockerHost;
}

/**
 * The environment for a cudamatrix run that must reach the test engine: DOCKER_HOST set to it,
 * and no context or TLS settings of this machine's own Docker setup.
 */
export function dockerEnv(): NodeJS.ProcessEnv {
  return { DOCKER_HOST: host(), DOCKER_CONTEXT: undefined, DOCKER_TLS_VERIFY: undefined, DOCKER_CERT_PATH: undefined };
}

/** The docker CLI, on the test engine. */
export function docker(args: string[], options: ExecFileSyncOptions = {}): string {
  return dockerOn(host(), args, options);
}

/** The docker CLI, on the engine at `on` (the test engine, or one a test started for itself). */
export function dockerOn(on: string, args: string[], options: ExecFileSyncOptions = {}): string {
  return String(
    execFileSync('docker', ['-H', on, ...args], {
      stdio: 'pipe',
      timeout: 120_000,
      ...options,
      env: { ...dockerCliEnv(on), ...options.env },
    }),
  );
}

const BUSYBOX = findOnPath('busybox');

/**
 * Whether the Docker tests have the tools they run here: the docker CLI (they look at the engine
 * with it), and busybox-static and ldd (the base image is built from busybox and the libraries
 * ldd names). When not, they skip saying what is missing, or fail under
 * CUDAMATRIX_REQUIRE_INTEGRATION=1.
 */
export function dockerToolsReady(): boolean {
  return commandsAvailable('the Docker tests', { docker: 'docker.io', busybox: 'busybox-static', ldd: 'libc-bin' });
}

/** Builds (once per content) an image with busybox and the libraries `binary` needs. */
export function buildTestBase(binary: string, tag = 'cudamatrix-test-base', on = host()): string {
  const dir = tempDir('cm-rootfs-');
  const root = path.join(dir, 'rootfs');
  mkdirSync(path.join(root, 'bin'), { recursive: true });
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  mkdirSync(path.join(root, 'tmp'), { recursive: true });
  copyFileSync(BUSYBOX!, path.join(root, 'bin', 'busybox'));
  if (existsSync('/etc/os-release')) copyFileSync(realpathSync('/etc/os-release'), path.join(root, 'etc', 'os-release'));
  const libs = execFileSync('ldd', [binary], { encoding: 'utf8' })
    .split('\n')
    .map((line) => /(\/\S+) \(0x/.exec(line)?.[1])
    .filter((library): library is string => Boolean(library));
  for (const lib of libs) {
    mkdirSync(path.join(root, path.dirname(lib)), { recursive: true });
    copyFileSync(realpathSync(lib), path.join(root, lib));
  }
  // VOLUME: every container gets an anonymous volume, so that the tests see it removed too.
  writeFileSync(path.join(dir, 'Dockerfile'), 'FROM scratch\nCOPY rootfs/ /\nVOLUME /data\n');
  dockerOn(on, ['build', '-q', '-t', tag, dir]);
  return tag;
}

/**
 * An image FROM `base` whose probes each wait `delayMs` first: cudaprobe's test hook
 * (CUDAPROBE_TEST_DELAY_MS) set in the image, as a server-side setting (the docker transport
 * passes no environment of the run into the container, as sshd's SetEnv does for SSH tests).
 */
export function buildDelayImage(delayMs: number, base: string, on = host()): string {
  const tag = `cudamatrix-test-delay-${delayMs}`;
  const dir = tempDir('cm-delay-');
  writeFileSync(path.join(dir, 'Dockerfile'), `FROM ${base}\nENV CUDAPROBE_TEST_DELAY_MS=${delayMs}\n`);
  dockerOn(on, ['build', '-q', '-t', tag, dir]);
  return tag;
}

/** Containers and volumes a run left on the engine. */
export function leftoversOf(runId: string, on = host()): { containers: string[]; volumes: string[] } {
  const containers = dockerOn(on, ['ps', '-aq', '--filter', `label=cudamatrix.run-id=${runId}`])
    .trim()
    .split('\n')
    .filter(Boolean);
  const volumes = dockerOn(on, ['volume', 'ls', '-q', '--filter', 'dangling=true']).trim().split('\n').filter(Boolean);
  return { containers, volumes };
}

/** An image with busybox alone: no C library, so cudaprobe cannot start in it. */
export function buildBareImage(tag = 'cudamatrix-test-bare'): string {
  const dir = tempDir('cm-bare-');
  mkdirSync(path.join(dir, 'rootfs', 'bin'), { recursive: true });
  copyFileSync(BUSYBOX!, path.join(dir, 'rootfs', 'bin', 'busybox'));
  writeFileSync(path.join(dir, 'Dockerfile'), 'FROM scratch\nCOPY rootfs/ /\nVOLUME /data\n');
  docker(['build', '-q', '-t', tag, dir]);
  return tag;
}

/** Waits until `check()` holds, polling every 100 ms, for at most `ms`; returns how long it took. */
export async function until(what: string, check: () => boolean | Promise<boolean>, ms = 60_000): Promise<number> {
  const from = Date.now();
  while (!(await check())) {
    if (Date.now() - from > ms) throw new Error(`${what}: not within ${ms / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return Date.now() - from;
}

/** The container of a target (by cudamatrix's target label) on an engine, '' when there is none. */
export function containerOfTarget(on: (args: string[]) => string, target: string): string {
  return on(['ps', '-aq', '--filter', `label=cudamatrix.target=${target}`]).trim();
}

/**
 * Whether `cudaprobe run PROBE` runs in the target's container now (docker top). With `on`
 * asynchronous (dockerOnAsync) the test process keeps serving what it serves meanwhile: a
 * holding proxy in it (test/docker/docker-lifeline-proxy.ts) forwards a run's every engine call, and a
 * loop of synchronous docker commands starved it under load (docker-reap's run then never
 * reached its container within 60 s).
 */
export async function probeRunsIn(on: (args: string[]) => string | Promise<string>, target: string, probe = 'sysinfo'): Promise<boolean> {
  try {
    const id = (await on(['ps', '-aq', '--filter', `label=cudamatrix.target=${target}`])).trim();
    return id !== '' && (await on(['top', id])).includes(`cudaprobe run ${probe}`);
  } catch {
    return false; // not started yet, or gone
  }
}

const execFileAsync = promisify(execFile);

/** dockerOn without blocking the test process. */
export async function dockerOnAsync(on: string, args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('docker', ['-H', on, ...args], { timeout: 120_000, env: dockerCliEnv(on) });
  return String(stdout);
}
