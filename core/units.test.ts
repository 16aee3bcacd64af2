import { describe, expect, it } from 'vitest';
import { formatValue, toUnit } from './units.ts';

describe('units', () => {
  it.each([
    [50, 'us', 50],
    ['50 us', 'us', 50],
    ['1.5ms', 'us', 1500],
    ['2 GiB', 'bytes', 2 * 1024 ** 3],
    ['512MiB', 'bytes', 512 * 1024 ** 2],
    ['12 GB/s', 'GB/s', 12],
    ['500 MB/s', 'GB/s', 0.5],
    ['60 %', 'ratio', 0.6],
    ['0.6', 'ratio', 0.6],
  ] as const)('%j in %s is %d', (value, unit, expected) => {
    expect(toUnit(value, unit)).toBeCloseTo(expected, 9);
  });

  it.each([
    ['5 GiB', 'us', 'in bytes, but this metric is measured in us'],
    ['5 parsecs', 'us', 'unknown unit "parsecs"'],
    ['fast', 'us', 'not a number with an optional unit'],
  ] as const)('refuses %j for %s', (value, unit, message) => {
    expect(() => toUnit(value, unit)).toThrow(message);
  });

  it.each([
    [150109880320, 'bytes', '140 GiB'],
    [12.5 * 1024 ** 3, 'bytes', '12.5 GiB'],
    [140 * 1024 ** 3, 'bytes', '140 GiB'],
    [1536, 'bytes', '1.5 KiB'],
    [12.345, 'us', '12.3 us'],
    [0.6, 'ratio', '0.6'],
    [null, 'us', '—'],
  ] as const)('formats %j %s as %s', (value, unit, text) => {
    expect(formatValue(value, unit)).toBe(text);
  });
});
