/**
 * The small statistics the benches share: medians, the spread of a set of rounds, the order of
 * alternated rounds, and bench/probe-accuracy's ratio rule. Pure functions, tested in
 * bench/stats.test.ts.
 */

/** The median (the mean of the two middle values for an even count); NaN for no values. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export interface Spread {
  /** Every round's value, in the order measured. */
  values: number[];
  median: number;
  min: number;
  max: number;
  /** (max - min) / median: 0 for one round; NaN when a value is missing (NaN) or the median is 0. */
  relSpread: number;
}

export function spread(values: readonly number[]): Spread {
  const v = [...values];
  if (v.length === 0 || v.some((x) => !Number.isFinite(x))) return { values: v, median: NaN, min: NaN, max: NaN, relSpread: NaN };
  const m = median(v);
  const min = Math.min(...v);
  const max = Math.max(...v);
  return { values: v, median: m, min, max, relSpread: m === 0 ? NaN : (max - min) / m };
}

/** The spread as text: (max - min) / median in percent ("3.5 %"), or "n/a". */
export function formatSpread(s: Spread): string {
  return Number.isFinite(s.relSpread) ? `${(s.relSpread * 100).toFixed(1)} %` : 'n/a';
}

/**
 * The order of round `round` (from 0) of alternated measurements: the list rotated by one per
 * round, so that each side goes first (and follows each other side) equally often, and a drift
 * (clocks, caches, a neighbour's load) does not always land on the same side.
 */
export function roundOrder<T>(round: number, sides: readonly T[]): T[] {
  const n = sides.length;
  if (n === 0) return [];
  const k = ((round % n) + n) % n;
  return [...sides.slice(k), ...sides.slice(0, k)];
}

export interface RatioCheck {
  ours: Spread;
  peer: Spread;
  /** median(ours) / median(peer). */
  ratio: number;
  /** The allowed |ratio - 1|: max(floor, ours.relSpread + peer.relSpread). */
  tolerance: number;
  ok: boolean;
  /** The spread, not the floor, set the tolerance (the rounds disagreed more than the floor). */
  widenedBySpread: boolean;
  /** Why it failed, or the empty string. */
  why: string;
}

/**
 * bench/probe-accuracy's rule for comparing cudaprobe with its peer over alternated rounds:
 * passes when |median(ours) / median(peer) - 1| <= max(floor, s_ours + s_peer), where s is a
 * side's (max - min) / median over its rounds. A difference the rounds themselves show on
 * either side is not held against the probe; a larger one fails. Missing values fail.
 */
export function ratioCheck(ours: readonly number[], peer: readonly number[], floor = 0.05): RatioCheck {
  const o = spread(ours);
  const p = spread(peer);
  const ratio = o.median / p.median;
  const combined = o.relSpread + p.relSpread;
  const tolerance = Math.max(floor, Number.isFinite(combined) ? combined : 0);
  if (!Number.isFinite(ratio) || !Number.isFinite(combined) || o.median <= 0 || p.median <= 0) {
    return {
      ours: o,
      peer: p,
      ratio,
      tolerance,
      ok: false,
      widenedBySpread: false,
      why: `missing or invalid values (cudaprobe ${JSON.stringify(ours)}, peer ${JSON.stringify(peer)})`,
    };
  }
  const ok = Math.abs(ratio - 1) <= tolerance;
  return {
    ours: o,
    peer: p,
    ratio,
    tolerance,
    ok,
    widenedBySpread: combined > floor,
    why: ok
      ? ''
      : `ratio ${ratio.toFixed(3)} is off by ${(Math.abs(ratio - 1) * 100).toFixed(1)} %, beyond ${(tolerance * 100).toFixed(1)} %`,
  };
}
