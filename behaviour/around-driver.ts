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
const CONTROL_SERIES = new Set(HOST_CONTROLS.map((c) => c.control));

export function hostControl(m: MetricComparison, ra: BehaviourRecord, rb: BehaviourRecord): MetricComparison['explained'] | undefined {
  if (CONTROL_SERIES.has(m.name)) return { by: 'host', control: seriesText(m.name, m.attrs), move: m.move ?? 0 };
  if (m.a === null || m.b === null || m.a <= 0 || m.b <= 0) return undefined;
  for (const c of HOST_CONTROLS) {
    if (c.series !== m.name || Object.entries(c.where).some(([k, v]) => m.attrs[k] !== v)) continue;
    const attrs = Object.fromEntries(c.match.map((k) => [k, m.attrs[k]!]));
    const key = seriesKey({ name: c.control, value: null, unit: '', attrs });
    const [pa, pb] = [shapeOf(ra.metrics).get(key), shapeOf(rb.metrics).get(key)];
    if (!pa || !pb) continue;
    const [ca, cb] = [valueAt(ra.metrics, pa), valueAt(rb.metrics, pb)];
    if (ca === null || cb === null || ca <= 0 || cb <= 0) continue;
    const own = Math.log(m.b / m.a);
    const ctl = Math.log(cb / ca);
    if (Math.sign(own) === Math.sign(ctl) && Math.abs(ctl) >= 0.5 * Math.abs(own))
      return { by: 'host', control: seriesText(c.control, attrs), move: relativeMove(ca, cb) };
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
    const [x, y] = [ra.sysinfo[field] ?? null, rb.sysinfo[field] ?? null];
    if (x !== null && y !== null && x !== y) out.push({ field, a: x, b: y });
  }
  for (const field of ['cudaprobe', 'probeHash'] as const) {
    const [x, y] = [ra.tool[field] ?? null, rb.tool[field] ?? null];
    if (x !== y) out.push({ field: field === 'probeHash' ? 'cudaprobe build' : 'cudaprobe version', a: x, b: y });
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
  if (!history.some((r) => r.driftedFrom)) return out;
  const byKey = new Map<string, BehaviourRecord[]>();
  for (const r of history) {
    const k = keyText(r.key);
    byKey.set(k, [...(byKey.get(k) ?? []), r]);
  }
  for (const list of byKey.values()) {
    let n = 0;
    for (const r of [...list].sort((x, y) => (x.observed.date < y.observed.date ? -1 : x.observed.date > y.observed.date ? 1 : 0))) {
      if (r.driftedFrom) n++;
      out.set(r, n);
    }
  }
  return out;
}

/** The cells of a record during which another process used the GPU. */
export function sharedCells(r: BehaviourRecord): SharedCell[] {
  return (r.shared ?? []).filter((s) => s.processes > 0);
}

/** Whether any cell of a record shared the GPU with another process. */
export const sharedRun = (r: BehaviourRecord): boolean => r.shared !== undefined && r.shared.some((c) => c.processes > 0);
