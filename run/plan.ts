/**
 * The planner: targets x probes -> named cells ("target/probe"), filtered by --target and
 * --probe globs, and split by --shard i/n into shards of whole hosts. Like Playwright's projects, a cell's name is stable,
 * so that shards, merges and reports agree on it.
 */
import picomatch from 'picomatch';
import { CudamatrixError } from '../core/errors.ts';
import { closestName } from '../core/suggest.ts';
import type { Matrix, Target } from '../matrix/load.ts';
import { catalogue, probeSpec } from '../probes/catalogue.ts';
import { hostKeyOf } from '../transports/registry.ts';

export interface Cell {
  /** "target/probe" */
  name: string;
  target: string;
  probe: string;
}

export interface Shard {
  index: number;
  total: number;
}

export interface Plan {
  matrix: Matrix;
  cells: Cell[];
  /** The targets that have at least one cell in this plan, in matrix order. */
  targets: Target[];
  shard?: Shard;
  /** Patterns of --target/--probe that match no name while others did (a typo among good ones): said, not fatal. */
  warnings: string[];
}

export interface PlanOptions {
  /** Globs on target names; a cell is kept when any matches. */
  targets?: string[];
  /** Globs on probe names. */
  probes?: string[];
  /** "i/n" */
  shard?: string;
}

export function parseShard(text: string): Shard {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  const index = m ? Number(m[1]) : NaN;
  const total = m ? Number(m[2]) : NaN;
  if (!m || total < 1 || index < 1 || index > total) {
    throw new CudamatrixError('USAGE', `--shard ${JSON.stringify(text)} is not of the form i/n with 1 <= i <= n (e.g. --shard 2/4)`);
  }
  return { index, total };
}

export function cellName(target: string, probe: string): string {
  return `${target}/${probe}`;
}

export function planCells(matrix: Matrix, options: PlanOptions = {}): Plan {
  const matchTarget = globMatcher(options.targets);
  const matchProbe = globMatcher(options.probes);
  // An opt-in probe (left out of "probes: all") also runs where --probe names it exactly.
  const named = new Set(globList(options.probes));
  const optIn = catalogue.filter((p) => p.optIn && named.has(p.name)).map((p) => p.name);
  let cells: Cell[] = [];
  for (const t of matrix.targets) {
    if (!matchTarget(t.name)) continue;
    for (const p of [...t.probes, ...optIn.filter((n) => !t.probes.includes(n))]) {
      if (matchProbe(p)) cells.push({ name: cellName(t.name, p), target: t.name, probe: p });
    }
  }
  if (cells.length === 0) {
    const targetNames = matrix.targets.map((t) => t.name);
    const probeNames = [...new Set(matrix.targets.flatMap((t) => t.probes))];
    const filters = [
      filterWords('--target', 'target', options.targets, targetNames),
      filterWords('--probe', 'probe', options.probes, probeNames),
    ].filter(Boolean);
    throw new CudamatrixError(
      'NO_CELLS',
      `no cell of ${matrix.file} matches ${filters.join(' and ') || 'the matrix'}; targets: ${targetNames.join(', ')}; ` +
        `probes: ${probeNames.join(', ')}; run "cudamatrix plan" to list the cells${optInHint(options.probes)}`,
    );
  }
  const shard = options.shard ? parseShard(options.shard) : undefined;
  if (shard) cells = shardCells(matrix, cells, shard);
  const names = new Set(cells.map((c) => c.target));
  const warnings = [
    ...unmatched(
      '--target',
      'target',
      options.targets,
      matrix.targets.map((t) => t.name),
    ),
    ...unmatched('--probe', 'probe', options.probes, [...new Set([...matrix.targets.flatMap((t) => t.probes), ...optIn])]),
  ];
  return { matrix, cells, shard, targets: matrix.targets.filter((t) => names.has(t.name)), warnings };
}

/** '; alloc-ceiling is opt-in: name it exactly (--probe alloc-ceiling)' for opt-in probes a glob matched but cannot select. */
function optInHint(globs: string[] | undefined): string {
  const match = globMatcher(globs);
  const hits = catalogue.filter((p) => p.optIn && match(p.name)).map((p) => p.name);
  return hits.length
    ? `; ${hits.join(', ')} ${hits.length === 1 ? 'is' : 'are'} opt-in: name ${hits.length === 1 ? 'it' : 'them'} exactly (--probe ${hits.join(',')})`
    : '';
}

/** How long a cell is expected to take (sysinfo runs on every target anyway). */
export function expectedMs(cells: Cell[]): number {
  const probes = new Set(['sysinfo', ...cells.map((c) => c.probe)]);
  return [...probes].reduce((sum, p) => sum + (probeSpec(p)?.typicalMs ?? 1000), 0);
}

/**
 * Shards of whole hosts: every cell of a target, and every target of a host (targets reached on
 * one host would otherwise be measured by two CI jobs at once, and each shard would connect and
 * run sysinfo again). Hosts are dealt out longest first to the least-loaded shard (ties: the
 * lower shard), by the typical duration of their cells, so the same plan always splits the same
 * way. A shard may be empty when there are fewer hosts than shards.
 */
export function shardCells(matrix: Matrix, cells: Cell[], shard: Shard, machineOf?: (t: Target) => string | undefined): Cell[] {
  const hostOf = (t: Target) => hostKeyOrOwn(t, machineOf);
  const byTarget = new Map(matrix.targets.map((t) => [t.name, t]));
  const groups = new Map<string, Cell[]>();
  for (const c of cells) {
    const key = hostOf(byTarget.get(c.target)!);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = []));
    g.push(c);
  }
  const units = [...groups.entries()].map(([host, list], order) => ({ host, list, order, ms: expectedMs(list) }));
  units.sort((a, b) => b.ms - a.ms || a.order - b.order);
  const load = Array.from({ length: shard.total }, () => 0);
  const chosen = new Set<string>();
  for (const u of units) {
    const least = load.indexOf(Math.min(...load));
    load[least]! += u.ms;
    if (least === shard.index - 1) chosen.add(u.host);
  }
  return cells.filter((c) => chosen.has(hostOf(byTarget.get(c.target)!)));
}

/**
 * The host a target lands on (or the machine `machineOf` names for it, gha matrix's remote
 * machines); a target whose transport options are unusable is a host of its own.
 */
function hostKeyOrOwn(t: Target, machineOf?: (t: Target) => string | undefined): string {
  try {
    return machineOf?.(t) ?? hostKeyOf(t.hops);
  } catch {
    return `target:${t.name}`;
  }
}

function globList(globs: string[] | undefined): string[] {
  return (globs ?? [])
    .flatMap((g) => g.split(','))
    .map((g) => g.trim())
    .filter(Boolean);
}

/** "--probe pinnedvram (did you mean "pinned-vram"?)": each pattern that matches no name gets the closest one. */
function filterWords(flag: string, what: string, globs: string[] | undefined, names: string[]): string {
  const list = globList(globs);
  if (list.length === 0) return '';
  const hints = unmatched(flag, what, globs, names)
    .filter((h) => h.includes('did you mean'))
    .map((h) => h.slice(flag.length + 1));
  return `${flag} ${list.join(',')}${hints.length ? ` (${hints.join('; ')})` : ''}`;
}

/** '--probe "cudagraph" matches no probe (did you mean "cuda-graph"?)' for each pattern that matches no name. */
function unmatched(flag: string, what: string, globs: string[] | undefined, names: string[]): string[] {
  return globList(globs).flatMap((g) => {
    if (names.some((n) => picomatch(g)(n))) return [];
    const hint = closestName(g, names);
    return [`${flag} "${g}" matches no ${what}${hint ? ` (did you mean "${hint}"?)` : ''}`];
  });
}

function globMatcher(globs: string[] | undefined): (name: string) => boolean {
  const list = globList(globs);
  if (list.length === 0) return () => true;
  const matchers = list.map((g) => picomatch(g));
  return (name) => matchers.some((m) => m(name));
}
