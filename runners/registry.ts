/**
 * The typed registry of transports, keyed by kind. It holds each kind's options and host key;
 * the code that connects is imported when a target of that kind connects (TransportKind.load).
 */
import { z } from 'zod';
import { CudamatrixError } from '../core/errors.ts';
import { closestName } from '../core/suggest.ts';
import { dockerKind } from './docker/options.ts';
import { slurmKind } from './slurm/options.ts';
import { sshKind } from './ssh/options.ts';
import { wslKind } from './wsl/options.ts';
import type { ConnectContext, Session, TransportKind } from './transport.ts';

const localKind: TransportKind<object> = {
  kind: 'local',
  description: 'this machine: probes run as child processes',
  options: z.strictObject({}),
  chainable: false,
  load: async () => (await import('./local.ts')).connectLocal,
};

// The implementations are imported here, dynamically: they import their options modules, so an
// options module that imported its implementation back would make a cycle.
const kinds = new Map<string, TransportKind<any>>(
  [
    localKind,
    { ...sshKind, load: async () => (await import('./ssh/transport.ts')).connectSsh },
    { ...dockerKind, load: async () => (await import('./docker/transport.ts')).connectDocker },
    { ...wslKind, load: async () => (await import('./wsl/transport.ts')).connectWsl },
    { ...slurmKind, load: async () => (await import('./slurm/transport.ts')).connectSlurm },
  ].map((k) => [k.kind, k]),
);

export function transportKinds(): string[] {
  return [...kinds.keys()].sort();
}

export function transportKind(kind: string): TransportKind<unknown> {
  const found = kinds.get(kind);
  if (found) return found;
  const hint = closestName(kind, transportKinds());
  throw new CudamatrixError(
    'MATRIX_UNKNOWN_TRANSPORT',
    `unknown transport kind "${kind}"${hint ? ` (did you mean "${hint}"?)` : ''}; the known kinds are: ${transportKinds().join(', ')}`,
  );
}

/** One hop of a transport chain, as the matrix gives it after validation. */
export interface Hop {
  kind: string;
  [option: string]: unknown;
}

/**
 * Which host a chain of hops lands on, known before connecting: targets on the same host run
 * one at a time, so that their measurements do not disturb each other.
 */
export function hostKeyOf(hops: Hop[]): string {
  const first = hops[0];
  if (!first) return 'local';
  const key = (hop: Hop): string => {
    const kind = transportKind(hop.kind);
    const { kind: _kind, ...options } = hop;
    return kind.hostKey ? kind.hostKey(kind.options.parse(options)) : hop.kind;
  };
  // A later hop that lands on a host of its own ([ssh, slurm]: a node, not the login node).
  const last = hops.findLastIndex((h, i) => i > 0 && transportKind(h.kind).landsElsewhere);
  return last > 0 ? `${key(first)}/${key(hops[last]!)}` : key(first);
}

/**
 * The targets one matrix target stands for: itself, or one per element of a hop's fan-out
 * (TransportKind.fanOut), named NAME@SUFFIX with that hop's options.
 */
export function fanOut(name: string, hops: Hop[]): { name: string; hops: Hop[] }[] {
  for (const [i, hop] of hops.entries()) {
    const kind = transportKind(hop.kind);
    if (!kind.fanOut) continue;
    const { kind: _kind, ...options } = hop;
    const parsed = kind.options.safeParse(options);
    const each = parsed.success ? kind.fanOut(parsed.data) : undefined;
    if (!each) continue;
    return each.map((e) => ({ name: `${name}@${e.suffix}`, hops: hops.map((h, j) => (j === i ? { kind: hop.kind, ...(e.options as object) } : h)) }));
  }
  return [{ name, hops }];
}

/**
 * Connects a chain of hops: the first hop from this machine, each later hop through the session
 * of the one before. Sessions opened before a failure are closed again.
 */
export async function connectChain(hops: Hop[], context: Omit<ConnectContext, 'via'>): Promise<Session> {
  const opened: Session[] = [];
  try {
    let via: Session | undefined;
    for (const hop of hops) {
      const kind = transportKind(hop.kind);
      const { kind: _kind, ...options } = hop;
      const connect = await kind.load();
      via = await connect(kind.options.parse(options), { ...context, via });
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
  for (const s of [...sessions].reverse()) {
    await Promise.resolve(s[Symbol.asyncDispose]()).catch(() => undefined);
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
export async function resolveFanOuts<T extends { name: string; hops: Hop[] }>(targets: T[], context: Omit<ConnectContext, 'via' | 'target'>): Promise<T[]> {
  const out: T[] = [];
  for (const t of targets) {
    const listers = t.hops.map((h) => {
      const kind = transportKind(h.kind);
      const { kind: _kind, ...options } = h;
      return kind.fanOutAtRun?.(kind.options.parse(options));
    });
    const i = listers.findIndex((l) => l !== undefined);
    const list = listers[i];
    const hop = t.hops[i];
    if (!list || !hop) {
      out.push(t);
      continue;
    }
    const before = t.hops.slice(0, i);
    const via = before.length ? await connectChain(before, { ...context, target: t.name }) : undefined;
    try {
      const run = async (argv: string[]) => (via ? via.exec(argv, { timeoutMs: 60_000, signal: context.signal }) : (await import('./local.ts')).execProcessTree(argv, { timeoutMs: 60_000, signal: context.signal }));
      const each = await list(run);
      for (const e of each) out.push({ ...t, name: `${t.name}@${e.suffix}`, hops: t.hops.map((h, j) => (j === i ? { kind: hop.kind, ...(e.options as object) } : h)) });
    } finally {
      if (via) await Promise.resolve(via[Symbol.asyncDispose]()).catch(() => undefined);
    }
  }
  return out;
}

