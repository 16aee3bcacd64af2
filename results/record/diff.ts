/**
 * What changed between two sets of behaviour records (two runs, two records, two driver
 * versions' folders): pure, so that `cudamatrix diff`, a workflow and bench/report call the same.
 * How records pair, what is compared and how a metric's noise is decided: docs/records.md,
 * "cudamatrix diff A B" and "Noise".
 */
import { formatValue } from '../../core/units.ts';
import { catalogue, type MetricTolerance } from '../../probes/catalogue.ts';
import type { Scalar } from '../../probes/protocol.ts';
import { composeRecord, hasFacts, newestByProbe } from './compose.ts';
import { keyText, type BehaviourRecord, type RecordedMetric } from './format.ts';

/** Noise where the catalogue names none (a metric of a newer cudaprobe). */
export const DEFAULT_TOLERANCE = 0.1;

export interface DiffSide {
  id: string;
  driver: string;
  date: string;
  runId: string;
  target: string;
  /** Other records of the key whose probes were compared in place of this one's (composed: an opt-in run's record over a full one). */
  takenFrom?: { id: string; probes: string[] }[];
}

export interface FactChange {
  name: string;
  a: Scalar;
  b: Scalar;
}

export interface CellChange {
  probe: string;
  a: string;
  b: string;
}

export interface MetricComparison {
  name: string;
  attrs: Record<string, Scalar>;
  unit: string;
  /** The series' value on each side (the median of its repeats). */
  a: number | null;
  b: number | null;
  /** How many values each side has for the series. */
  repeats: { a: number; b: number };
  /** |a - b| / max(|a|, |b|); null when a side has no value. */
  move: number | null;
  /** The relative noise applied: the larger of `tolerance` and `spread`. */
  noise: number;
  /** The catalogue's relative tolerance for the series (or the default where it names none). */
  tolerance: number;
  /** Changes up to this much, in the metric's unit, are noise whatever their fraction (0: none). */
  absolute: number;
  /** The spread of the series' repeats, the larger of the two sides' (0: no repeats). */
  spread: number;
  /** What decided the noise: the catalogue's tolerance, the spread of repeats, or the default. */
  noiseFrom: 'catalogue' | 'spread' | 'default';
  /** Why the values could not be compared (a unit changed, a value missing). */
  problem?: string;
  flagged: boolean;
}

export interface PairDiff {
  /** The key without the driver: what the two records are both of. */
  key: string;
  a: DiffSide;
  b: DiffSide;
  /** Facts both records decided, with different values: a change. */
  facts: FactChange[];
  /** Facts one record decided and the other left undecided (null): newly decided (a null) or no longer (b null); listed, not a change. */
  decided: FactChange[];
  cells: CellChange[];
  /** The series both records have that moved beyond their noise (with `all`, every one), in a's order. */
  metrics: MetricComparison[];
  metricTally: MetricTally;
  factsCompared: number;
  cellsCompared: number;
  onlyA: { facts: string[]; metrics: string[]; cells: string[] };
  onlyB: { facts: string[]; metrics: string[]; cells: string[] };
  /** A fact or cell changed, or a metric moved beyond its noise. */
  changed: boolean;
}

export interface Unpaired {
  key: string;
  record: DiffSide;
  /** Why it was not compared. */
  reason: string;
  /** The id of the record of this key on the same side that was compared instead (absent: the other side has no record of the key). */
  comparedInstead?: string;
}

/** Records of one full key (driver included) on one side whose facts disagree: a conflict kept in a folder. */
export interface SideConflict {
  side: 'a' | 'b';
  /** The full key (with the driver). */
  key: string;
  records: DiffSide[];
  /** The facts they both have with different values. */
  facts: string[];
}

export interface RecordsDiff {
  changed: boolean;
  pairs: PairDiff[];
  /** Observations of a key that the other side has none of, and older ones of a compared key. */
  onlyA: Unpaired[];
  onlyB: Unpaired[];
  /** Keys with records on one side that disagree on a fact: only the first of them was compared. */
  conflicts: SideConflict[];
}

const side = (r: BehaviourRecord): DiffSide => ({
  id: r.id,
  driver: r.key.driver,
  date: r.observed.date,
  runId: r.observed.runId,
  target: r.observed.target,
});

/** The key without the driver (the pairing of records of two driver versions). */
export const pairingKey = (r: BehaviourRecord): string => keyText({ ...r.key, driver: '' });

/** A catalogue rule with its `where` as a list, matched without allocating (it runs 1.7 million times for 10,000 records). */
interface Rule {
  tolerance: MetricTolerance;
  where: [string, Scalar | { below: number }][];
}

/** Tolerance rules by "probe.metric", from the catalogue. */
const tolerances = new Map<string, Rule[]>(
  catalogue.flatMap((p) =>
    p.metrics.map((m) => {
      const list = m.tolerance === undefined ? [] : Array.isArray(m.tolerance) ? m.tolerance : [m.tolerance];
      return [`${p.name}.${m.name}`, list.map((t) => ({ tolerance: t, where: Object.entries(t.where ?? {}) }))] as const;
    }),
  ),
);

function ruleFor(name: string, attrs: Record<string, Scalar>): MetricTolerance | undefined {
  const rules = tolerances.get(name);
  if (!rules) return undefined;
  outer: for (const rule of rules) {
    for (const [k, want] of rule.where) {
      const got = attrs[k];
      const ok = want !== null && typeof want === 'object' ? typeof got === 'number' && got < want.below : got === want;
      if (!ok) continue outer;
    }
    return rule.tolerance;
  }
  return undefined;
}

/** A series' identity: name and attrs, whatever the attrs' order (a string of its own, not JSON: 10,000 records must diff in well under a second). */
function seriesKey(m: RecordedMetric): string {
  const attrs = m.attrs;
  if (!attrs) return m.name;
  const keys = Object.keys(attrs);
  if (keys.length > 1) keys.sort();
  let s = m.name;
  for (const k of keys) {
    const v = attrs[k];
    s += `\u0000${k}\u0001${typeof v}:${String(v)}`;
  }
  return s;
}

/** Where each series of a record lies: series key -> its positions in the record's metrics. */
type Shape = Map<string, number[]>;

const shapes = new WeakMap<RecordedMetric[], Shape>();
function shapeOf(metrics: RecordedMetric[]): Shape {
  let got = shapes.get(metrics);
  if (got) return got;
  got = new Map();
  for (let i = 0; i < metrics.length; i++) {
    const k = seriesKey(metrics[i]!);
    const at = got.get(k);
    if (at) at.push(i);
    else got.set(k, [i]);
  }
  shapes.set(metrics, got);
  return got;
}

function sameAttrs(p: Record<string, Scalar> | undefined, q: Record<string, Scalar> | undefined): boolean {
  if (p === q) return true;
  if (!p || !q) return false;
  let n = 0;
  for (const k in p) {
    if (p[k] !== q[k]) return false;
    n++;
  }
  for (const _ in q) n--;
  return n === 0;
}

/**
 * Whether two records list the same series in the same order (runs of one cudaprobe: the usual
 * case), so that one's shape serves both: keying every metric of every record is most of the
 * cost of diffing 10,000 of them.
 */
function aligned(x: RecordedMetric[], y: RecordedMetric[]): boolean {
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i]!.name !== y[i]!.name || !sameAttrs(x[i]!.attrs, y[i]!.attrs)) return false;
  return true;
}

/** The numeric values of a series (its repeats). */
function valuesAt(metrics: RecordedMetric[], at: number[]): number[] {
  const out: number[] = [];
  for (const i of at) {
    const v = metrics[i]!.value;
    if (v !== null) out.push(v);
  }
  return out;
}

function median(v: number[]): number {
  if (v.length === 1) return v[0]!;
  const s = [...v].sort((x, y) => x - y);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The relative move between two values: |a - b| / max(|a|, |b|), 0 when both are 0. */
export function relativeMove(a: number, b: number): number {
  const scale = Math.max(Math.abs(a), Math.abs(b));
  return scale === 0 ? 0 : Math.abs(a - b) / scale;
}

/** The spread of a series' repeats: (max - min) / max |value|; 0 for fewer than two. */
function spreadOf(v: number[]): number {
  if (v.length < 2) return 0;
  return relativeMove(Math.min(...v), Math.max(...v));
}

const pct = (x: number) => `${+(x * 100).toFixed(x < 0.1 ? 2 : 1)} %`;

/** Counts of a pair's metric comparisons (all of them, also those not kept). */
export interface MetricTally {
  compared: number;
  flagged: number;
  /** How many had their noise decided by each way. */
  noiseFrom: { catalogue: number; spread: number; default: number };
  /**
   * The unflagged series that came nearest its noise, if any moved: by move / noise, or by
   * |a - b| / absolute where that is smaller (a move flags only when it passes both).
   */
  nearest: {
    name: string;
    attrs: Record<string, Scalar>;
    unit: string;
    move: number;
    noise: number;
    delta: number;
    absolute: number;
    nearness: number;
  } | null;
}

/**
 * Compares one series; returns the comparison when it is flagged or `keep` asks for every one,
 * else only counts it (10,000 record pairs make 1.7 million comparisons: most are noise).
 */
function compareSeries(
  name: string,
  ma: RecordedMetric[],
  pa: number[],
  mb: RecordedMetric[],
  pb: number[],
  keep: boolean,
  tally: MetricTally,
): MetricComparison | null {
  const first = ma[pa[0]!]!;
  const firstB = mb[pb[0]!]!;
  const attrs = first.attrs ?? {};
  const rule = ruleFor(name, attrs);
  const tolerance = rule?.relative ?? DEFAULT_TOLERANCE;
  const absolute = rule?.absolute ?? 0;
  let a: number | null;
  let b: number | null;
  let spread = 0;
  if (pa.length === 1) a = first.value;
  else {
    const v = valuesAt(ma, pa);
    a = v.length ? median(v) : null;
    spread = spreadOf(v);
  }
  if (pb.length === 1) b = firstB.value;
  else {
    const v = valuesAt(mb, pb);
    b = v.length ? median(v) : null;
    spread = Math.max(spread, spreadOf(v));
  }
  const noiseFrom = spread > tolerance ? 'spread' : rule ? 'catalogue' : 'default';
  const noise = spread > tolerance ? spread : tolerance;
  let move: number | null = null;
  let flagged: boolean;
  let problem: string | undefined;
  if (first.unit !== firstB.unit) {
    problem = `unit changed: ${first.unit} → ${firstB.unit}`;
    flagged = true;
  } else if (a === null || b === null) {
    const missing = a === null && b === null ? null : a === null ? 'a' : 'b';
    const reason = missing === 'a' ? first.reason : missing === 'b' ? firstB.reason : undefined;
    problem =
      missing === null ? 'not measured on either side' : `measured on one side only: no value in ${missing}${reason ? ` (${reason})` : ''}`;
    flagged = missing !== null;
  } else {
    move = relativeMove(a, b);
    // A hair over the noise in floating point is not a move.
    flagged = move > noise + 1e-9 && Math.abs(a - b) > absolute;
  }
  tally.compared++;
  tally.noiseFrom[noiseFrom]++;
  if (flagged) tally.flagged++;
  else if (move !== null && move > 0) {
    const delta = Math.abs(a! - b!);
    const nearness = Math.min(noise > 0 ? move / noise : Infinity, absolute > 0 ? delta / absolute : Infinity);
    if (!tally.nearest || nearness > tally.nearest.nearness)
      tally.nearest = { name, attrs, unit: first.unit, move, noise, delta, absolute, nearness };
  }
  if (!flagged && !keep) return null;
  const repeats = { a: pa.length, b: pb.length };
  return {
    name,
    attrs,
    unit: first.unit,
    a,
    b,
    repeats,
    move,
    noise,
    tolerance,
    absolute,
    spread,
    noiseFrom,
    ...(problem ? { problem } : {}),
    flagged,
  };
}

/** How a comparison's noise was decided, in words ("catalogue ±3 %", "spread of repeats 22 % ..."). */
export function noiseText(m: MetricComparison): string {
  if (m.problem) return m.problem;
  const catalogueText =
    m.noiseFrom === 'default' || (m.noiseFrom === 'spread' && !ruleFor(m.name, m.attrs))
      ? `no tolerance in the catalogue: default ±${pct(m.tolerance)}`
      : `catalogue ±${pct(m.tolerance)}${m.absolute ? ` or ${formatValue(m.absolute, m.unit)}` : ''}`;
  const repeatsText = m.spread > 0 ? `spread of repeats ${pct(m.spread)} (${m.repeats.a} in a, ${m.repeats.b} in b)` : '';
  return m.noiseFrom === 'spread'
    ? `${repeatsText}, over the ${catalogueText}`
    : `${catalogueText}${repeatsText ? `; ${repeatsText}` : ''}`;
}

/** The differences between two records of one key (drivers may differ). */
export function diffPair(ra: BehaviourRecord, rb: BehaviourRecord, all = false): PairDiff {
  const facts: FactChange[] = [];
  const decided: FactChange[] = [];
  const onlyA = { facts: [] as string[], metrics: [] as string[], cells: [] as string[] };
  const onlyB = { facts: [] as string[], metrics: [] as string[], cells: [] as string[] };
  let factsCompared = 0;
  for (const [name, f] of Object.entries(ra.facts)) {
    const g = rb.facts[name];
    if (!g) onlyA.facts.push(name);
    else {
      factsCompared++;
      if (f.value !== g.value) (f.value === null || g.value === null ? decided : facts).push({ name, a: f.value, b: g.value });
    }
  }
  for (const name of Object.keys(rb.facts)) if (!(name in ra.facts)) onlyB.facts.push(name);

  const cells: CellChange[] = [];
  const cellsB = new Map(rb.cells.map((c) => [c.probe, c.status]));
  let cellsCompared = 0;
  for (const c of ra.cells) {
    const other = cellsB.get(c.probe);
    if (other === undefined) onlyA.cells.push(c.probe);
    else {
      cellsCompared++;
      if (other !== c.status) cells.push({ probe: c.probe, a: c.status, b: other });
    }
  }
  const cellsA = new Set(ra.cells.map((c) => c.probe));
  for (const c of rb.cells) if (!cellsA.has(c.probe)) onlyB.cells.push(c.probe);

  const shapeA = shapeOf(ra.metrics);
  const shapeB = aligned(ra.metrics, rb.metrics) ? shapeA : shapeOf(rb.metrics);
  const metrics: MetricComparison[] = [];
  const tally: MetricTally = { compared: 0, flagged: 0, noiseFrom: { catalogue: 0, spread: 0, default: 0 }, nearest: null };
  for (const [k, pa] of shapeA) {
    const pb = shapeB === shapeA ? pa : shapeB.get(k);
    const m = ra.metrics[pa[0]!]!;
    if (!pb) onlyA.metrics.push(seriesText(m.name, m.attrs));
    else {
      const c = compareSeries(m.name, ra.metrics, pa, rb.metrics, pb, all, tally);
      if (c) metrics.push(c);
    }
  }
  if (shapeB !== shapeA) {
    for (const [k, pb] of shapeB) {
      if (shapeA.has(k)) continue;
      const m = rb.metrics[pb[0]!]!;
      onlyB.metrics.push(seriesText(m.name, m.attrs));
    }
  }

  const changed = facts.length > 0 || cells.length > 0 || tally.flagged > 0;
  return {
    key: pairingKey(ra),
    a: side(ra),
    b: side(rb),
    facts,
    decided,
    cells,
    metrics,
    metricTally: tally,
    factsCompared,
    cellsCompared,
    onlyA,
    onlyB,
    changed,
  };
}

/** A series as people read it: name {attr: value, ...}. */
export function seriesText(name: string, attrs: Record<string, Scalar> | undefined): string {
  const entries = Object.entries(attrs ?? {});
  return entries.length
    ? `${name} {${entries.map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ')}}`
    : name;
}

/** The one compared first: a record with facts before one without (a run of sysinfo alone must not hide a full one), then the newest. */
export const newestFirst = (x: BehaviourRecord, y: BehaviourRecord) =>
  Number(hasFacts(y)) - Number(hasFacts(x)) ||
  (x.observed.date < y.observed.date ? 1 : x.observed.date > y.observed.date ? -1 : x.id < y.id ? -1 : x.id > y.id ? 1 : 0);

/** One key's records (newest first) as the one diff compares: the newest, with each probe from the newest that measured it; and the records it took. */
function composed(list: BehaviourRecord[]): { record: BehaviourRecord; used: Set<BehaviourRecord>; takenFrom: DiffSide['takenFrom'] } {
  const byProbe = newestByProbe(
    list,
    (x, y) => newestFirst(x, y) < 0,
    (r) => r,
  );
  const others = new Map<BehaviourRecord, string[]>();
  for (const [probe, r] of [...byProbe].sort(([x], [y]) => (x < y ? -1 : 1)))
    if (r !== list[0]) others.set(r, [...(others.get(r) ?? []), probe]);
  return {
    record: composeRecord(list[0]!, byProbe),
    used: new Set([list[0]!, ...byProbe.values()]),
    takenFrom: [...others].map(([r, probes]) => ({ id: r.id, probes })),
  };
}

/** Of records read for diff: those it compares in full (each key's newest and its probes' newest records, as diffRecords takes them). */
export function comparedRecords(records: BehaviourRecord[]): Set<BehaviourRecord> {
  const out = new Set<BehaviourRecord>();
  for (const list of byKey(records).values()) for (const r of composed(list).used) out.add(r);
  return out;
}

function byKey(records: BehaviourRecord[]): Map<string, BehaviourRecord[]> {
  const out = new Map<string, BehaviourRecord[]>();
  for (const r of records) {
    const k = pairingKey(r);
    const list = out.get(k);
    if (list) list.push(r);
    else out.set(k, [r]);
  }
  for (const list of out.values()) list.sort(newestFirst);
  return out;
}

/** Per full key (driver included) of a side, the records that disagree on a fact both have. */
function sideConflicts(name: 'a' | 'b', groups: Map<string, BehaviourRecord[]>): SideConflict[] {
  const out: SideConflict[] = [];
  for (const list of groups.values()) {
    if (list.length < 2) continue;
    const byFull = new Map<string, BehaviourRecord[]>();
    for (const r of list) {
      const k = keyText(r.key);
      const same = byFull.get(k);
      if (same) same.push(r);
      else byFull.set(k, [r]);
    }
    for (const [key, rs] of byFull) {
      // A fact disagrees when its records hold two decided values (null is undecided, not a
      // disagreement); every record that decided it is then one of those that disagree. One
      // pass over the facts, not a comparison of every pair of records.
      const values = new Map<string, { first: unknown; differs: boolean; records: BehaviourRecord[] }>();
      for (const r of rs) {
        for (const [n, f] of Object.entries(r.facts)) {
          if (f.value === null) continue;
          const v = values.get(n);
          if (!v) values.set(n, { first: f.value, differs: false, records: [r] });
          else {
            v.differs ||= v.first !== f.value;
            v.records.push(r);
          }
        }
      }
      const facts = [...values].filter(([, v]) => v.differs);
      const involved = new Set(facts.flatMap(([, v]) => v.records));
      if (facts.length)
        out.push({ side: name, key, records: rs.filter((r) => involved.has(r)).map(side), facts: facts.map(([n]) => n).sort() });
    }
  }
  return out;
}

/**
 * The differences between two sets of records (or two records). `changed` says whether
 * behaviour changed: a fact or a cell's outcome, or a metric beyond its noise, in any pair.
 * Each pair keeps the metrics that moved beyond their noise, and with `all` every metric compared.
 */
export function diffRecords(
  a: BehaviourRecord | BehaviourRecord[],
  b: BehaviourRecord | BehaviourRecord[],
  options: { all?: boolean } = {},
): RecordsDiff {
  const ga = byKey(Array.isArray(a) ? a : [a]);
  const gb = byKey(Array.isArray(b) ? b : [b]);
  const pairs: PairDiff[] = [];
  const onlyA: Unpaired[] = [];
  const onlyB: Unpaired[] = [];
  const older = (newest: BehaviourRecord, r: BehaviourRecord) =>
    !hasFacts(r) && hasFacts(newest)
      ? `an observation of this key without facts; the newest with facts (${newest.id.slice(0, 8)}, ${newest.observed.date.slice(0, 10)}) was compared`
      : `an older observation of this key; the newest (${newest.id.slice(0, 8)}, ${newest.observed.date.slice(0, 10)}) was compared`;
  for (const [key, la] of ga) {
    const lb = gb.get(key);
    if (!lb) {
      for (const r of la) onlyA.push({ key, record: side(r), reason: 'no observation of this key on the other side' });
      continue;
    }
    // Each side as one record: its newest, each probe from the newest record that measured it.
    const [ca, cb] = [composed(la), composed(lb)];
    const pair = diffPair(ca.record, cb.record, options.all ?? false);
    if (ca.takenFrom!.length) pair.a.takenFrom = ca.takenFrom;
    if (cb.takenFrom!.length) pair.b.takenFrom = cb.takenFrom;
    pairs.push(pair);
    for (const r of la.slice(1))
      if (!ca.used.has(r)) onlyA.push({ key, record: side(r), reason: older(la[0]!, r), comparedInstead: la[0]!.id });
    for (const r of lb.slice(1))
      if (!cb.used.has(r)) onlyB.push({ key, record: side(r), reason: older(lb[0]!, r), comparedInstead: lb[0]!.id });
  }
  for (const [key, lb] of gb)
    if (!ga.has(key)) for (const r of lb) onlyB.push({ key, record: side(r), reason: 'no observation of this key on the other side' });
  const conflicts = [...sideConflicts('a', ga), ...sideConflicts('b', gb)];
  return { changed: pairs.some((p) => p.changed), pairs, onlyA, onlyB, conflicts };
}
