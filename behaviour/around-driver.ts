/**
 * What moved around the driver rather than in it: a pageable copy that moved with its host
 * control, what differs outside the key (kernel, cudaprobe build), a record's drift segments,
 * and the cells during which another process used the GPU. diff labels or leaves out what these
 * explain (docs/records.md, "Noise").
 */
import type { Scalar } from '../probes/protocol.ts';
import type { MetricComparison } from './series-verdict.ts';
import { keyText, type BehaviourRecord, type SharedCell } from './behaviour-record.ts';
import { relativeMove, seriesKey, seriesText, shapeOf, valueAt } from './series.ts';

/**
 * A pageable copy measured beside a host-only control in the same cell: where the control moved
 * the same way by at least half as much, the host slowed (or sped up), not the driver.
 */
const HOST_CONTROLS: { series: string; where: Record<string, Scalar>; control: string; match: string[] }[] = [
  {
    series: 'transfer-bandwidth.bandwidth_gbps',
    where: { memory: 'pageable' },
    control: 'transfer-bandwidth.host_memcpy_gbps',
    match: ['size_bytes'],
  },
];

/** The controls themselves: what the host does, never a change of the driver. */
const CONTROL_SERIES = new Set(HOST_CONTROLS.map((rule) => rule.control));

export function hostControl(
  comparison: MetricComparison,
  ra: BehaviourRecord,
  rb: BehaviourRecord,
): MetricComparison['explained'] | undefined {
  if (CONTROL_SERIES.has(comparison.name))
    return { by: 'host', control: seriesText(comparison.name, comparison.attrs), move: comparison.move ?? 0 };
  if (comparison.a === null || comparison.b === null || comparison.a <= 0 || comparison.b <= 0) return undefined;
  for (const rule of HOST_CONTROLS) {
    if (rule.series !== comparison.name || Object.entries(rule.where).some(([k, wanted]) => comparison.attrs[k] !== wanted)) continue;
    const attrs = Object.fromEntries(rule.match.map((k) => [k, comparison.attrs[k]!]));
    const key = seriesKey({ name: rule.control, value: null, unit: '', attrs });
    const [pa, pb] = [shapeOf(ra.metrics).get(key), shapeOf(rb.metrics).get(key)];
    if (!pa || !pb) continue;
    const [ca, cb] = [valueAt(ra.metrics, pa), valueAt(rb.metrics, pb)];
    if (ca === null || cb === null || ca <= 0 || cb <= 0) continue;
    const own = Math.log(comparison.b / comparison.a);
    const ctl = Math.log(cb / ca);
    if (Math.sign(own) === Math.sign(ctl) && Math.abs(ctl) >= 0.5 * Math.abs(own))
      return { by: 'host', control: seriesText(rule.control, attrs), move: relativeMove(ca, cb) };
  }
  return undefined;
}

export interface EnvironmentChange {
  field: string;
  a: Scalar;
  b: Scalar;
}

/** Sysinfo outside the key that may move what a probe measures: listed in the diff's header when it differs. */
const ENVIRONMENT_FIELDS = [
  'kernel',
  'cudart_version',
  'cudart_library',
  'pcie_gen_current',
  'pcie_width_current',
  'display_active',
  'hags_setting',
  'container_runtime',
  'driver_model',
];

export function environmentChanges(ra: BehaviourRecord, rb: BehaviourRecord): EnvironmentChange[] {
  const out: EnvironmentChange[] = [];
  for (const field of ENVIRONMENT_FIELDS) {
    // A field one side lacks (an older cudaprobe) is not a difference.
    const [valueA, valueB] = [ra.sysinfo[field] ?? null, rb.sysinfo[field] ?? null];
    if (valueA !== null && valueB !== null && valueA !== valueB) out.push({ field, a: valueA, b: valueB });
  }
  for (const field of ['cudaprobe', 'probeHash'] as const) {
    const [toolA, toolB] = [ra.tool[field] ?? null, rb.tool[field] ?? null];
    if (toolA !== toolB) out.push({ field: field === 'probeHash' ? 'cudaprobe build' : 'cudaprobe version', a: toolA, b: toolB });
  }
  return out;
}

/**
 * Each record's segment of its key's history: a record that drifted (record's driftedFrom)
 * starts a new one, so that a regression and the runs after it are not counted as noise of the
 * runs before it (nor those as its noise).
 */
export function segmentsOf(history: readonly BehaviourRecord[]): Map<BehaviourRecord, number> {
  const out = new Map<BehaviourRecord, number>();
  if (!history.some((record) => record.driftedFrom)) return out;
  const byKey = new Map<string, BehaviourRecord[]>();
  for (const record of history) {
    const k = keyText(record.key);
    byKey.set(k, [...(byKey.get(k) ?? []), record]);
  }
  for (const list of byKey.values()) {
    const byDate = [...list].sort((left, right) =>
      left.observed.date < right.observed.date ? -1 : left.observed.date > right.observed.date ? 1 : 0,
    );
    let segment = 0;
    for (const record of byDate) {
      if (record.driftedFrom) segment++;
      out.set(record, segment);
    }
  }
  return out;
}

/** The cells of a record during which another process used the GPU. */
export function sharedCells(record: BehaviourRecord): SharedCell[] {
  return (record.shared ?? []).filter((cell) => cell.processes > 0);
}

/** Whether any cell of a record shared the GPU with another process. */
export const sharedRun = (record: BehaviourRecord): boolean =>
  record.shared !== undefined && record.shared.some((cell) => cell.processes > 0);
