/**
 * The planner: targets x probes -> named cells ("target/probe"), filtered by --target and
 * --probe globs, and split by --shard i/n. Like Playwright's projects, a cell's name is stable,
 * so that shards, merges and reports agree on it.
 */
import picomatch from 'picomatch';
import { CudamatrixError } from '../core/errors.ts';
import type { Matrix, Target } from './load.ts';

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
  let cells: Cell[] = [];
  for (const t of matrix.targets) {
    if (!matchTarget(t.name)) continue;
    for (const p of t.probes) {
      if (matchProbe(p)) cells.push({ name: cellName(t.name, p), target: t.name, probe: p });
    }
  }
  if (cells.length === 0) {
    const filters = [
      options.targets?.length ? `--target ${options.targets.join(',')}` : '',
      options.probes?.length ? `--probe ${options.probes.join(',')}` : '',
    ].filter(Boolean);
    throw new CudamatrixError(
      'NO_CELLS',
      `no cell of ${matrix.file} matches ${filters.join(' and ') || 'the matrix'}; targets: ${matrix.targets.map((t) => t.name).join(', ')}; ` +
        'run "cudamatrix plan" to list the cells',
    );
  }
  const shard = options.shard ? parseShard(options.shard) : undefined;
  if (shard) cells = shardSlice(cells, shard);
  const names = new Set(cells.map((c) => c.target));
  return { matrix, cells, shard, targets: matrix.targets.filter((t) => names.has(t.name)) };
}

/** Contiguous, near-equal slices in plan order: the same inputs always give the same split. */
export function shardSlice<T>(items: T[], shard: Shard): T[] {
  const base = Math.floor(items.length / shard.total);
  const extra = items.length % shard.total;
  const start = (shard.index - 1) * base + Math.min(shard.index - 1, extra);
  const size = base + (shard.index <= extra ? 1 : 0);
  return items.slice(start, start + size);
}

function globMatcher(globs: string[] | undefined): (name: string) => boolean {
  const list = (globs ?? []).flatMap((g) => g.split(',')).map((g) => g.trim()).filter(Boolean);
  if (list.length === 0) return () => true;
  const matchers = list.map((g) => picomatch(g));
  return (name) => matchers.some((m) => m(name));
}
