/**
 * The small statistics the benches share: medians, the spread of a set of rounds, the order of
 * alternated rounds, and bench/probe-accuracy's ratio rule. Pure functions, tested in
 * bench/stats.test.ts.
 */

/** The median (the mean of the two middle values for an even count); NaN for no values. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((left, right) => left - right);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
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
  const measured = [...values];
  if (measured.length === 0 || measured.some((value) => !Number.isFinite(value)))
    return { values: measured, median: NaN, min: NaN, max: NaN, relSpread: NaN };
  const middle = median(measured);
  const min = Math.min(...measured);
  const max = Math.max(...measured);
  return { values: measured, median: middle, min, max, relSpread: middle === 0 ? NaN : (max - min) / middle };
}

/** The spread as text: (max - min) / median in percent ("3.5 %"), or "n/a". */
export function formatSpread(sideSpread: Spread): string {
  return Number.isFinite(sideSpread.relSpread) ? `${(sideSpread.relSpread * 100).toFixed(1)} %` : 'n/a';
}

/**
 * The order of round `round` (from 0) of alternated measurements: the list rotated by one per
 * round, so that each side goes first (and follows each other side) equally often, and a drift
 * (clocks, caches, a neighbour's load) does not always land on the same side.
 */
export function roundOrder<T>(round: number, sides: readonly T[]): T[] {
  const sideCount = sides.length;
  if (sideCount === 0) return [];
  const k = ((round % sideCount) + sideCount) % sideCount;
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
  const oursSpread = spread(ours);
  const peerSpread = spread(peer);
  const ratio = oursSpread.median / peerSpread.median;
  const combined = oursSpread.relSpread + peerSpread.relSpread;
  const tolerance = Math.max(floor, Number.isFinite(combined) ? combined : 0);
  if (!Number.isFinite(ratio) || !Number.isFinite(combined) || oursSpread.median <= 0 || peerSpread.median <= 0) {
    return {
      ours: oursSpread,
      peer: peerSpread,
      ratio,
      tolerance,
      ok: false,
      widenedBySpread: false,
      why: `missing or invalid values (cudaprobe ${JSON.stringify(ours)}, peer ${JSON.stringify(peer)})`,
    };
  }
  const ok = Math.abs(ratio - 1) <= tolerance;
  return {
    ours: oursSpread,
    peer: peerSpread,
    ratio,
    tolerance,
    ok,
    widenedBySpread: combined > floor,
    why: ok
      ? ''
      : `ratio ${ratio.toFixed(3)} is off by ${(Math.abs(ratio - 1) * 100).toFixed(1)} %, beyond ${(tolerance * 100).toFixed(1)} %`,
  };
}
