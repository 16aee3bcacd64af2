import { beforeAll, describe, expect, it } from 'vitest';
import { catalogue } from '../probes/catalogue.ts';
import { diffRecords, noiseText, relativeMove } from './diff.ts';
import { formatDiff } from './diff-text.ts';
import { doctored, h200Records, metricOf } from '../test/record-fixture.ts';
import type { BehaviourRecord } from './behaviour-record.ts';

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
      ['transfer-bandwidth.bandwidth_gbps', pinned1GiB, 0.5, 0.03, 'none', true],
    ]);
    expect(noiseText(p.metrics[0]!)).toBe(
      'noise not measured (fewer than 3 degrees of freedom of other runs of this key, and no repetitions); minimum effect ±3 %',
    );
    expect(p.metricTally.flagged).toBe(1);
    const text = formatDiff(d, { a: 'a', b: 'b' }, new Map());
    expect(text).toContain('    pinned-release.released  on-free → on-exit\n');
    expect(text).toContain(
      '    transfer-bandwidth.bandwidth_gbps {direction: h2d, memory: pinned, size_bytes: 1073741824}\n        55.4 GB/s → 27.7 GB/s: moved 50 % (×0.5), no change up to ±3 %: noise not measured (fewer than 3 degrees of freedom of other runs of this key, and no repetitions); minimum effect ±3 %\n',
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
      [
        'pinned-vram.host_growth_bytes',
        true,
        'noise not measured (fewer than 3 degrees of freedom of other runs of this key, and no repetitions); minimum effect ±5 % or 16 MiB',
      ],
    ]);
  });

  it('repeats that spread more than the catalogue allows widen the noise, and the output says so', () => {
    const attrs = { api: 'runtime', variant: 'reset' };
    const rounds = (values: number[][]) =>
      values.map((v, i) =>
        doctored(runs[0]!, `5b7ead0${i}5b7ead0${i}`, (x) => {
          const list = x.metrics.filter((m) => m.name === 'pinned-ceiling.chunk_alloc_ms' && m.attrs?.variant === 'reset');
          expect(list).toHaveLength(2);
          list.forEach((m, j) => (m.value = v[j]!));
        }),
      );
    // Two rounds a record: the five runs' own repetitions are what measures this series' noise.
    const [spread, moved, within] = rounds([
      [100, 20],
      [400, 400],
      [250, 250],
    ]);
    const repeats = (a: BehaviourRecord, b: BehaviourRecord) => {
      const m = diffRecords(a, b, { all: true }).pairs[0]!.metrics.find(
        (x) => x.name === 'pinned-ceiling.chunk_alloc_ms' && x.attrs.variant === attrs.variant,
      )!;
      return m;
    };
    // Two repetitions say nothing usable about noise (fewer than five): the minimum effect decides.
    const m = repeats(spread!, moved!);
    expect([m.a, m.b, m.repeats, m.noiseFrom, m.flagged]).toEqual([60, 400, { a: 2, b: 2 }, 'none', true]);
    expect(relativeMove(60, 400)).toBeCloseTo(0.85);
    expect(repeats(spread!, within!).flagged).toBe(true);
  });
});

describe('noise measured from the runs of the key and from repetitions', () => {
  const series = 'transfer-bandwidth.bandwidth_gbps';
  const pinned16 = { direction: 'h2d', memory: 'pinned', size_bytes: 16 * 1024 ** 2 };
  /** Copies of one run whose pinned 16 MiB copy is `values[i]` GB/s (each a run of one driver and kernel). */
  const withValues = (values: number[], repeats?: (v: number) => number[]) =>
    values.map((v, i) =>
      doctored(runs[0]!, `00000000000000${String(i).padStart(2, '0')}`, (x) => {
        const m = metricOf(x, series, pinned16);
        m.value = v;
        if (repeats) m.repeats = repeats(v);
        x.observed = { ...x.observed, date: `2026-12-0${1 + (i % 9)}T00:00:00.000Z`, runId: `run-${i}` };
      }),
    );

  it('a move beyond the catalogue tolerance but within the spread of the key other runs is too noisy to tell, not a change', () => {
    // Other runs spread over ±6 %: a 5 % move passes the 3 % minimum effect but not the noise.
    const history = withValues([50, 53, 56, 51, 55, 52, 54, 50.5]);
    const [a, b] = withValues([53, 50.4]).map((r, i) => doctored(r, `aaaaaaaaaaaaaa0${i}`, () => {}));
    const without = diffRecords(a!, b!).pairs[0]!;
    expect(without.changed).toBe(true); // the minimum effect alone (nothing measured) calls it a change
    const p = diffRecords(a!, b!, { history, all: true }).pairs[0]!;
    const m = p.metrics.find(
      (x) => x.name === series && x.attrs.size_bytes === pinned16.size_bytes && x.attrs.direction === 'h2d' && x.attrs.memory === 'pinned',
    )!;
    expect([p.changed, m.verdict, m.noiseFrom, m.measured.runs?.runs, m.measured.runs?.df]).toEqual([false, 'undecided', 'runs', 8, 7]);
    expect(p.metricTally.undecided).toBe(1);
    expect(noiseText(m)).toMatch(
      /^noise of 8 runs of this series ±\d+(\.\d+)? % \(sd 4\.\d+ %, 7 df\); minimum effect ±3 % \(beyond the minimum effect, within the noise: too noisy to tell\)$/,
    );
    expect(formatDiff(diffRecords(a!, b!, { history }), { a: 'a', b: 'b' }, new Map())).toContain('1 too noisy to tell');
  });

  it('a move far beyond the noise of quiet runs is a change, and says how many runs measured it', () => {
    const history = withValues([54.0, 54.1, 53.9, 54.05, 53.95, 54.0]);
    const [a, b] = withValues([54, 50]).map((r, i) => doctored(r, `bbbbbbbbbbbbbb0${i}`, () => {}));
    const p = diffRecords(a!, b!, { history }).pairs[0]!;
    expect(p.changed).toBe(true);
    expect(p.history).toEqual({ runs: 6, groups: 1 });
    expect(p.metrics.map((m) => [m.name, m.verdict, m.noiseFrom])).toEqual([[series, 'changed', 'runs']]);
    expect(formatDiff(diffRecords(a!, b!, { history }), { a: 'a', b: 'b' }, new Map())).toContain(
      'noise: 6 other runs of this key (1 group by driver and kernel)',
    );
  });

  it('the compared runs never measure their own noise: two runs alone leave it unmeasured', () => {
    const [a, b] = withValues([54, 50]);
    const p = diffRecords(a!, b!, { history: [a!, b!], all: true }).pairs[0]!;
    expect(p.history.runs).toBe(0);
    expect(p.metrics.find((m) => m.flagged)!.noiseFrom).toBe('none');
  });

  it('runs of another kernel are a group of their own: a kernel update is not run-to-run noise', () => {
    const kernel = (r: BehaviourRecord, k: string) =>
      doctored(r, r.id.replace(/^0/, 'k'), (x) => void (x.sysinfo = { ...x.sysinfo, kernel: k }));
    const quiet = withValues([54.0, 54.1, 53.9, 54.05]).map((r) => kernel(r, 'k1'));
    const shifted = withValues([50.0, 50.1, 49.9, 50.05]).map((r) => kernel(r, 'k2'));
    const [a, b] = withValues([54, 50.5]).map((r, i) => doctored(r, `cccccccccccccc0${i}`, () => {}));
    const p = diffRecords(a!, b!, { history: [...quiet, ...shifted], all: true }).pairs[0]!;
    const m = p.metrics.find(
      (x) => x.name === series && x.attrs.size_bytes === pinned16.size_bytes && x.attrs.memory === 'pinned' && x.attrs.direction === 'h2d',
    )!;
    expect([m.measured.runs?.df, m.verdict]).toEqual([6, 'changed']);
    expect(p.history).toEqual({ runs: 8, groups: 2 });
  });

  it('without other runs, repetitions measure the noise within a run; a move within it is too noisy to tell', () => {
    const wide = (v: number) => Array.from({ length: 20 }, (_, i) => v * (0.85 + (0.3 * i) / 19));
    const [a, b] = withValues([54, 51], wide);
    const p = diffRecords(a!, b!, { all: true }).pairs[0]!;
    const m = p.metrics.find(
      (x) => x.name === series && x.attrs.size_bytes === pinned16.size_bytes && x.attrs.memory === 'pinned' && x.attrs.direction === 'h2d',
    )!;
    expect([m.noiseFrom, m.repeats, m.verdict]).toEqual(['repeats', { a: 20, b: 20 }, 'undecided']);
    const tight = (v: number) => Array.from({ length: 20 }, (_, i) => v * (0.999 + (0.002 * i) / 19));
    const [c, d] = withValues([54, 51], tight);
    expect(diffRecords(c!, d!).changed).toBe(true);
  });

  it('a cell during which another process used the GPU is not called the driver: said, not counted', () => {
    const b = doctored(runs[0]!, 'dddddddddddddd00', (x) => {
      metricOf(x, series, pinned1GiB).value! /= 2;
      x.shared = [{ probe: 'transfer-bandwidth', processes: 1, usedBytes: 2 * 1024 ** 3, pids: [4242] }];
    });
    const d = diffRecords(runs[0]!, b);
    expect(d.changed).toBe(false);
    expect(d.pairs[0]!.metricTally).toMatchObject({ flagged: 0, explained: 1 });
    const text = formatDiff(d, { a: 'a', b: 'b' }, new Map());
    expect(text).toContain('  b shared the GPU with 1 other process (pid 4242) during 1 cell (transfer-bandwidth)');
    const inferred = doctored(
      b,
      'dddddddddddddd02',
      (x) => void x.shared!.push({ probe: 'runtime-init', processes: 1, usedBytes: null, pids: [4242], inferred: true }),
    );
    expect(formatDiff(diffRecords(runs[0]!, inferred), { a: 'a', b: 'b' }, new Map())).toContain(
      'during 2 cells (transfer-bandwidth, runtime-init (inferred: it takes no look itself))',
    );
    expect(formatDiff(diffRecords(runs[0]!, runs[0]!), { a: 'a', b: 'a' }, new Map())).toContain('  a and b are the same run');
    expect(text).toContain("1 other process used the GPU during its cell: not called the driver's");
    // The same halving without the neighbour is a change.
    expect(
      diffRecords(
        runs[0]!,
        doctored(b, 'dddddddddddddd01', (x) => void delete x.shared),
      ).changed,
    ).toBe(true);
  });

  it('a pageable copy that slowed with its host control is the host: not counted', () => {
    const pageable = { direction: 'd2h', memory: 'pageable', size_bytes: 1024 ** 3 };
    const control = (r: BehaviourRecord, gbps: number) =>
      void r.metrics.push({ name: 'transfer-bandwidth.host_memcpy_gbps', value: gbps, unit: 'GB/s', attrs: { size_bytes: 1024 ** 3 } });
    const a = doctored(runs[0]!, 'eeeeeeeeeeeeee00', (x) => control(x, 20));
    const slowHost = doctored(runs[0]!, 'eeeeeeeeeeeeee01', (x) => {
      metricOf(x, series, pageable).value! /= 3;
      control(x, 8);
    });
    const p = diffRecords(a, slowHost, { all: true }).pairs[0]!;
    const m = p.metrics.find(
      (x) => x.name === series && x.attrs.memory === 'pageable' && x.attrs.direction === 'd2h' && x.attrs.size_bytes === 1024 ** 3,
    )!;
    expect([m.flagged, m.explained]).toEqual([
      false,
      { by: 'host', control: 'transfer-bandwidth.host_memcpy_gbps {size_bytes: 1073741824}', move: 0.6 },
    ]);
    // The host as fast as before: the driver's.
    const slowCopy = doctored(runs[0]!, 'eeeeeeeeeeeeee02', (x) => {
      metricOf(x, series, pageable).value! /= 3;
      control(x, 20);
    });
    expect(diffRecords(a, slowCopy).changed).toBe(true);
  });

  it('lists what differs around the driver, and expectation outcomes that changed', () => {
    const b = doctored(runs[0]!, 'ffffffffffffff00', (x) => {
      x.sysinfo = { ...x.sysinfo, kernel: '6.99.0-other' };
      x.verdicts = x.verdicts.map((v, i) => (i === 0 ? { ...v, status: 'failed' } : v));
    });
    const p = diffRecords(runs[0]!, b).pairs[0]!;
    expect(p.environment).toEqual([{ field: 'kernel', a: runs[0]!.sysinfo.kernel, b: '6.99.0-other' }]);
    expect(p.verdicts).toEqual([{ title: runs[0]!.verdicts[0]!.title, a: 'passed', b: 'failed' }]);
    const text = formatDiff(diffRecords(runs[0]!, b), { a: 'a', b: 'b' }, new Map());
    expect(text).toContain(`  around the driver, also different: kernel ${String(runs[0]!.sysinfo.kernel)} → 6.99.0-other`);
    expect(text).toContain('  expectations  1 outcome changed');
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
