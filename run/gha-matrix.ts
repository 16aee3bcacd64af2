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
import type { Matrix, Target } from '../matrix/load.ts';
import { FROM_HERE, machineOf } from '../transports/registry.ts';
import { planCells, shardCells, type Cell } from './plan.ts';

export interface GhaEntry {
  /** Unique and safe in an artifact name: a labelled target's name, or shared[-i-of-n]. */
  name: string;
  /** Comma-separated target names, for `cudamatrix run --target` (a labelled job holds several when they are reached on one SSH host with the same labels). */
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
  /** Labels of those jobs (default DEFAULT_RUNS_ON). */
  runsOn?: string[];
}

/**
 * The shared job's labels: a label of its own besides self-hosted and linux. A runner takes every
 * job whose labels it all has, so with [self-hosted, linux] alone any Linux GPU runner would also
 * take the shared job (and spend its GPU's time reaching SSH hosts).
 */
export const DEFAULT_RUNS_ON = ['self-hosted', 'linux', 'cudamatrix-shared'];

/** GitHub matches labels as a set, case-insensitively. */
const labelSet = (labels: string[]) => [...new Set(labels.map((label) => label.toLowerCase()))].sort().join(',');

/**
 * The machine a target is measured on when it is not the runner's own (an SSH host, a remote
 * Docker engine's, a Slurm partition), as its kinds tell. One reached from the runner itself (the
 * cluster of a login node that is the runner) is the one that the runners of `runsOn` reach.
 */
function remoteHostOf(target: Target, runsOn: string[]): string | undefined {
  const machine = machineOf(target.hops);
  return machine?.startsWith(`${FROM_HERE}/`) ? `runners [${labelSet(runsOn)}]${machine.slice(FROM_HERE.length)}` : machine;
}

export function ghaMatrix(matrix: Matrix, options: GhaMatrixOptions = {}): GhaMatrix {
  const plan = planCells(matrix, { targets: options.targets, probes: options.probes });
  const shards = options.shards ?? 1;
  const include: GhaEntry[] = [];
  const unlabelled: Cell[] = [];
  // Labelled targets reached over SSH on one host with the same labels share a job: one job at a time per machine.
  const labelledJobs = new Map<string, GhaEntry>();
  // Each target's cells, found once (a filter per target was quadratic: 4 s at 2,000 targets).
  const cellsOf = new Map<string, Cell[]>();
  for (const cell of plan.cells) cellsOf.set(cell.target, [...(cellsOf.get(cell.target) ?? []), cell]);
  for (const target of plan.targets) {
    if (!target.runsOn) {
      for (const cell of cellsOf.get(target.name) ?? []) unlabelled.push(cell);
      continue;
    }
    const key = `${labelSet(target.runsOn)}\0${remoteHostOf(target, target.runsOn) ?? `target:${target.name}`}`;
    const job = labelledJobs.get(key);
    if (job) job.targets += `,${target.name}`;
    else {
      const entry = { name: target.name, targets: target.name, runsOn: target.runsOn, labelled: true };
      labelledJobs.set(key, entry);
      include.push(entry);
    }
  }
  if (unlabelled.length) {
    const runsOn = options.runsOn ?? DEFAULT_RUNS_ON;
    const parts = Array.from({ length: shards }, (_, i) =>
      shards === 1 ? unlabelled : shardCells(matrix, unlabelled, { index: i + 1, total: shards }, (target) => remoteHostOf(target, runsOn)),
    )
      // Fewer hosts than shards leaves a shard empty: no job for it.
      .filter((cells) => cells.length > 0);
    parts.forEach((cells, i) => {
      const targets = [...new Set(cells.map((cell) => cell.target))];
      include.push({
        name: parts.length === 1 ? 'shared' : `shared-${i + 1}-of-${parts.length}`,
        targets: targets.join(','),
        runsOn,
        labelled: false,
      });
    });
  }
  checkNames(matrix, include);
  checkHosts(matrix, plan.targets, include);
  return { include };
}

function checkNames(matrix: Matrix, include: GhaEntry[]): void {
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
}

/** No host may be measured by two jobs at once: a remote machine reached from two jobs is refused. */
function checkHosts(matrix: Matrix, targets: Target[], include: GhaEntry[]): void {
  const jobOf = new Map(include.flatMap((e) => e.targets.split(',').map((targetName) => [targetName, e] as const)));
  const seen = new Map<string, { target: string; job: GhaEntry }>();
  for (const target of targets) {
    const job = jobOf.get(target.name);
    const host = job && remoteHostOf(target, job.runsOn);
    if (!job || !host) continue;
    const first = seen.get(host);
    if (!first) {
      seen.set(host, { target: target.name, job });
      continue;
    }
    if (first.job === job) continue;
    throw new CudamatrixError(
      'MATRIX_INVALID',
      `${matrix.file}: targets "${first.target}" (job ${first.job.name}) and "${target.name}" (job ${job.name}) are both reached on the same host (${host.replace(/^\w+:/, '')}), and two jobs would measure it at once; give them the same runsOn (they then share a job), or neither a runsOn (the shared jobs keep a host's targets together)`,
    );
  }
}
