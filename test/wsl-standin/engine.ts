/**
 * Docker Engine "inside" a stand-in WSL distribution (./machine.ts, `docker: true`): a dockerd of
 * the test's own, run on this machine (not in the chroot: the stand-in has no init, cgroups or
 * containerd of its own), that listens on two API sockets: one in its own folder, for the test
 * to look at the engine with, and the distribution's /var/run/docker.sock (in its root
 * filesystem), where the docker CLI in the distribution finds it by default, as it finds Docker
 * Engine installed in a real WSL 2 distribution. What runs in the distribution (`docker system
 * dial-stdio`) reaches the engine only through that socket.
 *
 * Its socket, data root, exec root and pid file are in a folder of its own under the temp dir, so
 * it never shares a data root with the suite's engine (test/global-setup.ts) or any other; it
 * runs with `--bridge=none --iptables=false` (no network here), is stopped by its PID, and its
 * folder is removed (test/docker-engine.ts's rules: containerd checked gone, mounts undone).
 */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { engineAnswers, findDockerd, type TestEngine } from '../docker-engine.ts';
import type { StandinMachine } from './machine.ts';

/** The distribution's engine socket, as the distribution sees it. */
export const DISTRO_DOCKER_SOCKET = '/var/run/docker.sock';

export interface DistroEngine extends TestEngine {
  /** The same engine's socket in the distribution's root filesystem (a path of this machine). */
  distroSocket: string;
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
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/**
 * Starts dockerd for the distribution `name` of `machine` (made with `docker: true`). Throws,
 * with dockerd's log, when it does not answer within `timeoutMs`.
 */
export async function startDistroEngine(machine: StandinMachine, name: string, o: { parent?: string; timeoutMs?: number } = {}): Promise<DistroEngine> {
  const dockerd = findDockerd();
  if (!dockerd) throw new Error('dockerd is not installed (apt-get install docker.io)');
  if (process.getuid?.() !== 0) throw new Error('dockerd must be started as root');
  const runDir = path.join(machine.distroRoot(name), 'run');
  if (!existsSync(runDir)) throw new Error(`the stand-in distribution ${name} was not made with docker: true (no /run in it)`);
  const dir = mkdtempSync(path.join(o.parent ?? tmpdir(), 'cm-wsl-dockerd-'));
  const host = `unix://${path.join(dir, 'docker.sock')}`;
  // /var/run is a link to /run in the distribution: the socket is made through the real folder.
  const distroSocket = path.join(runDir, 'docker.sock');
  mkdirSync(runDir, { recursive: true });
  const logFile = path.join(dir, 'dockerd.log');
  const log = openSync(logFile, 'a');
  const args = [
    '--bridge=none',
    '--iptables=false',
    '-H',
    host,
    '-H',
    `unix://${distroSocket}`,
    '--data-root',
    path.join(dir, 'data'),
    '--exec-root',
    path.join(dir, 'exec'),
    '--pidfile',
    path.join(dir, 'docker.pid'),
  ];
  const child = spawn(dockerd, args, { stdio: ['ignore', log, log] });
  closeSync(log);
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = signal ?? `exit ${code}`));
  const pid = child.pid!;
  const tail = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').slice(-15).join('\n') : '(no log)');

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
    const mounts = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[1] ?? '')
      .filter((m) => m === dir || m.startsWith(`${dir}/`))
      .sort((a, b) => b.length - a.length);
    for (const m of mounts) {
      problems.push(`${m} was still mounted`);
      try {
        execFileSync('umount', ['-l', m], { stdio: 'ignore' });
      } catch {
        // reported above
      }
    }
    rmSync(distroSocket, { force: true });
    try {
      await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    } catch (error) {
      problems.push(`could not remove ${dir}: ${(error as Error).message}`);
    }
    return problems;
  };

  const until = Date.now() + (o.timeoutMs ?? 60_000);
  for (;;) {
    if (exited !== undefined) {
      const said = tail();
      await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }).catch(() => undefined);
      throw new Error(`dockerd exited (${exited}) before it answered on ${host}:\n${said}`);
    }
    if (engineAnswers(host) && existsSync(distroSocket)) return { host, pid, dir, stop, distroSocket };
    if (Date.now() > until) {
      const said = tail();
      await stop();
      throw new Error(`dockerd did not answer on ${host} within ${(o.timeoutMs ?? 60_000) / 1000} s:\n${said}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
