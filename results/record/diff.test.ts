import { beforeAll, describe, expect, it } from 'vitest';
import { catalogue } from '../../probes/catalogue.ts';
import { diffRecords, noiseText, relativeMove } from './diff.ts';
import { formatDiff } from './diff-text.ts';
import { doctored, h200Records, metricOf } from './fixture.ts';
import type { BehaviourRecord } from './format.ts';

let runs: BehaviourRecord[];
beforeAll(async () => {
  runs = await h200Records();
});

const pinned1GiB = { direction: 'h2d', memory: 'pinned', size_bytes: 1024 ** 3 };

describe('diff of the committed H200 runs (one driver, one machine)', () => {
  it('every pair of the four runs, both ways round: no fact or cell changed, no metric beyond its noise', () => {
    for (let i = 0; i < runs.length; i++) {
      for (let j = 0; j < runs.length; j++) {
        if (i === j) continue;
        const d = diffRecords(runs[i]!, runs[j]!, { all: true });
        const flagged = d.pairs.flatMap((p) =>
          p.metrics.filter((m) => m.flagged).map((m) => `${m.name} ${JSON.stringify(m.attrs)} ${m.a} -> ${m.b}: ${noiseText(m)}`),
        );
        expect(flagged, `run ${i} against run ${j}`).toEqual([]);
        expect(d.changed).toBe(false);
        expect(d.pairs).toHaveLength(1);
        const p = d.pairs[0]!;
        expect([p.factsCompared, p.facts, p.cellsCompared, p.cells]).toEqual([20, [], 13, []]);
        // every metric series is compared (pinned-ceiling's runtime rounds repeat 5 of them)
        expect([p.metricTally.compared, p.metrics.length, p.onlyA, p.onlyB]).toEqual([
          166,
          166,
          { facts: [], metrics: [], cells: [] },
          { facts: [], metrics: [], cells: [] },
        ]);
      }
    }
  });

  it('a fact null on one side and decided on the other is newly (or no longer) decided, not a change; decided both ways differently is', () => {
    const undecided = doctored(runs[0]!, 'd0d0d0d0d0d0d0d0', (x) => void (x.facts['pinned-vram.counts_as_vram']!.value = null));
    const p = diffRecords(undecided, runs[1]!).pairs[0]!;
    expect([p.facts, p.decided, p.changed]).toEqual([[], [{ name: 'pinned-vram.counts_as_vram', a: null, b: false }], false]);
    expect(diffRecords(runs[1]!, undecided).pairs[0]!.decided).toEqual([{ name: 'pinned-vram.counts_as_vram', a: false, b: null }]);
    expect(formatDiff(diffRecords(runs[1]!, undecided), { a: 'a', b: 'b' }, new Map())).toContain(
      '    pinned-vram.counts_as_vram  false → null (no longer decided)\n',
    );
    const flipped = doctored(runs[0]!, 'e0e0e0e0e0e0e0e0', (x) => void (x.facts['pinned-vram.counts_as_vram']!.value = true));
    const q = diffRecords(flipped, runs[1]!).pairs[0]!;
    expect([q.facts, q.decided, q.changed]).toEqual([[{ name: 'pinned-vram.counts_as_vram', a: true, b: false }], [], true]);
  });

  it('they do differ: the noise is real (the H200 runs moved alloc times by 60 % and pageable copies by 38 %)', () => {
    const moves = (name: string, where: Record<string, unknown> = {}) =>
      Math.max(
        ...runs.flatMap((a) =>
          runs.map((b) => {
            const p = diffRecords(a, b, { all: true }).pairs[0]!;
            return Math.max(
              0,
              ...p.metrics
                .filter((m) => m.name === name && Object.entries(where).every(([k, v]) => m.attrs[k] === v))
                .map((m) => m.move ?? 0),
            );
          }),
        ),
      );
    expect(moves('pinned-vram.alloc_ms')).toBeGreaterThan(0.6);
    expect(moves('transfer-bandwidth.bandwidth_gbps', { memory: 'pageable' })).toBeGreaterThan(0.35);
    expect(moves('transfer-bandwidth.bandwidth_gbps', { memory: 'pinned', size_bytes: 1024 ** 3 })).toBeLessThan(0.005);
  });
});

describe('a doctored copy', () => {
  it('series on one side only are counted in words: "1 metric series", "2 metric series" (not "seriess")', () => {
    const fewer = (n: number) => doctored(runs[0]!, 'f0f0f0f0f0f0f0f0', (x) => void x.metrics.splice(0, n));
    expect(formatDiff(diffRecords(runs[0]!, fewer(1)), { a: 'a', b: 'b' }, new Map())).toContain(
      '  only in a (not compared): 1 metric series\n',
    );
    expect(formatDiff(diffRecords(runs[0]!, fewer(2)), { a: 'a', b: 'b' }, new Map())).toContain(
      '  only in a (not compared): 2 metric series\n',
    );
  });

  it('one fact changed and one pinned bandwidth halved: both flagged, and nothing else', () => {
    const copy = doctored(runs[0]!, 'd0c704edd0c704ed', (x) => {
      x.facts['pinned-release.released']!.value = 'on-exit';
      metricOf(x, 'transfer-bandwidth.bandwidth_gbps', pinned1GiB).value! /= 2;
    });
    const d = diffRecords([runs[0]!], [copy]);
    expect(d.changed).toBe(true);
    const p = d.pairs[0]!;
    expect(p.facts).toEqual([{ name: 'pinned-release.released', a: 'on-free', b: 'on-exit' }]);
    expect(p.metrics.map((m) => [m.name, m.attrs, m.move, m.noise, m.noiseFrom, m.flagged])).toEqual([
      ['transfer-bandwidth.bandwidth_gbps', pinned1GiB, 0.5, 0.03, 'catalogue', true],
    ]);
    expect(noiseText(p.metrics[0]!)).toBe('catalogue ±3 %');
    expect(p.metricTally.flagged).toBe(1);
    const text = formatDiff(d, { a: 'a', b: 'b' }, new Map());
    expect(text).toContain('    pinned-release.released  on-free → on-exit\n');
    expect(text).toContain(
      '    transfer-bandwidth.bandwidth_gbps {direction: h2d, memory: pinned, size_bytes: 1073741824}\n        55.4 GB/s → 27.7 GB/s: moved 50 % (×0.5), noise ±3 %: catalogue ±3 %\n',
    );
    expect(text).toMatch(/Behaviour changed \(1 pair of records compared\): 1 fact changed, 1 metric beyond noise\.\n$/);
    // against a run of another day too: the same two, not the other day's noise
    const other = diffRecords(runs[3]!, copy).pairs[0]!;
    expect([other.facts.map((f) => f.name), other.metrics.map((m) => m.name)]).toEqual([
      ['pinned-release.released'],
      ['transfer-bandwidth.bandwidth_gbps'],
    ]);
  });

  it('pinned bandwidth at 1 GiB is flagged at a 5 % drop; pageable at 1 GiB only beyond 45 %', () => {
    const scaled = (attrs: Record<string, unknown>, f: number) =>
      doctored(runs[0]!, '5ca1ed005ca1ed00', (x) => void (metricOf(x, 'transfer-bandwidth.bandwidth_gbps', attrs).value! *= f));
    const pageable = { ...pinned1GiB, memory: 'pageable' };
    expect(diffRecords(runs[0]!, scaled(pinned1GiB, 0.95)).changed).toBe(true);
    expect(diffRecords(runs[0]!, scaled(pinned1GiB, 0.98)).changed).toBe(false);
    expect(diffRecords(runs[0]!, scaled(pageable, 0.6)).changed).toBe(false);
    expect(diffRecords(runs[0]!, scaled(pageable, 0.5)).changed).toBe(true);
  });

  it('a cell that passed and now fails is a change; a metric measured on one side only is flagged with why', () => {
    const copy = doctored(runs[0]!, 'ce11ce11ce11ce11', (x) => {
      x.cells.find((c) => c.probe === 'cuda-log')!.status = 'error';
      const m = metricOf(x, 'sync-latency.p50_us', { iterations: 10000 });
      m.value = null;
      m.reason = 'timed out';
    });
    const p = diffRecords(runs[0]!, copy).pairs[0]!;
    expect(p.cells).toEqual([{ probe: 'cuda-log', a: 'passed', b: 'error' }]);
    expect(p.metrics.map((m) => [m.name, m.flagged, m.problem])).toEqual([
      ['sync-latency.p50_us', true, 'measured on one side only: no value in b (timed out)'],
    ]);
  });

  it('a value near zero moves by a large fraction within its absolute noise; beyond it, it is flagged', () => {
    const attrs = { api: 'driver', kind: 'device', size_bytes: 4 * 1024 ** 3 };
    const grown = (bytes: number) =>
      doctored(runs[0]!, 'ab50107eab50107e', (x) => void (metricOf(x, 'pinned-vram.host_growth_bytes', attrs).value = bytes));
    expect(diffRecords(runs[0]!, grown(2 * 266240)).changed).toBe(false);
    const p = diffRecords(runs[0]!, grown(100 * 1024 ** 2)).pairs[0]!;
    expect(p.metrics.map((m) => [m.name, m.flagged, noiseText(m)])).toEqual([
      ['pinned-vram.host_growth_bytes', true, 'catalogue ±5 % or 16 MiB'],
    ]);
  });

  it('repeats that spread more than the catalogue allows widen the noise, and the output says so', () => {
    const attrs = { api: 'runtime', variant: 'reset' };
    const spread = doctored(runs[0]!, '5b7ead005b7ead00', (x) => {
      const rounds = x.metrics.filter((m) => m.name === 'pinned-ceiling.chunk_alloc_ms' && m.attrs?.variant === 'reset');
      expect(rounds).toHaveLength(2);
      rounds[0]!.value = 100;
      rounds[1]!.value = 20; // 80 % apart, over the catalogue's 70 %
    });
    const moved = doctored(runs[0]!, '5b7ead015b7ead01', (x) => {
      for (const m of x.metrics.filter((m) => m.name === 'pinned-ceiling.chunk_alloc_ms' && m.attrs?.variant === 'reset')) m.value = 400;
    });
    const d = diffRecords(spread, moved, { all: true });
    const m = d.pairs[0]!.metrics.find((x) => x.name === 'pinned-ceiling.chunk_alloc_ms' && x.attrs.variant === attrs.variant)!;
    expect([m.a, m.b, m.repeats, m.noiseFrom, m.noise, m.flagged]).toEqual([60, 400, { a: 2, b: 2 }, 'spread', 0.8, true]);
    expect(noiseText(m)).toBe('spread of repeats 80 % (2 in a, 2 in b), over the catalogue ±70 %');
    expect(relativeMove(60, 400)).toBeCloseTo(0.85);
    const within = doctored(runs[0]!, '5b7ead025b7ead02', (x) => {
      for (const m of x.metrics.filter((m) => m.name === 'pinned-ceiling.chunk_alloc_ms' && m.attrs?.variant === 'reset')) m.value = 250;
    });
    expect(diffRecords(spread, within).changed).toBe(false); // 76 %: beyond the catalogue, within the spread
  });
});

describe('pairing', () => {
  const at = (r: BehaviourRecord, id: string, driver: string, date: string, edit: (x: BehaviourRecord) => void = () => {}) =>
    doctored(r, id, (x) => {
      x.key = { ...x.key, driver };
      x.observed = { ...x.observed, date, runId: `run-${id}` };
      edit(x);
    });

  it('folders of two driver versions pair by key without the driver; a key on one side only is listed, as are older observations', () => {
    const old575 = at(runs[0]!, 'a575000000000001', '575.57.08', '2026-06-01T00:00:00.000Z');
    const older575 = at(runs[1]!, 'a575000000000000', '575.57.08', '2026-05-01T00:00:00.000Z');
    const wsl575 = at(
      runs[0]!,
      'a575000000000002',
      '575.57.08',
      '2026-06-01T00:00:00.000Z',
      (x) => void (x.key = { ...x.key, environment: 'wsl2', os: 'Ubuntu 24.04.3 LTS' }),
    );
    const new580 = at(
      runs[2]!,
      'b580000000000001',
      '580.159.04',
      '2026-12-01T00:00:00.000Z',
      (x) => void (x.facts['cuda-graph.supported']!.value = false),
    );
    const wddm580 = at(
      runs[2]!,
      'b580000000000002',
      '580.159.04',
      '2026-12-01T00:00:00.000Z',
      (x) => void (x.key = { ...x.key, environment: 'wddm', os: 'Windows 11 Pro', osBuild: '26100', container: null }),
    );
    const d = diffRecords([older575, wsl575, old575], [wddm580, new580]);
    expect(d.pairs.map((p) => [p.key, p.a.id, p.b.id, p.a.driver, p.b.driver])).toEqual([
      ['linux · NVIDIA H200 · Ubuntu 24.04.3 LTS · in docker', old575.id, new580.id, '575.57.08', '580.159.04'],
    ]);
    expect(d.pairs[0]!.facts).toEqual([{ name: 'cuda-graph.supported', a: true, b: false }]);
    expect(d.changed).toBe(true);
    expect(d.onlyA.map((u) => [u.record.id, u.reason])).toEqual([
      [older575.id, 'an older observation of this key; the newest (a5750000, 2026-06-01) was compared'],
      [wsl575.id, 'no observation of this key on the other side'],
    ]);
    expect(d.onlyB.map((u) => [u.key, u.reason])).toEqual([
      ['wddm · NVIDIA H200 · Windows 11 Pro · 26100', 'no observation of this key on the other side'],
    ]);
  });

  it('a record listing its metrics in another order (or with attrs in another order) pairs them all the same', () => {
    const reordered = doctored(runs[1]!, 'ae0ade00ae0ade00', (x) => {
      x.metrics = [...x.metrics]
        .reverse()
        .map((m) => (m.attrs ? { ...m, attrs: Object.fromEntries(Object.entries(m.attrs).reverse()) } : m));
    });
    const a = diffRecords(runs[0]!, runs[1]!, { all: true }).pairs[0]!;
    const b = diffRecords(runs[0]!, reordered, { all: true }).pairs[0]!;
    expect(b.metricTally.compared).toBe(166);
    expect(b.metrics.map((m) => [m.name, m.a, m.b, m.move])).toEqual(a.metrics.map((m) => [m.name, m.a, m.b, m.move]));
  });
});

describe('a folder of several records of one key', () => {
  it('is compared as its newest record with each probe from the newest that measured it: a newer run of a few probes hides no change', () => {
    const full = runs[0]!;
    // Newer, of the same key, with only pinned-ceiling measured (an opt-in run).
    const few = doctored(full, 'f0f0f0f0f0f0f0f0', (r) => {
      r.observed = { ...r.observed, date: '2099-01-01T00:00:00.000Z' };
      r.facts = Object.fromEntries(Object.entries(r.facts).filter(([n]) => n.startsWith('pinned-ceiling.')));
      r.metrics = r.metrics.filter((m) => m.name.startsWith('pinned-ceiling.'));
      r.cells = r.cells.filter((c) => c.probe === 'pinned-ceiling');
    });
    const changed = doctored(full, 'c0c0c0c0c0c0c0c0', (r) => {
      r.facts['pinned-vram.counts_as_vram'] = { value: !r.facts['pinned-vram.counts_as_vram']!.value };
    });
    const d = diffRecords([full, few], [changed]);
    expect(d.changed).toBe(true);
    expect(d.pairs[0]!.facts.map((f) => f.name)).toEqual(['pinned-vram.counts_as_vram']);
    // Both records of side a were compared: neither is listed as left out.
    expect(d.onlyA).toEqual([]);
    // Cells too (a new user saw "cells 3 compared", the others "only in b"), and the side says
    // which record its other probes came from.
    const pair = d.pairs[0]!;
    expect(pair.cellsCompared).toBe(full.cells.length);
    expect(pair.onlyB.cells).toEqual([]);
    expect(pair.a.id).toBe(few.id);
    const taken = full.cells.map((c) => c.probe).filter((p) => p !== 'pinned-ceiling');
    expect(pair.a.takenFrom).toEqual([
      { id: full.id, probes: expect.arrayContaining(taken.filter((p) => full.cells.find((c) => c.probe === p)!.status === 'passed')) },
    ]);
    expect(pair.b.takenFrom).toBeUndefined();
    const text = formatDiff(
      d,
      { a: 'a', b: 'b' },
      new Map([
        [full.id, 'a/full.json'],
        [few.id, 'a/few.json'],
        [changed.id, 'b/changed.json'],
      ]),
    );
    expect(text).toMatch(/\n  a  driver .*, a\/few\.json\n     with \S.* from a\/full\.json\n  b  driver .*, b\/changed\.json\n/);
  });
});

describe('the catalogue', () => {
  it('names a tolerance for every metric, so that no metric falls back to the default noise', () => {
    const without = catalogue.flatMap((p) => p.metrics.filter((m) => m.tolerance === undefined).map((m) => `${p.name}.${m.name}`));
    expect(without).toEqual([]);
  });
});
