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
  const match = /^(\d+)\/(\d+)$/.exec(text.trim());
  const index = match ? Number(match[1]) : NaN;
  const total = match ? Number(match[2]) : NaN;
  if (!match || total < 1 || index < 1 || index > total) {
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
  const optIn = catalogue.filter((probe) => probe.optIn && named.has(probe.name)).map((probe) => probe.name);
  let cells: Cell[] = [];
  for (const target of matrix.targets) {
    if (!matchTarget(target.name)) continue;
    for (const probe of [...target.probes, ...optIn.filter((probeName) => !target.probes.includes(probeName))]) {
      if (matchProbe(probe)) cells.push({ name: cellName(target.name, probe), target: target.name, probe });
    }
  }
  if (cells.length === 0) {
    const targetNames = matrix.targets.map((target) => target.name);
    const probeNames = [...new Set(matrix.targets.flatMap((target) => target.probes))];
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
  const names = new Set(cells.map((cell) => cell.target));
  const warnings = [
    ...unmatched(
      '--target',
      'target',
      options.targets,
      matrix.targets.map((target) => target.name),
    ),
    ...unmatched('--probe', 'probe', options.probes, [...new Set([...matrix.targets.flatMap((target) => target.probes), ...optIn])]),
  ];
  return { matrix, cells, shard, targets: matrix.targets.filter((target) => names.has(target.name)), warnings };
}

/** '; alloc-ceiling is opt-in: name it exactly (--probe alloc-ceiling)' for opt-in probes a glob matched but cannot select. */
function optInHint(globs: string[] | undefined): string {
  const match = globMatcher(globs);
  const hits = catalogue.filter((probe) => probe.optIn && match(probe.name)).map((probe) => probe.name);
  return hits.length
    ? `; ${hits.join(', ')} ${hits.length === 1 ? 'is' : 'are'} opt-in: name ${hits.length === 1 ? 'it' : 'them'} exactly (--probe ${hits.join(',')})`
    : '';
}

/** How long a cell is expected to take (sysinfo runs on every target anyway). */
export function expectedMs(cells: Cell[]): number {
  const probes = new Set(['sysinfo', ...cells.map((cell) => cell.probe)]);
  return [...probes].reduce((sum, probe) => sum + (probeSpec(probe)?.typicalMs ?? 1000), 0);
}

/**
 * Shards of whole hosts: every cell of a target, and every target of a host (targets reached on
 * one host would otherwise be measured by two CI jobs at once, and each shard would connect and
 * run sysinfo again). Hosts are dealt out longest first to the least-loaded shard (ties: the
 * lower shard), by the typical duration of their cells, so the same plan always splits the same
 * way. A shard may be empty when there are fewer hosts than shards.
 */
export function shardCells(matrix: Matrix, cells: Cell[], shard: Shard, machineOf?: (target: Target) => string | undefined): Cell[] {
  const hostOf = (target: Target) => hostKeyOrOwn(target, machineOf);
  const byTarget = new Map(matrix.targets.map((target) => [target.name, target]));
  const groups = new Map<string, Cell[]>();
  for (const cell of cells) {
    const key = hostOf(byTarget.get(cell.target)!);
    let group = groups.get(key);
    if (!group) groups.set(key, (group = []));
    group.push(cell);
  }
  const units = [...groups.entries()].map(([host, list], order) => ({ host, list, order, ms: expectedMs(list) }));
  units.sort((left, right) => right.ms - left.ms || left.order - right.order);
  const load = Array.from({ length: shard.total }, () => 0);
  const chosen = new Set<string>();
  for (const unit of units) {
    const least = load.indexOf(Math.min(...load));
    load[least]! += unit.ms;
    if (least === shard.index - 1) chosen.add(unit.host);
  }
  return cells.filter((cell) => chosen.has(hostOf(byTarget.get(cell.target)!)));
}

/**
 * The host a target lands on (or the machine `machineOf` names for it, gha matrix's remote
 * machines); a target whose transport options are unusable is a host of its own.
 */
function hostKeyOrOwn(target: Target, machineOf?: (target: Target) => string | undefined): string {
  try {
    return machineOf?.(target) ?? hostKeyOf(target.hops);
  } catch {
    return `target:${target.name}`;
  }
}

function globList(globs: string[] | undefined): string[] {
  return (globs ?? [])
    .flatMap((glob) => glob.split(','))
    .map((glob) => glob.trim())
    .filter(Boolean);
}

/** "--probe pinnedvram (did you mean "pinned-vram"?)": each pattern that matches no name gets the closest one. */
function filterWords(flag: string, what: string, globs: string[] | undefined, names: string[]): string {
  const list = globList(globs);
  if (list.length === 0) return '';
  const hints = unmatched(flag, what, globs, names)
    .filter((hint) => hint.includes('did you mean'))
    .map((hint) => hint.slice(flag.length + 1));
  return `${flag} ${list.join(',')}${hints.length ? ` (${hints.join('; ')})` : ''}`;
}

/** '--probe "cudagraph" matches no probe (did you mean "cuda-graph"?)' for each pattern that matches no name. */
function unmatched(flag: string, what: string, globs: string[] | undefined, names: string[]): string[] {
  return globList(globs).flatMap((glob) => {
    if (names.some((name) => picomatch(glob)(name))) return [];
    const hint = closestName(glob, names);
    return [`${flag} "${glob}" matches no ${what}${hint ? ` (did you mean "${hint}"?)` : ''}`];
  });
}

function globMatcher(globs: string[] | undefined): (name: string) => boolean {
  const list = globList(globs);
  if (list.length === 0) return () => true;
  const matchers = list.map((glob) => picomatch(glob));
  return (name) => matchers.some((matcher) => matcher(name));
}
