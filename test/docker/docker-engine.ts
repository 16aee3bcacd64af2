/**
 * A Docker engine of the test suite's own: dockerd with its own socket, data root, exec root and
 * pid file under one temp dir, started once for the suite (test/global-setup-docker.ts) and stopped by
 * its PID at the end. The tests never use whatever engine DOCKER_HOST or the Docker context
 * points at: only this one, or one named by CUDAMATRIX_TEST_DOCKER_HOST.
 */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { findOnPath } from '../helpers.ts';

/** The environment for a docker CLI call that must reach `host` and nothing else. */
export function dockerCliEnv(host: string): NodeJS.ProcessEnv {
  return { ...process.env, DOCKER_HOST: host, DOCKER_CONTEXT: undefined, DOCKER_TLS_VERIFY: undefined, DOCKER_CERT_PATH: undefined };
}

/** Whether the engine at `host` answers (through the docker CLI). */
export function engineAnswers(host: string): boolean {
  try {
    execFileSync('docker', ['-H', host, 'version', '--format', '{{.Server.Version}}'], {
      stdio: 'pipe',
      timeout: 10_000,
      env: dockerCliEnv(host),
    });
    return true;
  } catch {
    return false;
  }
}

/** On PATH only (root's PATH has /usr/sbin), so that a narrowed PATH hides it. */
export function findDockerd(): string | undefined {
  return findOnPath('dockerd');
}

export interface TestEngine {
  /** unix:///…/docker.sock */
  host: string;
  pid: number;
  dir: string;
  /** Stops the engine by its PID, checks that it (and its containerd) are gone, removes its dir. Returns what went wrong. */
  stop(): Promise<string[]>;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function waitGone(pids: number[], ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (pids.some(isAlive)) {
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

function logTail(dir: string): string {
  const file = path.join(dir, 'dockerd.log');
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').slice(-15).join('\n') : '(no log)';
}

/**
 * Starts `dockerd --bridge=none --iptables=false` (as .ci/run used to: no network here) on a
 * socket in a new folder under `parent`. Throws, with dockerd's log, when it does not answer.
 * `extraSockets`: more API sockets (paths) it listens on, each removed when it stops (a stand-in
 * WSL distribution's /var/run/docker.sock: test/wsl/wsl-standin/engine.ts).
 */
export async function startTestEngine(parent: string, timeoutMs = 60_000, extraSockets: string[] = []): Promise<TestEngine> {
  const dockerd = findDockerd();
  if (!dockerd) throw new Error('dockerd is not installed (apt-get install docker.io)');
  if (process.getuid?.() !== 0) throw new Error('dockerd must be started as root, and the tests do not run as root');
  const dir = mkdtempSync(path.join(parent, 'cm-dockerd-'));
  const host = `unix://${path.join(dir, 'docker.sock')}`;
  const log = openSync(path.join(dir, 'dockerd.log'), 'a');
  const args = [
    '--bridge=none',
    '--iptables=false',
    '-H',
    host,
    ...extraSockets.flatMap((socket) => ['-H', `unix://${socket}`]),
    '--data-root',
    path.join(dir, 'data'),
    '--exec-root',
    path.join(dir, 'exec'),
    '--pidfile',
    path.join(dir, 'docker.pid'),
  ];
  // Not detached: a Ctrl-C on the terminal reaches dockerd too, and it shuts down.
  const child = spawn(dockerd, args, { stdio: ['ignore', log, log] });
  closeSync(log);
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = signal ?? `exit ${code}`));
  const pid = child.pid!;

  const stop = async (): Promise<string[]> => {
    const problems: string[] = [];
    const containerdPidFile = path.join(dir, 'exec', 'containerd', 'containerd.pid');
    const containerd = existsSync(containerdPidFile) ? Number(readFileSync(containerdPidFile, 'utf8').trim()) : undefined;
    if (isAlive(pid)) process.kill(pid, 'SIGTERM');
    if (!(await waitGone([pid], 30_000))) {
      problems.push(`dockerd (pid ${pid}) did not stop within 30 s of SIGTERM; killed`);
      process.kill(pid, 'SIGKILL');
      await waitGone([pid], 5_000);
    }
    if (containerd && isAlive(containerd) && !(await waitGone([containerd], 10_000))) {
      problems.push(`its containerd (pid ${containerd}) outlived dockerd; killed`);
      process.kill(containerd, 'SIGKILL');
      await waitGone([containerd], 5_000);
    }
    for (const [what, processId] of [
      ['dockerd', pid],
      ['containerd', containerd],
    ] as const) {
      if (processId && isAlive(processId)) problems.push(`the test engine's ${what} (pid ${processId}) is still running`);
    }
    // A dockerd that was killed leaves its mounts behind: undo them before removing the folder.
    const mounts = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((line) => line.split(' ')[1] ?? '')
      .filter((mountPoint) => mountPoint === dir || mountPoint.startsWith(`${dir}/`))
      .sort((left, right) => right.length - left.length);
    for (const mountPoint of mounts) {
      problems.push(`${mountPoint} was still mounted`);
      try {
        execFileSync('umount', ['-l', mountPoint], { stdio: 'ignore' });
      } catch {
        // reported above; the removal below says whether it mattered
      }
    }
    for (const socket of extraSockets) rmSync(socket, { force: true });
    try {
      await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    } catch (error) {
      problems.push(`could not remove ${dir}: ${(error as Error).message}`);
    }
    return problems;
  };

  const until = Date.now() + timeoutMs;
  for (;;) {
    if (exited !== undefined) {
      const tail = logTail(dir);
      await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }).catch(() => undefined);
      throw new Error(`dockerd exited (${exited}) before it answered on ${host}:\n${tail}`);
    }
    if (engineAnswers(host) && extraSockets.every((socket) => existsSync(socket))) return { host, pid, dir, stop };
    if (Date.now() > until) {
      const tail = logTail(dir);
      await stop();
      throw new Error(`dockerd did not answer on ${host} within ${timeoutMs / 1000} s:\n${tail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
