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
import { keyText, type BehaviourRecord, type RecordedMetric, type SharedCell } from './format.ts';
import { HISTORY_PER_DRIVER, median, testSeries, type RunNoise, type SeriesTest } from './noise.ts';

/** The minimum effect where the catalogue names none (a metric of a newer cudaprobe). */
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
  /** Another process used the GPU during the fact's cell (how many): not called the driver's. */
  shared?: number;
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
  /** The series' value on each side (a run's own; of several runs, their geometric mean). */
  a: number | null;
  b: number | null;
  /** How many repetitions each side's run has for the series (1: a single value). */
  repeats: { a: number; b: number };
  /** How many runs each side has (1: a single run or record). */
  runs: { a: number; b: number };
  /** |a - b| / max(|a|, |b|); null when a side has no value. */
  move: number | null;
  /** The largest move that is noise (the larger of the minimum effect and the measured bound). */
  noise: number;
  /** The minimum effect: the catalogue's tolerance for the series (or the default where it names none). A smaller move is never a change. */
  tolerance: number;
  /** Changes up to this much, in the metric's unit, are no change whatever their fraction (0: none). */
  absolute: number;
  /** The measured noise: run to run over the key's records, and the two runs' own repetitions. */
  measured: { runs: RunNoise | null; repeatsSd: number | null };
  /** The largest move the measured noise allows at the family error (0 when nothing was measured). */
  bound: number;
  /** What measured the noise: the runs of the key, the repetitions of the two runs, or nothing (the minimum effect alone decides). */
  noiseFrom: SeriesTest['from'];
  /**
   * changed: beyond the minimum effect and the measured noise; same: within one of them;
   * undecided: beyond the minimum effect but within the measured noise (too noisy to tell).
   */
  verdict: 'changed' | 'same' | 'undecided';
  /** Why a change is not the driver's: its host control moved with it, or another process used the GPU during its cell. */
  explained?: { by: 'host'; control: string; move: number } | { by: 'shared'; processes: number } | { by: 'environment'; fields: string[] };
  /** Around-the-driver differences that came with a counted change (the drivers differ too, so both are suspects). */
  with?: string[];
  /** Why the values could not be compared (a unit changed, a value missing). */
  problem?: string;
  /** Counted as a change of behaviour (verdict changed, or a problem, and not explained). */
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
  /** Default expectations whose outcome differs (passed -> failed): listed; the fact or metric under them decides. */
  verdicts: { title: string; a: string; b: string }[];
  /** What differs around the driver (kernel, cudaprobe build, ...): said in the header; moves are labelled with it. */
  environment: EnvironmentChange[];
  /** Cells during which another process used the GPU, per side. */
  shared: { a: SharedCell[]; b: SharedCell[] };
  /** The key's other runs that measured its run-to-run noise, and in how many groups (driver and kernel). */
  history: { runs: number; groups: number };
  /** How many runs each side has (1: a single run or record). */
  runs: { a: number; b: number };
  /** A fact or cell changed, or a metric moved beyond its noise, and neither was explained by a shared GPU or the host. */
  changed: boolean;
}

export interface EnvironmentChange {
  field: string;
  a: Scalar;
  b: Scalar;
}

export type { SharedCell };

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

/** The numeric values of a series in a record: its repetitions (a metric's `repeats`, or several entries of it), else its value. */
function valuesAt(metrics: RecordedMetric[], at: number[]): number[] {
  if (at.length === 1) {
    const m = metrics[at[0]!]!;
    if (m.value === null) return [];
    return m.repeats && m.repeats.length > 1 ? m.repeats : [m.value];
  }
  const out: number[] = [];
  for (const i of at) {
    const v = metrics[i]!.value;
    if (v !== null) out.push(v);
  }
  return out;
}

/** A record's value of a series: its own (the median the probe reported), or the median of its several entries. */
function valueAt(metrics: RecordedMetric[], at: number[]): number | null {
  if (at.length === 1) return metrics[at[0]!]!.value;
  const v = valuesAt(metrics, at);
  return v.length ? median(v) : null;
}

/** The relative move between two values: |a - b| / max(|a|, |b|), 0 when both are 0. */
export function relativeMove(a: number, b: number): number {
  const scale = Math.max(Math.abs(a), Math.abs(b));
  return scale === 0 ? 0 : Math.abs(a - b) / scale;
}

const pct = (x: number) => `${+(x * 100).toFixed(x < 0.1 ? 2 : 1)} %`;

/** Counts of a pair's metric comparisons (all of them, also those not kept). */
export interface MetricTally {
  compared: number;
  flagged: number;
  /** Beyond the minimum effect but within the measured noise: too noisy to tell. */
  undecided: number;
  /** Changes explained by the host's control or a shared GPU (not counted as the driver's). */
  explained: number;
  /** Of the series that moved beyond their minimum effect (and so were tested), how many had their noise measured by each way. */
  noiseFrom: { runs: number; repeats: number; none: number };
  /**
   * The unflagged series that came nearest a change, if any moved: by move / noise, or by
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

/** What the test of one pair's series needs besides the two records: each side's runs, the key's other runs. */
interface PairSamples {
  /** Each side's runs of the key (its compared record first). */
  runsA: BehaviourRecord[];
  runsB: BehaviourRecord[];
  /** The key's other runs, grouped by driver and kernel: each group should agree. */
  groups: BehaviourRecord[][];
  /** How many series the pair compares (the Bonferroni count). */
  series: number;
}

/** Each record's value of a series (those without it left out, and those whose cell shared the GPU: no run-to-run noise of the driver's). */
function seriesValues(k: string, records: readonly BehaviourRecord[]): number[] {
  const out: number[] = [];
  const probe = k.slice(0, k.indexOf('.'));
  for (const r of records) {
    const at = shapeOf(r.metrics).get(k);
    if (!at || r.shared?.some((c) => c.probe === probe && c.processes > 0)) continue;
    const v = valueAt(r.metrics, at);
    if (v !== null) out.push(v);
  }
  return out;
}

const geometricMean = (v: number[]) => (v.every((x) => x > 0) ? Math.exp(v.reduce((s, x) => s + Math.log(x), 0) / v.length) : median(v));

/**
 * Compares one series; returns the comparison when it is flagged or `keep` asks for every one,
 * else only counts it (10,000 record pairs make 1.7 million comparisons: most are noise).
 */
function compareSeries(
  k: string,
  name: string,
  ma: RecordedMetric[],
  pa: number[],
  mb: RecordedMetric[],
  pb: number[],
  samples: PairSamples,
  keep: boolean,
  tally: MetricTally,
): MetricComparison | null {
  const first = ma[pa[0]!]!;
  const firstB = mb[pb[0]!]!;
  const attrs = first.attrs ?? {};
  const rule = ruleFor(name, attrs);
  const tolerance = rule?.relative ?? DEFAULT_TOLERANCE;
  const absolute = rule?.absolute ?? 0;
  const own = { a: valueAt(ma, pa), b: valueAt(mb, pb) };
  const ra = valuesAt(ma, pa);
  const rb = valuesAt(mb, pb);
  const runsA = samples.runsA.length > 1 ? seriesValues(k, samples.runsA) : own.a === null ? [] : [own.a];
  const runsB = samples.runsB.length > 1 ? seriesValues(k, samples.runsB) : own.b === null ? [] : [own.b];
  const a = own.a === null ? null : runsA.length > 1 ? geometricMean(runsA) : own.a;
  const b = own.b === null ? null : runsB.length > 1 ? geometricMean(runsB) : own.b;
  let move: number | null = null;
  let verdict: MetricComparison['verdict'] = 'same';
  let flagged: boolean;
  let problem: string | undefined;
  let test: SeriesTest = { from: 'none', runs: null, repeatsSd: null, critical: 0, bound: 0, beyond: true };
  if (first.unit !== firstB.unit) {
    problem = `unit changed: ${first.unit} → ${firstB.unit}`;
    flagged = true;
    verdict = 'changed';
  } else if (a === null || b === null) {
    const missing = a === null && b === null ? null : a === null ? 'a' : 'b';
    const reason = missing === 'a' ? first.reason : missing === 'b' ? firstB.reason : undefined;
    problem =
      missing === null ? 'not measured on either side' : `measured on one side only: no value in ${missing}${reason ? ` (${reason})` : ''}`;
    flagged = missing !== null;
    if (flagged) verdict = 'changed';
  } else {
    move = relativeMove(a, b);
    // A hair over in floating point is not a move.
    const beyondEffect = move > tolerance + 1e-9 && Math.abs(a - b) > absolute;
    // The test runs only where it can matter (beyond the minimum effect) or is asked for: most series stop here.
    if (beyondEffect || keep)
      test = testSeries({
        a: runsA,
        b: runsB,
        groups: samples.groups.map((g) => seriesValues(k, g)),
        repeatsA: ra.length > 1 ? ra : undefined,
        repeatsB: rb.length > 1 ? rb : undefined,
        series: samples.series,
      });
    verdict = beyondEffect ? (test.beyond ? 'changed' : 'undecided') : 'same';
    flagged = verdict === 'changed';
  }
  const noise = Math.max(tolerance, test.bound);
  tally.compared++;
  if (verdict !== 'same' && problem === undefined) tally.noiseFrom[test.from]++;
  if (flagged) tally.flagged++;
  else if (verdict === 'undecided') tally.undecided++;
  if (!flagged && move !== null && move > 0) {
    const delta = Math.abs(a! - b!);
    const nearness = Math.min(noise > 0 ? move / noise : Infinity, absolute > 0 ? delta / absolute : Infinity);
    if (!tally.nearest || nearness > tally.nearest.nearness)
      tally.nearest = { name, attrs, unit: first.unit, move, noise, delta, absolute, nearness };
  }
  if (!flagged && !keep) return null;
  return {
    name,
    attrs,
    unit: first.unit,
    a,
    b,
    repeats: { a: ra.length, b: rb.length },
    runs: { a: runsA.length, b: runsB.length },
    move,
    noise,
    tolerance,
    absolute,
    measured: { runs: test.runs, repeatsSd: test.repeatsSd },
    bound: test.bound,
    noiseFrom: test.from,
    verdict,
    ...(problem ? { problem } : {}),
    flagged,
  };
}

/** How a comparison's noise was decided, in words ("noise of 9 runs ±2.1 %; minimum effect ±3 %"). */
export function noiseText(m: MetricComparison): string {
  if (m.problem) return m.problem;
  const effect =
    ruleFor(m.name, m.attrs) === undefined
      ? `minimum effect ±${pct(m.tolerance)} (the default: not in the catalogue)`
      : `minimum effect ±${pct(m.tolerance)}${m.absolute ? ` or ${formatValue(m.absolute, m.unit)}` : ''}`;
  const measured =
    m.noiseFrom === 'runs'
      ? `noise of ${m.measured.runs!.runs} runs of this series ±${pct(m.bound)} (sd ${pct(m.measured.runs!.sd)}, ${m.measured.runs!.df} df)`
      : m.noiseFrom === 'repeats'
        ? `noise of the repetitions ±${pct(m.bound)} (${m.repeats.a} in a, ${m.repeats.b} in b; run-to-run noise not measured)`
        : 'noise not measured (fewer than 3 degrees of freedom of other runs of this key, and no repetitions)';
  const explained =
    m.explained?.by === 'host'
      ? CONTROL_SERIES.has(m.name)
        ? "; a host control: the host's, not the driver's"
        : `; its host control ${m.explained.control} moved ${pct(m.explained.move)} with it: the host's, not the driver's`
      : m.explained?.by === 'shared'
        ? `; ${m.explained.processes} other process${m.explained.processes === 1 ? '' : 'es'} used the GPU during its cell: not called the driver's`
        : '';
  const verdict = m.verdict === 'undecided' ? ' (beyond the minimum effect, within the noise: too noisy to tell)' : '';
  const around = m.with?.length ? `; ${m.with.join(', ')} also differed: the change may be theirs` : '';
  return `${measured}; ${effect}${verdict}${explained}${around}`;
}

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

function hostControl(m: MetricComparison, ra: BehaviourRecord, rb: BehaviourRecord): MetricComparison['explained'] | undefined {
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

function environmentChanges(ra: BehaviourRecord, rb: BehaviourRecord): EnvironmentChange[] {
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
function segmentsOf(history: readonly BehaviourRecord[]): Map<BehaviourRecord, number> {
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

/** The differences between two records of one key (drivers may differ). `history`: the records that measure the key's noise (the two included or not). */
export function diffPair(
  ra: BehaviourRecord,
  rb: BehaviourRecord,
  all = false,
  context: { history?: readonly BehaviourRecord[]; runsA?: BehaviourRecord[]; runsB?: BehaviourRecord[] } = {},
): PairDiff {
  const facts: FactChange[] = [];
  const decided: FactChange[] = [];
  const onlyA = { facts: [] as string[], metrics: [] as string[], cells: [] as string[] };
  const onlyB = { facts: [] as string[], metrics: [] as string[], cells: [] as string[] };
  const shared = { a: sharedCells(ra), b: sharedCells(rb) };
  const sharedProbes = new Map<string, number>();
  for (const s of [...shared.a, ...shared.b]) sharedProbes.set(s.probe, Math.max(sharedProbes.get(s.probe) ?? 0, s.processes));
  const probeOf = (name: string) => name.slice(0, name.indexOf('.'));
  let explainedFacts = 0;
  let factsCompared = 0;
  for (const [name, f] of Object.entries(ra.facts)) {
    const g = rb.facts[name];
    if (!g) onlyA.facts.push(name);
    else {
      factsCompared++;
      if (f.value !== g.value) {
        if (f.value === null || g.value === null) decided.push({ name, a: f.value, b: g.value });
        else {
          const processes = sharedProbes.get(probeOf(name));
          facts.push({ name, a: f.value, b: g.value, ...(processes ? { shared: processes } : {}) });
          if (processes) explainedFacts++;
        }
      }
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
  // Each side's runs (a single run or record: itself), and the key's other runs by driver and
  // kernel: a pair cannot measure its own noise (their difference would be both the move and
  // the noise it is judged by), and a kernel update moves some numbers (sync latency by 18 % on
  // the H200 between two kernels) that are no run-to-run noise.
  const runsA = context.runsA?.length ? context.runsA : [ra];
  const runsB = context.runsB?.length ? context.runsB : [rb];
  const inSides = new Set([...runsA, ...runsB, ra, rb].map((r) => r.id));
  const groupsBy = new Map<string, Map<string, BehaviourRecord>>();
  const perKernel = new Map<string, number>();
  const segment = segmentsOf(context.history ?? []);
  for (const r of context.history ?? []) {
    if (inSides.has(r.id) || r.metrics.length === 0) continue;
    // At most HISTORY_PER_DRIVER of each driver and kernel, in the order given (newest first).
    const kernel = `${r.key.driver}\u0000${String(r.sysinfo.kernel ?? '')}`;
    const g = `${kernel}\u0000${segment.get(r) ?? 0}`;
    let group = groupsBy.get(g);
    if (group?.has(r.id) || (perKernel.get(kernel) ?? 0) >= HISTORY_PER_DRIVER) continue;
    if (!group) groupsBy.set(g, (group = new Map()));
    group.set(r.id, r);
    perKernel.set(kernel, (perKernel.get(kernel) ?? 0) + 1);
  }
  let series = 0;
  for (const k of shapeA.keys()) if (shapeB === shapeA || shapeB.has(k)) series++;
  const samples: PairSamples = { runsA, runsB, groups: [...groupsBy.values()].map((g) => [...g.values()]), series };
  const environment = environmentChanges(ra, rb);
  // What differs around the driver is said beside each change: it may be theirs.
  const aroundDriver = environment.map((e) => e.field);
  const metrics: MetricComparison[] = [];
  const tally: MetricTally = {
    compared: 0,
    flagged: 0,
    undecided: 0,
    explained: 0,
    noiseFrom: { runs: 0, repeats: 0, none: 0 },
    nearest: null,
  };
  for (const [k, pa] of shapeA) {
    const pb = shapeB === shapeA ? pa : shapeB.get(k);
    const m = ra.metrics[pa[0]!]!;
    if (!pb) onlyA.metrics.push(seriesText(m.name, m.attrs));
    else {
      const c = compareSeries(k, m.name, ra.metrics, pa, rb.metrics, pb, samples, all, tally);
      if (c?.flagged) {
        const processes = sharedProbes.get(probeOf(c.name));
        const explained: MetricComparison['explained'] = processes ? { by: 'shared', processes } : hostControl(c, ra, rb);
        if (!explained && aroundDriver.length) c.with = aroundDriver;
        if (explained) {
          c.explained = explained;
          c.flagged = false;
          tally.flagged--;
          tally.explained++;
        }
      }
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
  const verdictsB = new Map(rb.verdicts.map((v) => [v.title, v.status]));
  const verdicts = ra.verdicts.flatMap((v) => {
    const other = verdictsB.get(v.title);
    return other !== undefined && other !== v.status ? [{ title: v.title, a: v.status, b: other }] : [];
  });
  const sharedCellChange = cells.filter((c) => sharedProbes.has(c.probe)).length;
  const changed = facts.length - explainedFacts > 0 || cells.length - sharedCellChange > 0 || tally.flagged > 0;
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
    verdicts,
    environment,
    shared,
    history: { runs: samples.groups.reduce((n, g) => n + g.length, 0), groups: samples.groups.length },
    runs: { a: runsA.length, b: runsB.length },
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

/** Whether any cell of a record shared the GPU with another process. */
const sharedRun = (r: BehaviourRecord): boolean => r.shared !== undefined && r.shared.some((c) => c.processes > 0);

/**
 * The one compared first: a record with facts before one without (a run of sysinfo alone must
 * not hide a full one), one that had the GPU alone before one that shared it (a neighbour's
 * numbers must not be the baseline), then the newest.
 */
export const newestFirst = (x: BehaviourRecord, y: BehaviourRecord) =>
  Number(hasFacts(y)) - Number(hasFacts(x)) ||
  Number(sharedRun(x)) - Number(sharedRun(y)) ||
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

/**
 * Of records read for diff: those it needs in full. Each key's newest and its probes' newest
 * records (as diffRecords compares them), and the runs that measure the key's noise: the newest
 * HISTORY_PER_DRIVER of each driver and kernel (diffPair takes no more).
 */
export function comparedRecords(records: BehaviourRecord[]): Set<BehaviourRecord> {
  const out = new Set<BehaviourRecord>();
  for (const list of byKey(records).values()) {
    for (const r of composed(list).used) out.add(r);
    const taken = new Map<string, number>();
    for (const r of list) {
      const kernel = `${r.key.driver}\u0000${String(r.sysinfo.kernel ?? '')}`;
      const n = taken.get(kernel) ?? 0;
      if (n >= HISTORY_PER_DRIVER) continue;
      out.add(r);
      taken.set(kernel, n + 1);
    }
  }
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
  options: { all?: boolean; history?: BehaviourRecord[] } = {},
): RecordsDiff {
  const ga = byKey(Array.isArray(a) ? a : [a]);
  const gb = byKey(Array.isArray(b) ? b : [b]);
  const gh = byKey(options.history ?? []);
  const pairs: PairDiff[] = [];
  const onlyA: Unpaired[] = [];
  const onlyB: Unpaired[] = [];
  const older = (newest: BehaviourRecord, r: BehaviourRecord) =>
    !hasFacts(r) && hasFacts(newest)
      ? `an observation of this key without facts; the newest with facts (${newest.id.slice(0, 8)}, ${newest.observed.date.slice(0, 10)}) was compared`
      : sharedRun(r) && !sharedRun(newest)
        ? `a run that shared the GPU with other processes; the newest that had it alone (${newest.id.slice(0, 8)}, ${newest.observed.date.slice(0, 10)}) was compared`
        : `an older observation of this key; the newest (${newest.id.slice(0, 8)}, ${newest.observed.date.slice(0, 10)}) was compared`;
  for (const [key, la] of ga) {
    const lb = gb.get(key);
    if (!lb) {
      for (const r of la) onlyA.push({ key, record: side(r), reason: 'no observation of this key on the other side' });
      continue;
    }
    // Each side as one record: its newest, each probe from the newest record that measured it.
    const [ca, cb] = [composed(la), composed(lb)];
    // Each side's runs of the compared driver, whole (a folder's digests are read whole in the
    // history where it has them); the key's other runs in the history measure its noise.
    const whole = new Map((gh.get(key) ?? []).map((r) => [r.id, r]));
    // A side's runs: its records of the compared record's driver and kernel (a kernel moves some
    // numbers: runs of another are the key's history, a group of their own, not this side's).
    const runsOf = (list: BehaviourRecord[], compared: BehaviourRecord) =>
      list
        .filter((r) => r.key.driver === compared.key.driver && r.sysinfo.kernel === compared.sysinfo.kernel && !sharedRun(r))
        .map((r) => (r.metrics.length ? r : whole.get(r.id)))
        .filter((r): r is BehaviourRecord => r !== undefined && r.metrics.length > 0)
        .slice(0, HISTORY_PER_DRIVER);
    const runsA = runsOf(la, ca.record);
    const runsB = runsOf(lb, cb.record);
    // A single run per side stands as the compared (composed) record itself.
    const pair = diffPair(ca.record, cb.record, options.all ?? false, {
      history: [...la, ...lb, ...(gh.get(key) ?? [])],
      runsA: runsA.length > 1 ? runsA : [ca.record],
      runsB: runsB.length > 1 ? runsB : [cb.record],
    });
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
