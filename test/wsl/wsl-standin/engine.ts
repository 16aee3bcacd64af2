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
 * it never shares a data root with the suite's engine (test/global-setup-docker.ts) or any other; it
 * runs with `--bridge=none --iptables=false` (no network here), is stopped by its PID, and its
 * folder is removed: test/docker/docker-engine.ts startTestEngine, with the distribution's socket as an extra -H.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestEngine, type TestEngine } from '../../docker/docker-engine.ts';
import type { StandinMachine } from './machine.ts';

/** The distribution's engine socket, as the distribution sees it. */
export const DISTRO_DOCKER_SOCKET = '/var/run/docker.sock';

export interface DistroEngine extends TestEngine {
  /** The same engine's socket in the distribution's root filesystem (a path of this machine). */
  distroSocket: string;
}

/**
 * Starts dockerd for the distribution `name` of `machine` (made with `docker: true`). Throws,
 * with dockerd's log, when it does not answer within `timeoutMs`.
 */
export async function startDistroEngine(
  machine: StandinMachine,
  name: string,
  options: { parent?: string; timeoutMs?: number } = {},
): Promise<DistroEngine> {
  const runDir = path.join(machine.distroRoot(name), 'run');
  if (!existsSync(runDir)) throw new Error(`the stand-in distribution ${name} was not made with docker: true (no /run in it)`);
  // /var/run is a link to /run in the distribution: the socket is made through the real folder.
  const distroSocket = path.join(runDir, 'docker.sock');
  const engine = await startTestEngine(options.parent ?? tmpdir(), options.timeoutMs ?? 60_000, [distroSocket]);
  return { ...engine, distroSocket };
}
