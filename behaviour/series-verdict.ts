/**
 * One metric series compared between two records: the minimum effect the catalogue gives it,
 * the test against its measured noise (./noise.ts), the verdict, and the words that say how it
 * was decided. diffPair (./diff.ts) calls it for every series a pair shares.
 */
import { formatValue } from '../core/units.ts';
import { catalogue, type MetricTolerance } from '../probes/catalogue.ts';
import type { Scalar } from '../probes/protocol.ts';
import type { BehaviourRecord, RecordedMetric } from './behaviour-record.ts';
import { median, testSeries, type RunNoise, type SeriesTest } from './noise.ts';
import { relativeMove, seriesText, shapeOf, valueAt, valuesAt } from './series.ts';

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

/** The minimum effect where the catalogue names none (a metric of a newer cudaprobe). */
export const DEFAULT_TOLERANCE = 0.1;

/** A catalogue rule with its `where` as a list, matched without allocating (it runs 1.7 million times for 10,000 records). */
interface Rule {
  tolerance: MetricTolerance;
  where: [string, Scalar | { below: number }][];
}

/** Tolerance rules by "probe.metric", from the catalogue. */
const tolerances = new Map<string, Rule[]>(
  catalogue.flatMap((probe) =>
    probe.metrics.map((metric) => {
      const list = metric.tolerance === undefined ? [] : Array.isArray(metric.tolerance) ? metric.tolerance : [metric.tolerance];
      return [
        `${probe.name}.${metric.name}`,
        list.map((tolerance) => ({ tolerance, where: Object.entries(tolerance.where ?? {}) })),
      ] as const;
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

const pct = (fraction: number) => `${+(fraction * 100).toFixed(fraction < 0.1 ? 2 : 1)} %`;

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
export interface PairSamples {
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
  for (const record of records) {
    const at = shapeOf(record.metrics).get(k);
    if (!at || record.shared?.some((cell) => cell.probe === probe && cell.processes > 0)) continue;
    const value = valueAt(record.metrics, at);
    if (value !== null) out.push(value);
  }
  return out;
}

const geometricMean = (values: number[]) =>
  values.every((value) => value > 0) ? Math.exp(values.reduce((sum, value) => sum + Math.log(value), 0) / values.length) : median(values);

/**
 * Compares one series; returns the comparison when it is flagged or `keep` asks for every one,
 * else only counts it (10,000 record pairs make 1.7 million comparisons: most are noise).
 */
export function compareSeries(
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
  const valueA = own.a === null ? null : runsA.length > 1 ? geometricMean(runsA) : own.a;
  const valueB = own.b === null ? null : runsB.length > 1 ? geometricMean(runsB) : own.b;
  let move: number | null = null;
  let verdict: MetricComparison['verdict'] = 'same';
  let flagged: boolean;
  let problem: string | undefined;
  let test: SeriesTest = { from: 'none', runs: null, repeatsSd: null, critical: 0, bound: 0, beyond: true };
  if (first.unit !== firstB.unit) {
    problem = `unit changed: ${first.unit} → ${firstB.unit}`;
    flagged = true;
    verdict = 'changed';
  } else if (valueA === null || valueB === null) {
    const missing = valueA === null && valueB === null ? null : valueA === null ? 'a' : 'b';
    const reason = missing === 'a' ? first.reason : missing === 'b' ? firstB.reason : undefined;
    problem =
      missing === null ? 'not measured on either side' : `measured on one side only: no value in ${missing}${reason ? ` (${reason})` : ''}`;
    flagged = missing !== null;
    if (flagged) verdict = 'changed';
  } else {
    move = relativeMove(valueA, valueB);
    // A hair over in floating point is not a move.
    const beyondEffect = move > tolerance + 1e-9 && Math.abs(valueA - valueB) > absolute;
    // The test runs only where it can matter (beyond the minimum effect) or is asked for: most series stop here.
    if (beyondEffect || keep)
      test = testSeries({
        a: runsA,
        b: runsB,
        groups: samples.groups.map((group) => seriesValues(k, group)),
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
    const delta = Math.abs(valueA! - valueB!);
    const nearness = Math.min(noise > 0 ? move / noise : Infinity, absolute > 0 ? delta / absolute : Infinity);
    if (!tally.nearest || nearness > tally.nearest.nearness)
      tally.nearest = { name, attrs, unit: first.unit, move, noise, delta, absolute, nearness };
  }
  if (!flagged && !keep) return null;
  return {
    name,
    attrs,
    unit: first.unit,
    a: valueA,
    b: valueB,
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
export function noiseText(comparison: MetricComparison): string {
  if (comparison.problem) return comparison.problem;
  const effect =
    ruleFor(comparison.name, comparison.attrs) === undefined
      ? `minimum effect ±${pct(comparison.tolerance)} (the default: not in the catalogue)`
      : `minimum effect ±${pct(comparison.tolerance)}${comparison.absolute ? ` or ${formatValue(comparison.absolute, comparison.unit)}` : ''}`;
  const measured =
    comparison.noiseFrom === 'runs'
      ? `noise of ${comparison.measured.runs!.runs} runs of this series ±${pct(comparison.bound)} (sd ${pct(comparison.measured.runs!.sd)}, ${comparison.measured.runs!.df} df)`
      : comparison.noiseFrom === 'repeats'
        ? `noise of the repetitions ±${pct(comparison.bound)} (${comparison.repeats.a} in a, ${comparison.repeats.b} in b; run-to-run noise not measured)`
        : 'noise not measured (fewer than 3 degrees of freedom of other runs of this key, and no repetitions)';
  const explained =
    comparison.explained?.by === 'host'
      ? comparison.explained.control === seriesText(comparison.name, comparison.attrs)
        ? "; a host control: the host's, not the driver's"
        : `; its host control ${comparison.explained.control} moved ${pct(comparison.explained.move)} with it: the host's, not the driver's`
      : comparison.explained?.by === 'shared'
        ? `; ${comparison.explained.processes} other process${comparison.explained.processes === 1 ? '' : 'es'} used the GPU during its cell: not called the driver's`
        : '';
  const verdict = comparison.verdict === 'undecided' ? ' (beyond the minimum effect, within the noise: too noisy to tell)' : '';
  const around = comparison.with?.length ? `; ${comparison.with.join(', ')} also differed: the change may be theirs` : '';
  return `${measured}; ${effect}${verdict}${explained}${around}`;
}
