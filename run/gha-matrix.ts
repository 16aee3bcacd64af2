/**
 * The GitHub Actions job matrix of a plan (`cudamatrix gha matrix`): GitHub Actions is the
 * scheduler, cudamatrix only says which jobs there are. A target that names runner labels
 * (runsOn) gets a job of its own on such a runner; the targets without labels are reached through
 * their transports from shared jobs, split into --shards jobs of whole hosts as `run --shard`
 * splits (run/plan.ts), so that no two jobs measure one host at once.
 *
 * Each entry names the targets its job runs (`cudamatrix run --target <targets>`), so a job never
 * depends on how another machine would shard, and `gha merge` knows which targets each job owed.
 */
import { CudamatrixError } from '../core/errors.ts';
import type { Matrix } from '../matrix/load.ts';
import { planCells, shardCells, type Cell } from './plan.ts';

export interface GhaEntry {
  /** Unique and safe in an artifact name: a labelled target's name, or transport[-i-of-n]. */
  name: string;
  /** Comma-separated target names, for `cudamatrix run --target`. */
  targets: string;
  /** The labels for the job's runs-on. */
  runsOn: string[];
  /** Whether the labels are the target's own (runsOn) rather than the shared jobs'. */
  labelled: boolean;
}

export interface GhaMatrix {
  include: GhaEntry[];
}

export interface GhaMatrixOptions {
  targets?: string[];
  probes?: string[];
  /** Jobs for the targets without runsOn (default 1). */
  shards?: number;
  /** Labels of those jobs (default self-hosted, linux). */
  runsOn?: string[];
}

export const DEFAULT_RUNS_ON = ['self-hosted', 'linux'];

export function ghaMatrix(matrix: Matrix, options: GhaMatrixOptions = {}): GhaMatrix {
  const plan = planCells(matrix, { targets: options.targets, probes: options.probes });
  const shards = options.shards ?? 1;
  const include: GhaEntry[] = [];
  const unlabelled: Cell[] = [];
  for (const t of plan.targets) {
    if (t.runsOn) include.push({ name: t.name, targets: t.name, runsOn: t.runsOn, labelled: true });
    else unlabelled.push(...plan.cells.filter((c) => c.target === t.name));
  }
  if (unlabelled.length) {
    for (let index = 1; index <= shards; index++) {
      const cells = shards === 1 ? unlabelled : shardCells(matrix, unlabelled, { index, total: shards });
      // Fewer hosts than shards leaves a shard empty: no job for it.
      if (cells.length === 0) continue;
      const targets = [...new Set(cells.map((c) => c.target))];
      include.push({ name: shards === 1 ? 'transport' : `transport-${index}-of-${shards}`, targets: targets.join(','), runsOn: options.runsOn ?? DEFAULT_RUNS_ON, labelled: false });
    }
  }
  const taken = new Map<string, GhaEntry>();
  for (const e of include) {
    const other = taken.get(e.name);
    if (other) {
      throw new CudamatrixError(
        'MATRIX_INVALID',
        `${matrix.file}: target "${e.labelled ? e.name : other.name}" has the name gha matrix gives the job of the targets without runsOn ("${e.name}"); rename the target (artifact names must be unique)`,
      );
    }
    taken.set(e.name, e);
  }
  return { include };
}
