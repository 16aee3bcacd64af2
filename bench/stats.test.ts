import { describe, expect, it } from 'vitest';
import { median, ratioCheck, roundOrder, spread } from './stats.ts';

describe('median and spread', () => {
  it('takes the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('gives min-max relative to the median, keeping every round in order', () => {
    const measured = spread([50, 54, 53, 52, 55]);
    expect(measured.values).toEqual([50, 54, 53, 52, 55]);
    expect(measured).toMatchObject({ median: 53, min: 50, max: 55 });
    expect(measured.relSpread).toBeCloseTo(5 / 53, 12);
    expect(spread([7]).relSpread).toBe(0);
    expect(spread([1, NaN, 2]).relSpread).toBeNaN();
  });
});

describe('roundOrder', () => {
  it('rotates the sides by one per round', () => {
    expect(roundOrder(0, ['a', 'b'])).toEqual(['a', 'b']);
    expect(roundOrder(1, ['a', 'b'])).toEqual(['b', 'a']);
    expect(roundOrder(2, ['a', 'b'])).toEqual(['a', 'b']);
    expect(roundOrder(4, ['a', 'b', 'c'])).toEqual(['b', 'c', 'a']);
    const firsts = [0, 1, 2, 3, 4, 5].map((round) => roundOrder(round, ['a', 'b', 'c'])[0]);
    expect(firsts.filter((first) => first === 'a')).toHaveLength(2);
  });
});

describe('ratioCheck (bench/probe-accuracy)', () => {
  it('passes within the 5 % floor when the rounds agree', () => {
    const check = ratioCheck([53.7, 53.6, 53.8], [52.0, 52.1, 51.9]);
    expect(check.ratio).toBeCloseTo(53.7 / 52.0, 12);
    expect(check.tolerance).toBe(0.05);
    expect(check.ok).toBe(true);
    expect(check.widenedBySpread).toBe(false);
  });

  it('fails a steady difference beyond 5 % that the spreads do not cover', () => {
    const check = ratioCheck([53.7, 53.6, 53.8, 53.7, 53.6], [48.0, 48.2, 47.9, 48.1, 48.0]);
    expect(check.ok).toBe(false);
    expect(check.why).toMatch(/beyond 5.0 %/);
  });

  it('does not fail a difference the measured rounds themselves show (a cold first round)', () => {
    // The H200 rerun: the peer's first measurement was cold (32 GB/s), the others were not.
    const check = ratioCheck([53.67, 53.7, 53.6, 53.8, 53.7], [32.13, 52.0, 52.1, 51.9, 52.2]);
    // Medians compare warm with warm: the cold round no longer decides the ratio.
    expect(check.ratio).toBeCloseTo(53.7 / 52.0, 12);
    expect(check.ok).toBe(true);
    // and a real 30 % gap with that spread is still a failure once it is beyond it
    const realGap = ratioCheck([80, 80, 80, 80, 80], [32.13, 52.0, 52.1, 51.9, 52.2]);
    expect(realGap.tolerance).toBeCloseTo((52.2 - 32.13) / 52.0, 12);
    expect(realGap.ok).toBe(false);
  });

  it('widens to the two sides\u2019 spreads combined, and no further', () => {
    // ours 100 +- 4 % (spread 8 %), peer 92 (no spread): ratio 1.087, tolerance 8 %: fails;
    const check = ratioCheck([96, 100, 104], [92, 92, 92]);
    expect(check.tolerance).toBeCloseTo(0.08, 12);
    expect(check.widenedBySpread).toBe(true);
    expect(check.ok).toBe(false);
    // peer 93: ratio 1.075, within 8 %: passes.
    expect(ratioCheck([96, 100, 104], [93, 93, 93]).ok).toBe(true);
  });

  it('fails missing values instead of passing them', () => {
    expect(ratioCheck([NaN, 50], [50, 50]).ok).toBe(false);
    expect(ratioCheck([50], []).ok).toBe(false);
    expect(ratioCheck([0], [50]).ok).toBe(false);
  });
});
