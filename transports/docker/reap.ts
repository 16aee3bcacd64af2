/**
 * `cudamatrix doctor --reap`: the containers that runs left on an engine, and which of them can
 * go. A run's containers normally go without it: each ends with its run's connection to the
 * engine, and the engine removes it (the lifeline, ./transport.ts). What is left is what that
 * cannot end: containers of a connection the engine still believes open (the controller's
 * machine vanished without closing it, a hop that hangs, a frozen cudamatrix), of an engine
 * that was frozen or restarted, and of older cudamatrix versions. An engine may be shared (a CI
 * engine used by runners on several machines): a container is removed only when its run is
 * provably over, never because it was started elsewhere:
 *
 * - started on this machine (same host name, same boot, same PID namespace) by a cudamatrix
 *   process that is gone (its pid is free, or now another process: its start time differs);
 * - or older than a bound the user gives (--older-than), whoever started it.
 *
 * Everything else is kept, and the output says why.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type Dockerode from 'dockerode';
import DockerClient from 'dockerode';
import { CudamatrixError } from '../../core/errors.ts';
import { processAlive } from '../../core/lock.ts';
import { BoundedEngine, DEFAULT_CALL_TIMEOUT_S, DEFAULT_CONNECT_TIMEOUT_S, engineWords, removeContainer } from './bounded-calls.ts';
import { resolveEngine, unreachable } from './engine.ts';

export const RUN_LABEL = 'cudamatrix.run-id';
const HOST = 'cudamatrix.host';
const PID = 'cudamatrix.pid';
/** The process's start time (clock ticks after boot, /proc/PID/stat): a reused pid is another process. */
const PID_START = 'cudamatrix.pid-start';
const BOOT = 'cudamatrix.boot-id';
const PID_NS = 'cudamatrix.pid-ns';

function readOr(read: () => string): string | undefined {
  try {
    return read().trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Start time of a process, from /proc (Linux); undefined elsewhere or when it is gone. */
export function processStart(pid: number): string | undefined {
  const stat = readOr(() => readFileSync(`/proc/${pid}/stat`, 'utf8'));
  // Fields after the command name (which may hold spaces and parentheses): state is field 3, starttime 22.
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

const bootId = () => readOr(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8'));
const pidNamespace = () => readOr(() => readlinkSync('/proc/self/ns/pid'));

/** The labels that say which process on which machine a container belongs to. */
export function runLabels(): Record<string, string> {
  const labels: Record<string, string> = { [HOST]: hostname(), [PID]: String(process.pid) };
  const start = processStart(process.pid);
  const boot = bootId();
  const ns = pidNamespace();
  if (start) labels[PID_START] = start;
  if (boot) labels[BOOT] = boot;
  if (ns) labels[PID_NS] = ns;
  return labels;
}

/** "3 h 20 min", "45 s". */
export function formatAge(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 120) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 120) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`;
  return `${Math.floor(hours / 24)} d${hours % 24 ? ` ${hours % 24} h` : ''}`;
}

/** Whether a container's run is provably over, and why (or why that cannot be told). */
export function reapVerdict(labels: Record<string, string>, ageMs: number, olderThanMs?: number): { remove: boolean; why: string } {
  const age = `started ${formatAge(ageMs)} ago`;
  if (olderThanMs !== undefined && ageMs > olderThanMs)
    return { remove: true, why: `${age}, more than --older-than ${formatAge(olderThanMs)}` };
  const younger = olderThanMs !== undefined ? `; ${age}, less than --older-than ${formatAge(olderThanMs)}` : '';
  const host = labels[HOST];
  const pid = Number(labels[PID]);
  if (!host || !(pid > 0)) return { remove: false, why: `it does not say which process started it (no ${HOST}/${PID} labels)${younger}` };
  if (host !== hostname()) {
    return {
      remove: false,
      why: `its run was started on host "${host}", not on this one ("${hostname()}"): whether that cudamatrix still runs cannot be told from here${younger}`,
    };
  }
  const boot = labels[BOOT];
  if (boot && bootId() && boot !== bootId())
    return { remove: true, why: `its cudamatrix (pid ${pid}) ran before this machine last booted` };
  const ns = labels[PID_NS];
  if (ns && pidNamespace() && ns !== pidNamespace()) {
    return {
      remove: false,
      why: `its run was started in another PID namespace (${ns}, a container?) of this host, where pid ${pid} cannot be looked up from here${younger}`,
    };
  }
  if (pid === process.pid) return { remove: false, why: `it belongs to this very process${younger}` };
  if (!processAlive(pid)) return { remove: true, why: `its cudamatrix (pid ${pid}) is no longer running` };
  const start = labels[PID_START];
  if (start && processStart(pid) !== undefined && processStart(pid) !== start)
    return { remove: true, why: `its cudamatrix (pid ${pid}) is gone; that pid is now another process` };
  return { remove: false, why: `its cudamatrix (pid ${pid}) is still running${younger}` };
}

export interface ReapResult {
  removed: string[];
  kept: string[];
  endpoint: string;
  /** Where the endpoint came from: "--endpoint", "DOCKER_HOST", "context lab", "default". */
  source: string;
}

/** Removes the containers of runs that are provably over (see the top of this file). */
export async function reapContainers(
  where: { endpoint?: string; context?: string } = {},
  options: { olderThanMs?: number; given?: string; connectTimeoutS?: number; callTimeoutS?: number } = {},
): Promise<ReapResult> {
  const engine = resolveEngine(where, options.given ?? '--endpoint');
  const e = new BoundedEngine(
    new DockerClient(engine.options),
    engine,
    (options.connectTimeoutS ?? DEFAULT_CONNECT_TIMEOUT_S) * 1000,
    (options.callTimeoutS ?? DEFAULT_CALL_TIMEOUT_S) * 1000,
  );
  let list: Dockerode.ContainerInfo[];
  try {
    list = await e.call(
      'listing the containers of cudamatrix runs',
      (abortSignal) => e.docker.listContainers({ all: true, filters: { label: [RUN_LABEL] }, abortSignal }),
      { connect: true },
    );
  } catch (error) {
    throw unreachable(engine, error);
  }
  const removed: string[] = [];
  const kept: string[] = [];
  const now = Date.now();
  for (const container of list) {
    const label = `${container.Names[0]?.replace(/^\//, '') ?? container.Id.slice(0, 12)} (run ${container.Labels[RUN_LABEL]})`;
    const verdict = reapVerdict(container.Labels, now - container.Created * 1000, options.olderThanMs);
    if (!verdict.remove) {
      kept.push(`${label}: ${verdict.why}`);
      continue;
    }
    try {
      // Gone meanwhile (its run's connection ended, and the engine removed it): not ours to list.
      if ((await removeContainer(e, e.docker.getContainer(container.Id), `removing ${label}`)) === 'gone') continue;
    } catch (error) {
      if (error instanceof CudamatrixError) throw error;
      throw new CudamatrixError('TRANSPORT_FAILED', `removing ${label} from ${engine.endpoint} failed: ${engineWords(error)}`);
    }
    removed.push(`${label}: ${verdict.why}`);
  }
  return { removed, kept, endpoint: engine.endpoint, source: engine.source };
}
