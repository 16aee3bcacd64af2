/**
 * The typed registry of transports, keyed by kind (the shape of Vitest's ReportersMap): one
 * line per kind, each declared in its own folder. Callers ask it about a target's hops; none
 * of them branches on a kind's name.
 */
import { CudamatrixError, type ErrorCode } from '../core/errors.ts';
import { closestName } from '../core/suggest.ts';
import { docker } from './docker/kind.ts';
import { local } from './local-kind.ts';
import { slurm } from './slurm/kind.ts';
import { ssh } from './ssh/kind.ts';
import type { ConnectContext, Session, TransportKind } from './transport.ts';
import { wsl } from './wsl/kind.ts';

const kinds = { local, ssh, docker, wsl, slurm } satisfies Record<string, TransportKind<any>>;

/** A registered kind, with its name. */
export type NamedKind = TransportKind<unknown> & { kind: string };

const named = new Map<string, NamedKind>(Object.entries(kinds).map(([kind, k]) => [kind, { ...(k as TransportKind<any>), kind }]));

export function transportKinds(): string[] {
  return [...named.keys()].sort();
}

export function transportKind(kind: string): NamedKind {
  const found = named.get(kind);
  if (found) return found;
  const hint = closestName(kind, transportKinds());
  throw new CudamatrixError(
    'MATRIX_UNKNOWN_TRANSPORT',
    `unknown transport kind "${kind}"${hint ? ` (did you mean "${hint}"?)` : ''}; the known kinds are: ${transportKinds().join(', ')}`,
  );
}

/** One hop of a transport chain, as the matrix gives it after validation (its options parsed by its kind). */
export interface Hop {
  kind: string;
  [option: string]: unknown;
}

/** A hop's kind and its options, as the matrix loader parsed them (they are not parsed again). */
function kindOf(hop: Hop): { kind: NamedKind; options: unknown } {
  const { kind, ...options } = hop;
  return { kind: transportKind(kind), options };
}

/**
 * Which host a chain of hops lands on, known before connecting: targets on the same host run
 * one at a time, so that their measurements do not disturb each other.
 */
export function hostKeyOf(hops: Hop[]): string {
  const first = hops[0];
  if (!first) return 'local';
  const key = (hop: Hop): string => {
    const { kind, options } = kindOf(hop);
    return kind.hostKey ? kind.hostKey(options) : hop.kind;
  };
  // A later hop that lands on a host of its own ([ssh, slurm]: a node, not the login node).
  const last = hops.findLastIndex((hop, i) => i > 0 && transportKind(hop.kind).landsElsewhere);
  return last > 0 ? `${key(first)}/${key(hops[last]!)}` : key(first);
}

/** What a machine reached from the one cudamatrix runs on is named within ("here/slurm:gpu": the cluster its login node reaches). */
export const FROM_HERE = 'here';

/**
 * The machine a chain's probes run on when it is not the one cudamatrix runs on (TransportKind.machine);
 * undefined when it is. A hop that lands elsewhere (slurm) names its machine within the one before.
 */
export function machineOf(hops: Hop[]): string | undefined {
  let machine: string | undefined;
  for (const hop of hops) {
    const { kind, options } = kindOf(hop);
    const own = kind.machine?.(options);
    if (own !== undefined) machine = kind.landsElsewhere ? `${machine ?? FROM_HERE}/${own}` : own;
  }
  return machine;
}

/** The environment variables a chain's options name as holding secrets. */
export function secretEnvsOf(hops: Hop[]): string[] {
  return hops.flatMap((hop) => {
    const { kind, options } = kindOf(hop);
    return kind.secretEnvs?.(options) ?? [];
  });
}

/** The option by which the hop that runs the probes (the last) asks for no GPU ("gpus: none"), if it does. */
export function noGpuAsked(hops: Hop[]): string | undefined {
  const last = hops[hops.length - 1];
  if (!last) return undefined;
  const { kind, options } = kindOf(last);
  return kind.asksForNoGpu?.(options);
}

/** Whether the hop that runs the probes (the last) asks for no GPU. */
export function asksForNoGpu(hops: Hop[]): boolean {
  return noGpuAsked(hops) !== undefined;
}

/** What a session that opened proves about a hop, in its kind's words. */
export function reachedWords(hop: Hop): string {
  return transportKind(hop.kind).reached;
}

/** What the kind of a hop says to do about an error of this code there, if it says anything. */
export function fixAt(hop: Hop | undefined, code: ErrorCode): string | undefined {
  return hop ? transportKind(hop.kind).fixes?.[code] : undefined;
}

/**
 * The targets one matrix target stands for: itself, or one per element of a hop's fan-out
 * (TransportKind.fanOut), named NAME@SUFFIX with that hop's options.
 */
export function fanOut(name: string, hops: Hop[]): { name: string; hops: Hop[] }[] {
  for (const [i, hop] of hops.entries()) {
    const { kind, options } = kindOf(hop);
    const each = kind.fanOut?.(options);
    if (!each) continue;
    return each.map((e) => ({
      name: `${name}@${e.suffix}`,
      hops: hops.map((existing, j) => (j === i ? { kind: hop.kind, ...(e.options as object) } : existing)),
    }));
  }
  return [{ name, hops }];
}

/**
 * Connects a chain of hops: the first hop from this machine, each later hop through the session
 * of the one before. Sessions opened before a failure are closed again. `onHop` is told the index
 * of each hop as it starts connecting, so that a failure can be put at its hop.
 */
export async function connectChain(hops: Hop[], context: Omit<ConnectContext, 'via'>, onHop?: (index: number) => void): Promise<Session> {
  const opened: Session[] = [];
  try {
    let via: Session | undefined;
    for (const [index, hop] of hops.entries()) {
      onHop?.(index);
      const { kind, options } = kindOf(hop);
      const connect = await kind.load();
      via = await connect(options, { ...context, via });
      opened.push(via);
    }
    if (!via) throw new CudamatrixError('MATRIX_INVALID', `target "${context.target}" has no transport`);
    return chained(opened);
  } catch (error) {
    await closeAll(opened);
    throw error;
  }
}

async function closeAll(sessions: Session[]): Promise<void> {
  for (const session of [...sessions].reverse()) {
    await Promise.resolve(session[Symbol.asyncDispose]()).catch(() => undefined);
  }
}

/** The last session of a chain, whose disposal also closes the hops it was reached through. */
function chained(sessions: Session[]): Session {
  const last = sessions[sessions.length - 1]!;
  if (sessions.length === 1) return last;
  return new Proxy(last, {
    get(target, prop, receiver) {
      if (prop === Symbol.asyncDispose) return () => closeAll(sessions);
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * The targets whose fan-out only their side can list (TransportKind.fanOutAtRun: slurm's nodes:
 * all) replaced by one per element, NAME@SUFFIX; the others as they are. The hops before the
 * fanning hop are connected for it (or the command runs here), then closed.
 */
export async function resolveFanOuts<T extends { name: string; hops: Hop[] }>(
  targets: T[],
  context: Omit<ConnectContext, 'via' | 'target'>,
): Promise<T[]> {
  const out: T[] = [];
  for (const target of targets) {
    const listers = target.hops.map((hopSpec) => {
      const { kind, options } = kindOf(hopSpec);
      return kind.fanOutAtRun?.(options);
    });
    const i = listers.findIndex((lister) => lister !== undefined);
    const list = listers[i];
    const hop = target.hops[i];
    if (!list || !hop) {
      out.push(target);
      continue;
    }
    const before = target.hops.slice(0, i);
    const via = before.length ? await connectChain(before, { ...context, target: target.name }) : undefined;
    try {
      const run = async (argv: string[]) =>
        via
          ? via.exec(argv, { timeoutMs: 60_000, signal: context.signal })
          : (await import('./local.ts')).execProcessTree(argv, { timeoutMs: 60_000, signal: context.signal });
      const each = await list(run);
      for (const e of each)
        out.push({
          ...target,
          name: `${target.name}@${e.suffix}`,
          hops: target.hops.map((existing, j) => (j === i ? { kind: hop.kind, ...(e.options as object) } : existing)),
        });
    } finally {
      if (via) await Promise.resolve(via[Symbol.asyncDispose]()).catch(() => undefined);
    }
  }
  return out;
}
