import { describe, expect, it } from 'vitest';
import { CudamatrixError } from '../core/errors.ts';
import { parseMatrix } from './load.ts';
import { parseShard, planCells, shardSlice } from './plan.ts';

const matrix = parseMatrix(
  ['version: 1', 'defaults: {probes: [sysinfo]}', 'targets:', ...['lab-a', 'lab-b', 'ci-1', 'ci-2', 'ci-3'].map((n) => `  - name: ${n}`)].join('\n'),
  'plan.yaml',
);

describe('planner', () => {
  it('names cells target/probe in matrix order', () => {
    const plan = planCells(matrix);
    expect(plan.cells.map((c) => c.name)).toEqual(['lab-a/sysinfo', 'lab-b/sysinfo', 'ci-1/sysinfo', 'ci-2/sysinfo', 'ci-3/sysinfo']);
  });

  it('filters targets and probes with globs, repeatable or comma-separated', () => {
    expect(planCells(matrix, { targets: ['lab-*'] }).cells.map((c) => c.target)).toEqual(['lab-a', 'lab-b']);
    expect(planCells(matrix, { targets: ['ci-[12]', 'lab-b'] }).cells.map((c) => c.target)).toEqual(['lab-b', 'ci-1', 'ci-2']);
    expect(planCells(matrix, { targets: ['lab-a,ci-3'] }).cells.map((c) => c.target)).toEqual(['lab-a', 'ci-3']);
    expect(planCells(matrix, { probes: ['sys*'] }).cells).toHaveLength(5);
    const all = parseMatrix('version: 1\ntargets:\n  - name: a\n', 'all.yaml');
    expect(planCells(all, { probes: ['pinned-*'] }).cells.map((c) => c.probe)).toEqual(['pinned-vram', 'pinned-release', 'pinned-ceiling']);
  });

  it('says what exists when nothing matches', () => {
    expect(() => planCells(matrix, { targets: ['prod-*'] })).toThrow(/no cell .* matches --target prod-\*; targets: lab-a, lab-b/);
    try {
      planCells(matrix, { probes: ['nope'] });
    } catch (e) {
      expect((e as CudamatrixError).code).toBe('NO_CELLS');
    }
  });

  it('splits into shards that are disjoint, complete, balanced and deterministic', () => {
    const items = Array.from({ length: 23 }, (_, i) => i);
    for (const total of [1, 2, 3, 5, 23, 30]) {
      const parts = Array.from({ length: total }, (_, i) => shardSlice(items, { index: i + 1, total }));
      expect(parts.flat()).toEqual(items);
      const sizes = parts.map((p) => p.length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      expect(parts).toEqual(Array.from({ length: total }, (_, i) => shardSlice(items, { index: i + 1, total })));
    }
    const plan = planCells(matrix, { shard: '2/2' });
    expect(plan.cells.map((c) => c.target)).toEqual(['ci-2', 'ci-3']);
    expect(plan.targets.map((t) => t.name)).toEqual(['ci-2', 'ci-3']);
  });

  it.each(['0/2', '3/2', '1/0', 'a/b', '1-2', ''])('refuses --shard %j', (text) => {
    expect(() => parseShard(text)).toThrow(CudamatrixError);
  });
});
