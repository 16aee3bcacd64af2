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
export function nodeOf(t: TargetResult): string {
  return /^slurm job \S+ on (\S+)/.exec(t.ready?.session ?? '')?.[1] ?? t.name;
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

const show = (v: Scalar) => (typeof v === 'string' ? v : JSON.stringify(v));

/** What one target saw, by key: its sysinfo, facts and metrics. */
function observations(t: TargetResult): { same: Map<string, string>; metrics: Map<string, { value: number; unit: string }> } {
  const same = new Map<string, string>();
  const metrics = new Map<string, { value: number; unit: string }>();
  for (const [name, value] of Object.entries(t.sysinfo)) if (!PER_NODE.has(name)) same.set(`sysinfo ${name}`, show(value));
  for (const c of t.cells) {
    for (const r of c.records) {
      if (r.type === 'fact') same.set(`fact ${c.probe}.${r.name}`, show(r.value));
      if (r.type === 'metric' && typeof r.value === 'number') {
        const attrs = r.attrs && Object.keys(r.attrs).length ? ` ${JSON.stringify(r.attrs)}` : '';
        metrics.set(`metric ${c.probe}.${r.name}${attrs}`, { value: r.value, unit: r.unit });
      }
    }
  }
  return { same, metrics };
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function nodesThatDiffer(summary: RunSummary): NodeDifference[] {
  const groups = new Map<string, TargetResult[]>();
  for (const t of summary.targets) {
    const at = t.name.lastIndexOf('@');
    if (at <= 0 || !t.ready) continue;
    const group = t.name.slice(0, at);
    groups.set(group, [...(groups.get(group) ?? []), t]);
  }
  const found: NodeDifference[] = [];
  for (const [group, targets] of groups) {
    if (targets.length < 2) continue;
    const seen = targets.map((t) => ({ node: nodeOf(t), ...observations(t) }));
    const keys = new Set(seen.flatMap((s) => [...s.same.keys()]));
    for (const key of keys) {
      const having = seen.filter((s) => s.same.has(key));
      if (having.length < 2) continue;
      const counts = new Map<string, number>();
      for (const s of having) counts.set(s.same.get(key)!, (counts.get(s.same.get(key)!) ?? 0) + 1);
      if (counts.size === 1) continue;
      const [common, n] = [...counts].sort((a, b) => b[1] - a[1])[0]!;
      // A value most nodes share: the others are named. None (two nodes, two values): all are.
      const majority = n > having.length / 2;
      for (const s of having) {
        const value = s.same.get(key)!;
        if (majority && value === common) continue;
        const rest = having.filter((o) => o !== s).map((o) => o.same.get(key)!);
        const restCounts = [...new Set(rest)].map(
          (v) => `${v} (${rest.filter((x) => x === v).length} node${rest.filter((x) => x === v).length === 1 ? '' : 's'})`,
        );
        found.push({ group, node: s.node, what: key, value, others: restCounts.join(', ') });
      }
    }
    // Metrics: with three nodes or more, a node far from the median of the others.
    const metricKeys = new Set(seen.flatMap((s) => [...s.metrics.keys()]));
    for (const key of metricKeys) {
      const having = seen.filter((s) => s.metrics.has(key));
      if (having.length < 3) continue;
      for (const s of having) {
        const own = s.metrics.get(key)!;
        const m = median(having.filter((o) => o !== s).map((o) => o.metrics.get(key)!.value));
        if (m !== 0 && Math.abs(own.value - m) > METRIC_NOISE * Math.abs(m)) {
          found.push({
            group,
            node: s.node,
            what: key,
            value: `${own.value} ${own.unit}`,
            others: `median ${m} ${own.unit} of the other ${having.length - 1}`,
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
  for (const group of new Set(found.map((d) => d.group))) {
    const of = found.filter((d) => d.group === group);
    lines.push(`Nodes that differ from the rest of ${group}: ${[...new Set(of.map((d) => d.node))].join(', ')}`);
    for (const d of of) lines.push(`  ${d.node}: ${d.what} = ${d.value}; the others: ${d.others}`);
  }
  return lines;
}
