/* eslint-disable id-length -- formula notation as in Numerical Recipes (Lanczos ln Γ, Lentz's continued fraction, erfc) */
/**
 * The statistics behind every verdict on change (diff, record's drift, the report, gate): how
 * noisy a metric series is, measured from the runs of its key and from its own repetitions, and
 * whether a move between two runs is beyond that noise. Pure and deterministic. Why these
 * statistics and not others: docs/records.md, "Noise".
 */

/**
 * The chance, per pair of runs with nothing changed, that any of its series is called changed
 * (at most: Bonferroni assumes independent series, and a probe's series move together). At 1 %,
 * with the 6-7 df the H200's runs of one kernel give, t is 10.4 and 8.9, and a 50 % sync-latency
 * regression stayed inside its noise (bench/verdict).
 */
export const FAMILY_ERROR = 0.05;

/** Of a key's records, at most this many per driver (and per kernel) are taken as its run-to-run history: the newest. */
export const HISTORY_PER_DRIVER = 16;

/** Repetitions fewer than this say nothing usable about a median's noise. */
const MIN_REPEATS = 5;

/**
 * Run-to-run noise from fewer degrees of freedom than this is not used: its t would be so wide
 * that nothing could ever be called a change (at this error over 215 series t is 2,737 at 1 df,
 * 66 at 2, 21 at 3, 6.9 at 7; the normal's is 3.7).
 */
export const MIN_RUN_DF = 3;

export function median(values: readonly number[]): number {
  if (values.length === 1) return values[0]!;
  const sorted = [...values].sort((left, right) => left - right);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Run-to-run noise: the pooled standard deviation of one run's (transformed) value, its degrees of freedom (runs less groups), how many runs. */
export interface RunNoise {
  sd: number;
  df: number;
  runs: number;
}

/** ln Γ(x), Lanczos (g = 7, n = 9): 15 digits, plenty for a quantile. */
function lnGamma(x: number): number {
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905,
    -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  x -= 1;
  let a = c[0]!;
  const t = x + 7.5;
  for (let i = 1; i < 9; i++) a += c[i]! / (x + i);
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
}

/** The regularized incomplete beta I_x(a, b), by its continued fraction (Lentz). */
function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - incompleteBeta(1 - x, b, a);
  const front = Math.exp(a * Math.log(x) + b * Math.log(1 - x) - (lnGamma(a) + lnGamma(b) - lnGamma(a + b))) / a;
  const tiny = 1e-300;
  let f = 1;
  let c = 1;
  let d = 0;
  for (let i = 0; i <= 300; i++) {
    const m = i >> 1;
    const num =
      i === 0
        ? 1
        : i % 2 === 0
          ? (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m))
          : -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 + num * d;
    d = Math.abs(d) < tiny ? tiny : d;
    d = 1 / d;
    c = 1 + num / c;
    c = Math.abs(c) < tiny ? tiny : c;
    const cd = c * d;
    f *= cd;
    if (Math.abs(1 - cd) < 1e-12) break;
  }
  return front * (f - 1);
}

/** P(|T| > t) for Student's t with df degrees of freedom (df = Infinity: the normal). */
export function twoSidedP(t: number, df: number): number {
  if (!Number.isFinite(df)) return erfc(Math.abs(t) / Math.SQRT2);
  return incompleteBeta(df / (df + t * t), df / 2, 0.5);
}

/** erfc, Numerical Recipes' Chebyshev fit (relative error under 1.2e-7). */
function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

/** The t with P(|T| > t) = p (bisection: monotone, and called once per series kind and df). */
export function criticalT(p: number, df: number): number {
  const cacheKey = `${p}:${df}`;
  const hit = criticalCache.get(cacheKey);
  if (hit !== undefined) return hit;
  let lo = 0;
  let hi = 1;
  while (twoSidedP(hi, df) > p) hi *= 2;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (twoSidedP(mid, df) > p) lo = mid;
    else hi = mid;
  }
  criticalCache.set(cacheKey, hi);
  return hi;
}
const criticalCache = new Map<string, number>();

/** What a series' two sides are, for the test: the runs of each side, and the key's other runs. */
export interface SeriesSamples {
  /** The value of each run of side a (one for a single run or record). */
  a: readonly number[];
  b: readonly number[];
  /** The key's other runs, grouped so that each group should agree (one driver, one kernel). */
  groups: readonly (readonly number[])[];
  /** The repetitions within a side that is a single run (its value's own noise). */
  repeatsA?: readonly number[];
  repeatsB?: readonly number[];
  /** How many series the pair compares: the Bonferroni count. */
  series: number;
}

/** What the test found for one series. */
export interface SeriesTest {
  /** What measured the noise: runs of the key, the two runs' repetitions, or nothing. */
  from: 'runs' | 'repeats' | 'none';
  /** Run-to-run noise (pooled over the sides' and the other runs' groups), where any. */
  runs: RunNoise | null;
  /** The repetitions' standard error of the difference, where used. */
  repeatsSd: number | null;
  /** The critical value (Student's t at the runs' df, or the normal's for repetitions). */
  critical: number;
  /** The largest relative move that is still noise (0: not measured). */
  bound: number;
  /** Whether the difference is beyond the noise. */
  beyond: boolean;
}

const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

/**
 * The two-sample test of a series: the difference of the sides' mean log values against its
 * standard error, sd·√(1/na + 1/nb), with sd the run-to-run noise pooled over every group of
 * runs that should agree (each side with two or more runs, and the key's other runs by driver
 * and kernel), at a per-series error of FAMILY_ERROR / series. Without runs to measure it, the
 * single runs' repetitions (which see only the noise within a run). Series with a value at or
 * below zero are compared on a linear scale (their values over the largest of the two sides).
 */
export function testSeries(samples: SeriesSamples): SeriesTest {
  const all = [...samples.a, ...samples.b, ...samples.groups.flat(), ...(samples.repeatsA ?? []), ...(samples.repeatsB ?? [])];
  const logScale = all.every((value) => value > 0);
  const scale = Math.max(...[...samples.a, ...samples.b].map(Math.abs)) || 1;
  const transform = (values: readonly number[]) => values.map((value) => (logScale ? Math.log(value) : value / scale));
  const [ta, tb] = [transform(samples.a), transform(samples.b)];
  const difference = Math.abs(mean(tb) - mean(ta));
  const perSeriesError = FAMILY_ERROR / Math.max(1, samples.series);
  const groups = [...(samples.a.length > 1 ? [ta] : []), ...(samples.b.length > 1 ? [tb] : []), ...samples.groups.map(transform)];
  const pooled = pooledSd(groups);
  const runs = pooled && pooled.df >= MIN_RUN_DF ? pooled : null;
  const toRelative = (transformedMove: number) => (logScale ? 1 - Math.exp(-transformedMove) : transformedMove);
  if (runs) {
    const critical = criticalT(perSeriesError, runs.df);
    const se = runs.sd * Math.sqrt(1 / samples.a.length + 1 / samples.b.length);
    return { from: 'runs', runs, repeatsSd: null, critical, bound: toRelative(critical * se), beyond: difference > critical * se + 1e-12 };
  }
  const ea = samples.a.length === 1 ? medianErrorOf(samples.repeatsA, transform) : null;
  const eb = samples.b.length === 1 ? medianErrorOf(samples.repeatsB, transform) : null;
  if (ea !== null || eb !== null) {
    const sd = Math.hypot(ea ?? eb!, eb ?? ea!);
    const critical = criticalT(perSeriesError, Infinity);
    return {
      from: 'repeats',
      runs: null,
      repeatsSd: sd,
      critical,
      bound: toRelative(critical * sd),
      beyond: difference > critical * sd + 1e-12,
    };
  }
  return { from: 'none', runs: null, repeatsSd: null, critical: 0, bound: 0, beyond: true };
}

/** Pooled standard deviation of already transformed values, over groups of two or more. */
function pooledSd(groups: readonly (readonly number[])[]): RunNoise | null {
  let ss = 0;
  let df = 0;
  let runs = 0;
  for (const group of groups) {
    runs += group.length;
    if (group.length < 2) continue;
    const groupMean = mean(group);
    for (const value of group) ss += (value - groupMean) ** 2;
    df += group.length - 1;
  }
  return df > 0 ? { sd: Math.sqrt(ss / df), df, runs } : null;
}

/** The standard error of a run's median from its repetitions: 1.2533 σ / √n (the median of n normal draws). */
function medianErrorOf(repeats: readonly number[] | undefined, transform: (values: readonly number[]) => number[]): number | null {
  if (!repeats || repeats.length < MIN_REPEATS) return null;
  const values = transform(repeats);
  const valuesMean = mean(values);
  const sd = Math.sqrt(values.reduce((sum, value) => sum + (value - valuesMean) ** 2, 0) / (values.length - 1));
  return (1.2533 * sd) / Math.sqrt(values.length);
}
