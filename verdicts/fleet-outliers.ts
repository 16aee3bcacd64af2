/**
 * Nodes that differ from the rest of their fan-out (a slurm target's nodes: gpu[01-16], run as
 * TARGET@NODE): a sysinfo value or a fact that is not the one most nodes have, or a metric more
 * than METRIC_NOISE from the others' median. That is the finding an operator of a fleet wants.
 */
import type { Scalar } from '../probes/protocol.ts';
import type { RunSummary, TargetResult } from './verdicts.ts';

/** A metric this far (as a fraction) from the median of the group is beyond run-to-run noise. */
export const METRIC_NOISE = 0.25;
/** Sysinfo entries that differ from node to node by their nature. */
const PER_NODE = new Set(['gpu_uuid', 'pci_bus_id', 'uname']);

/** The node a target ran on: a Slurm session says it ("slurm job 12 on n2"), other sessions are named by their target. */
export function nodeOf(target: TargetResult): string {
  return /^slurm job \S+ on (\S+)/.exec(target.ready?.session ?? '')?.[1] ?? target.name;
}

export interface NodeDifference {
  /** The matrix target the nodes were fanned out from. */
  group: string;
  node: string;
  /** "sysinfo driver_version", "fact pinned-vram.counts_as_vram", "metric sync-latency.p50_us". */
  what: string;
  value: string;
  /** What the rest have: "550.90 (3 nodes)", "median 12.5 us". */
  others: string;
}

const show = (scalar: Scalar) => (typeof scalar === 'string' ? scalar : JSON.stringify(scalar));

/** What one target saw, by key: its sysinfo, facts and metrics. */
function observations(target: TargetResult): { same: Map<string, string>; metrics: Map<string, { value: number; unit: string }> } {
  const same = new Map<string, string>();
  const metrics = new Map<string, { value: number; unit: string }>();
  for (const [name, value] of Object.entries(target.sysinfo)) if (!PER_NODE.has(name)) same.set(`sysinfo ${name}`, show(value));
  for (const cell of target.cells) {
    for (const record of cell.records) {
      if (record.type === 'fact') same.set(`fact ${cell.probe}.${record.name}`, show(record.value));
      if (record.type === 'metric' && typeof record.value === 'number') {
        const attrs = record.attrs && Object.keys(record.attrs).length ? ` ${JSON.stringify(record.attrs)}` : '';
        metrics.set(`metric ${cell.probe}.${record.name}${attrs}`, { value: record.value, unit: record.unit });
      }
    }
  }
  return { same, metrics };
}

function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function nodesThatDiffer(summary: RunSummary): NodeDifference[] {
  const groups = new Map<string, TargetResult[]>();
  for (const target of summary.targets) {
    const at = target.name.lastIndexOf('@');
    if (at <= 0 || !target.ready) continue;
    const group = target.name.slice(0, at);
    groups.set(group, [...(groups.get(group) ?? []), target]);
  }
  const found: NodeDifference[] = [];
  for (const [group, targets] of groups) {
    if (targets.length < 2) continue;
    const seen = targets.map((target) => ({ node: nodeOf(target), ...observations(target) }));
    const keys = new Set(seen.flatMap((observed) => [...observed.same.keys()]));
    for (const key of keys) {
      const having = seen.filter((observed) => observed.same.has(key));
      if (having.length < 2) continue;
      const counts = new Map<string, number>();
      for (const observed of having) counts.set(observed.same.get(key)!, (counts.get(observed.same.get(key)!) ?? 0) + 1);
      if (counts.size === 1) continue;
      const [common, commonCount] = [...counts].sort((left, right) => right[1] - left[1])[0]!;
      // A value most nodes share: the others are named. None (two nodes, two values): all are.
      const majority = commonCount > having.length / 2;
      for (const observed of having) {
        const value = observed.same.get(key)!;
        if (majority && value === common) continue;
        const rest = having.filter((other) => other !== observed).map((other) => other.same.get(key)!);
        const restCounts = [...new Set(rest)].map(
          (otherValue) =>
            `${otherValue} (${rest.filter((restValue) => restValue === otherValue).length} node${rest.filter((restValue) => restValue === otherValue).length === 1 ? '' : 's'})`,
        );
        found.push({ group, node: observed.node, what: key, value, others: restCounts.join(', ') });
      }
    }
    // Metrics: with three nodes or more, a node far from the median of the others.
    const metricKeys = new Set(seen.flatMap((observed) => [...observed.metrics.keys()]));
    for (const key of metricKeys) {
      const having = seen.filter((observed) => observed.metrics.has(key));
      if (having.length < 3) continue;
      for (const observed of having) {
        const own = observed.metrics.get(key)!;
        const othersMedian = median(having.filter((other) => other !== observed).map((other) => other.metrics.get(key)!.value));
        if (othersMedian !== 0 && Math.abs(own.value - othersMedian) > METRIC_NOISE * Math.abs(othersMedian)) {
          found.push({
            group,
            node: observed.node,
            what: key,
            value: `${own.value} ${own.unit}`,
            others: `median ${othersMedian} ${own.unit} of the other ${having.length - 1}`,
          });
        }
      }
    }
  }
  return found;
}

/** The summary's lines: one per difference, under a heading per group; none when all nodes agree. */
export function nodesThatDifferLines(summary: RunSummary): string[] {
  const found = nodesThatDiffer(summary);
  const lines: string[] = [];
  for (const group of new Set(found.map((difference) => difference.group))) {
    const of = found.filter((difference) => difference.group === group);
    lines.push(`Nodes that differ from the rest of ${group}: ${[...new Set(of.map((difference) => difference.node))].join(', ')}`);
    for (const difference of of)
      lines.push(`  ${difference.node}: ${difference.what} = ${difference.value}; the others: ${difference.others}`);
  }
  return lines;
}
