import { planCells } from '../run/plan.ts';
import { formatTable } from '../core/text-table.ts';
import { loadMatrixArg } from './matrix-arg.ts';

export async function planCommand(opts: {
  matrix?: string;
  target?: string[];
  probe?: string[];
  shard?: string;
  json: boolean;
}): Promise<number> {
  const matrix = await loadMatrixArg(opts.matrix);
  const plan = planCells(matrix, { targets: opts.target, probes: opts.probe, shard: opts.shard });
  for (const warning of plan.warnings) process.stderr.write(`warning: ${warning}\n`);
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ matrix: matrix.file, shard: plan.shard ?? null, cells: plan.cells }, null, 2)}\n`);
    return 0;
  }
  const byTarget = new Map(matrix.targets.map((target) => [target.name, target]));
  const rows = plan.cells.map((cell) => {
    const target = byTarget.get(cell.target)!;
    return [cell.name, target.environment, target.hops.map((hop) => hop.kind).join(' → '), `${target.timeoutMs / 1000} s`];
  });
  if (plan.shard && plan.cells.length === 0) {
    process.stdout.write(
      `shard ${plan.shard.index}/${plan.shard.total} has no cells: shards hold whole hosts, and the matrix's hosts fit in fewer shards\n`,
    );
    return 0;
  }
  process.stdout.write(`${formatTable(['cell', 'environment', 'transport', 'timeout'], rows)}\n`);
  process.stdout.write(
    `\n${plan.cells.length} cell${plan.cells.length === 1 ? '' : 's'} on ${plan.targets.length} target${plan.targets.length === 1 ? '' : 's'}${plan.shard ? ` (shard ${plan.shard.index}/${plan.shard.total})` : ''} from ${matrix.file}\n`,
  );
  return 0;
}
