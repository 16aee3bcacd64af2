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
        const diff = diffRecords(runs[i]!, runs[j]!, { all: true });
        const flagged = diff.pairs.flatMap((pair) =>
          pair.metrics
            .filter((comparison) => comparison.flagged)
            .map(
              (comparison) =>
                `${comparison.name} ${JSON.stringify(comparison.attrs)} ${comparison.a} -> ${comparison.b}: ${noiseText(comparison)}`,
            ),
        );
        expect(flagged, `run ${i} against run ${j}`).toEqual([]);
        expect(diff.changed).toBe(false);
        expect(diff.pairs).toHaveLength(1);
        const firstPair = diff.pairs[0]!;
        expect([firstPair.factsCompared, firstPair.facts, firstPair.cellsCompared, firstPair.cells]).toEqual([20, [], 13, []]);
        // every metric series is compared (pinned-ceiling's runtime rounds repeat 5 of them)
        expect([firstPair.metricTally.compared, firstPair.metrics.length, firstPair.onlyA, firstPair.onlyB]).toEqual([
          166,
          166,
          { facts: [], metrics: [], cells: [] },
          { facts: [], metrics: [], cells: [] },
        ]);
      }
    }
  });

  it('a fact null on one side and decided on the other is newly (or no longer) decided, not a change; decided both ways differently is', () => {
    const undecided = doctored(runs[0]!, 'd0d0d0d0d0d0d0d0', (record) => void (record.facts['pinned-vram.counts_as_vram']!.value = null));
    const undecidedPair = diffRecords(undecided, runs[1]!).pairs[0]!;
    expect([undecidedPair.facts, undecidedPair.decided, undecidedPair.changed]).toEqual([
      [],
      [{ name: 'pinned-vram.counts_as_vram', a: null, b: false }],
      false,
    ]);
    expect(diffRecords(runs[1]!, undecided).pairs[0]!.decided).toEqual([{ name: 'pinned-vram.counts_as_vram', a: false, b: null }]);
    expect(formatDiff(diffRecords(runs[1]!, undecided), { a: 'a', b: 'b' }, new Map())).toContain(
      '    pinned-vram.counts_as_vram  false → null (no longer decided)\n',
    );
    const flipped = doctored(runs[0]!, 'e0e0e0e0e0e0e0e0', (record) => void (record.facts['pinned-vram.counts_as_vram']!.value = true));
    const flippedPair = diffRecords(flipped, runs[1]!).pairs[0]!;
    expect([flippedPair.facts, flippedPair.decided, flippedPair.changed]).toEqual([
      [{ name: 'pinned-vram.counts_as_vram', a: true, b: false }],
      [],
      true,
    ]);
  });

  it('they do differ: the noise is real (the H200 runs moved alloc times by 60 % and pageable copies by 38 %)', () => {
    const moves = (name: string, where: Record<string, unknown> = {}) =>
      Math.max(
        ...runs.flatMap((runA) =>
          runs.map((runB) => {
            const pair = diffRecords(runA, runB, { all: true }).pairs[0]!;
            return Math.max(
              0,
              ...pair.metrics
                .filter(
                  (comparison) => comparison.name === name && Object.entries(where).every(([k, wanted]) => comparison.attrs[k] === wanted),
                )
                .map((comparison) => comparison.move ?? 0),
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
    const fewer = (count: number) => doctored(runs[0]!, 'f0f0f0f0f0f0f0f0', (record) => void record.metrics.splice(0, count));
    expect(formatDiff(diffRecords(runs[0]!, fewer(1)), { a: 'a', b: 'b' }, new Map())).toContain(
      '  only in a (not compared): 1 metric series\n',
    );
    expect(formatDiff(diffRecords(runs[0]!, fewer(2)), { a: 'a', b: 'b' }, new Map())).toContain(
      '  only in a (not compared): 2 metric series\n',
    );
  });

  it('one fact changed and one pinned bandwidth halved: both flagged, and nothing else', () => {
    const copy = doctored(runs[0]!, 'd0c704edd0c704ed', (record) => {
      record.facts['pinned-release.released']!.value = 'on-exit';
      metricOf(record, 'transfer-bandwidth.bandwidth_gbps', pinned1GiB).value! /= 2;
    });
    const diff = diffRecords([runs[0]!], [copy]);
    expect(diff.changed).toBe(true);
    const pair = diff.pairs[0]!;
    expect(pair.facts).toEqual([{ name: 'pinned-release.released', a: 'on-free', b: 'on-exit' }]);
    expect(
      pair.metrics.map((comparison) => [
        comparison.name,
        comparison.attrs,
        comparison.move,
        comparison.noise,
        comparison.noiseFrom,
        comparison.flagged,
      ]),
    ).toEqual([['transfer-bandwidth.bandwidth_gbps', pinned1GiB, 0.5, 0.03, 'none', true]]);
    expect(noiseText(pair.metrics[0]!)).toBe(
      'noise not measured (fewer than 3 degrees of freedom of other runs of this key, and no repetitions); minimum effect ±3 %',
    );
    expect(pair.metricTally.flagged).toBe(1);
    const text = formatDiff(diff, { a: 'a', b: 'b' }, new Map());
    expect(text).toContain('    pinned-release.released  on-free → on-exit\n');
    expect(text).toContain(
      '    transfer-bandwidth.bandwidth_gbps {direction: h2d, memory: pinned, size_bytes: 1073741824}\n        55.4 GB/s → 27.7 GB/s: moved 50 % (×0.5), no change up to ±3 %: noise not measured (fewer than 3 degrees of freedom of other runs of this key, and no repetitions); minimum effect ±3 %\n',
    );
    expect(text).toMatch(/Behaviour changed \(1 pair of records compared\): 1 fact changed, 1 metric beyond noise\.\n$/);
    // against a run of another day too: the same two, not the other day's noise
    const other = diffRecords(runs[3]!, copy).pairs[0]!;
    expect([other.facts.map((fact) => fact.name), other.metrics.map((comparison) => comparison.name)]).toEqual([
      ['pinned-release.released'],
      ['transfer-bandwidth.bandwidth_gbps'],
    ]);
  });

  it('pinned bandwidth at 1 GiB is flagged at a 5 % drop; pageable at 1 GiB only beyond 45 %', () => {
    const scaled = (attrs: Record<string, unknown>, factor: number) =>
      doctored(
        runs[0]!,
        '5ca1ed005ca1ed00',
        (record) => void (metricOf(record, 'transfer-bandwidth.bandwidth_gbps', attrs).value! *= factor),
      );
    const pageable = { ...pinned1GiB, memory: 'pageable' };
    expect(diffRecords(runs[0]!, scaled(pinned1GiB, 0.95)).changed).toBe(true);
    expect(diffRecords(runs[0]!, scaled(pinned1GiB, 0.98)).changed).toBe(false);
    expect(diffRecords(runs[0]!, scaled(pageable, 0.6)).changed).toBe(false);
    expect(diffRecords(runs[0]!, scaled(pageable, 0.5)).changed).toBe(true);
  });

  it('a cell that passed and now fails is a change; a metric measured on one side only is flagged with why', () => {
    const copy = doctored(runs[0]!, 'ce11ce11ce11ce11', (record) => {
      record.cells.find((cell) => cell.probe === 'cuda-log')!.status = 'error';
      const metric = metricOf(record, 'sync-latency.p50_us', { iterations: 10000 });
      metric.value = null;
      metric.reason = 'timed out';
    });
    const pair = diffRecords(runs[0]!, copy).pairs[0]!;
    expect(pair.cells).toEqual([{ probe: 'cuda-log', a: 'passed', b: 'error' }]);
    expect(pair.metrics.map((comparison) => [comparison.name, comparison.flagged, comparison.problem])).toEqual([
      ['sync-latency.p50_us', true, 'measured on one side only: no value in b (timed out)'],
    ]);
  });

  it('a value near zero moves by a large fraction within its absolute noise; beyond it, it is flagged', () => {
    const attrs = { api: 'driver', kind: 'device', size_bytes: 4 * 1024 ** 3 };
    const grown = (bytes: number) =>
      doctored(runs[0]!, 'ab50107eab50107e', (record) => void (metricOf(record, 'pinned-vram.host_growth_bytes', attrs).value = bytes));
    expect(diffRecords(runs[0]!, grown(2 * 266240)).changed).toBe(false);
    const pair = diffRecords(runs[0]!, grown(100 * 1024 ** 2)).pairs[0]!;
    expect(pair.metrics.map((comparison) => [comparison.name, comparison.flagged, noiseText(comparison)])).toEqual([
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
      values.map((roundValues, i) =>
        doctored(runs[0]!, `5b7ead0${i}5b7ead0${i}`, (record) => {
          const list = record.metrics.filter(
            (metric) => metric.name === 'pinned-ceiling.chunk_alloc_ms' && metric.attrs?.variant === 'reset',
          );
          expect(list).toHaveLength(2);
          list.forEach((metric, j) => (metric.value = roundValues[j]!));
        }),
      );
    // Two rounds a record: the five runs' own repetitions are what measures this series' noise.
    const [spread, moved, within] = rounds([
      [100, 20],
      [400, 400],
      [250, 250],
    ]);
    const repeats = (recordA: BehaviourRecord, recordB: BehaviourRecord) => {
      const comparison = diffRecords(recordA, recordB, { all: true }).pairs[0]!.metrics.find(
        (metric) => metric.name === 'pinned-ceiling.chunk_alloc_ms' && metric.attrs.variant === attrs.variant,
      )!;
      return comparison;
    };
    // Two repetitions say nothing usable about noise (fewer than five): the minimum effect decides.
    const spreadVsMoved = repeats(spread!, moved!);
    expect([spreadVsMoved.a, spreadVsMoved.b, spreadVsMoved.repeats, spreadVsMoved.noiseFrom, spreadVsMoved.flagged]).toEqual([
      60,
      400,
      { a: 2, b: 2 },
      'none',
      true,
    ]);
    expect(relativeMove(60, 400)).toBeCloseTo(0.85);
    expect(repeats(spread!, within!).flagged).toBe(true);
  });
});

describe('noise measured from the runs of the key and from repetitions', () => {
  const series = 'transfer-bandwidth.bandwidth_gbps';
  const pinned16 = { direction: 'h2d', memory: 'pinned', size_bytes: 16 * 1024 ** 2 };
  /** Copies of one run whose pinned 16 MiB copy is `values[i]` GB/s (each a run of one driver and kernel). */
  const withValues = (values: number[], repeats?: (value: number) => number[]) =>
    values.map((value, i) =>
      doctored(runs[0]!, `00000000000000${String(i).padStart(2, '0')}`, (record) => {
        const metric = metricOf(record, series, pinned16);
        metric.value = value;
        if (repeats) metric.repeats = repeats(value);
        record.observed = { ...record.observed, date: `2026-12-0${1 + (i % 9)}T00:00:00.000Z`, runId: `run-${i}` };
      }),
    );

  it('a move beyond the catalogue tolerance but within the spread of the key other runs is too noisy to tell, not a change', () => {
    // Other runs spread over ±6 %: a 5 % move passes the 3 % minimum effect but not the noise.
    const history = withValues([50, 53, 56, 51, 55, 52, 54, 50.5]);
    const [recordA, recordB] = withValues([53, 50.4]).map((record, i) => doctored(record, `aaaaaaaaaaaaaa0${i}`, () => {}));
    const without = diffRecords(recordA!, recordB!).pairs[0]!;
    expect(without.changed).toBe(true); // the minimum effect alone (nothing measured) calls it a change
    const pair = diffRecords(recordA!, recordB!, { history, all: true }).pairs[0]!;
    const comparison = pair.metrics.find(
      (metric) =>
        metric.name === series &&
        metric.attrs.size_bytes === pinned16.size_bytes &&
        metric.attrs.direction === 'h2d' &&
        metric.attrs.memory === 'pinned',
    )!;
    expect([pair.changed, comparison.verdict, comparison.noiseFrom, comparison.measured.runs?.runs, comparison.measured.runs?.df]).toEqual([
      false,
      'undecided',
      'runs',
      8,
      7,
    ]);
    expect(pair.metricTally.undecided).toBe(1);
    expect(noiseText(comparison)).toMatch(
      /^noise of 8 runs of this series ±\d+(\.\d+)? % \(sd 4\.\d+ %, 7 df\); minimum effect ±3 % \(beyond the minimum effect, within the noise: too noisy to tell\)$/,
    );
    expect(formatDiff(diffRecords(recordA!, recordB!, { history }), { a: 'a', b: 'b' }, new Map())).toContain('1 too noisy to tell');
  });

  it('a move far beyond the noise of quiet runs is a change, and says how many runs measured it', () => {
    const history = withValues([54.0, 54.1, 53.9, 54.05, 53.95, 54.0]);
    const [recordA, recordB] = withValues([54, 50]).map((record, i) => doctored(record, `bbbbbbbbbbbbbb0${i}`, () => {}));
    const pair = diffRecords(recordA!, recordB!, { history }).pairs[0]!;
    expect(pair.changed).toBe(true);
    expect(pair.history).toEqual({ runs: 6, groups: 1 });
    expect(pair.metrics.map((comparison) => [comparison.name, comparison.verdict, comparison.noiseFrom])).toEqual([
      [series, 'changed', 'runs'],
    ]);
    expect(formatDiff(diffRecords(recordA!, recordB!, { history }), { a: 'a', b: 'b' }, new Map())).toContain(
      'noise: 6 other runs of this key (1 group by driver and kernel)',
    );
  });

  it('the compared runs never measure their own noise: two runs alone leave it unmeasured', () => {
    const [recordA, recordB] = withValues([54, 50]);
    const pair = diffRecords(recordA!, recordB!, { history: [recordA!, recordB!], all: true }).pairs[0]!;
    expect(pair.history.runs).toBe(0);
    expect(pair.metrics.find((comparison) => comparison.flagged)!.noiseFrom).toBe('none');
  });

  it('runs of another kernel are a group of their own: a kernel update is not run-to-run noise', () => {
    const kernel = (record: BehaviourRecord, k: string) =>
      doctored(record, record.id.replace(/^0/, 'k'), (copy) => void (copy.sysinfo = { ...copy.sysinfo, kernel: k }));
    const quiet = withValues([54.0, 54.1, 53.9, 54.05]).map((record) => kernel(record, 'k1'));
    const shifted = withValues([50.0, 50.1, 49.9, 50.05]).map((record) => kernel(record, 'k2'));
    const [recordA, recordB] = withValues([54, 50.5]).map((record, i) => doctored(record, `cccccccccccccc0${i}`, () => {}));
    const pair = diffRecords(recordA!, recordB!, { history: [...quiet, ...shifted], all: true }).pairs[0]!;
    const comparison = pair.metrics.find(
      (metric) =>
        metric.name === series &&
        metric.attrs.size_bytes === pinned16.size_bytes &&
        metric.attrs.memory === 'pinned' &&
        metric.attrs.direction === 'h2d',
    )!;
    expect([comparison.measured.runs?.df, comparison.verdict]).toEqual([6, 'changed']);
    expect(pair.history).toEqual({ runs: 8, groups: 2 });
  });

  it('without other runs, repetitions measure the noise within a run; a move within it is too noisy to tell', () => {
    const wide = (value: number) => Array.from({ length: 20 }, (_, i) => value * (0.85 + (0.3 * i) / 19));
    const [recordA, recordB] = withValues([54, 51], wide);
    const pair = diffRecords(recordA!, recordB!, { all: true }).pairs[0]!;
    const comparison = pair.metrics.find(
      (metric) =>
        metric.name === series &&
        metric.attrs.size_bytes === pinned16.size_bytes &&
        metric.attrs.memory === 'pinned' &&
        metric.attrs.direction === 'h2d',
    )!;
    expect([comparison.noiseFrom, comparison.repeats, comparison.verdict]).toEqual(['repeats', { a: 20, b: 20 }, 'undecided']);
    const tight = (value: number) => Array.from({ length: 20 }, (_, i) => value * (0.999 + (0.002 * i) / 19));
    const [tightA, tightB] = withValues([54, 51], tight);
    expect(diffRecords(tightA!, tightB!).changed).toBe(true);
  });

  it('a cell during which another process used the GPU is not called the driver: said, not counted', () => {
    const sharedRecord = doctored(runs[0]!, 'dddddddddddddd00', (record) => {
      metricOf(record, series, pinned1GiB).value! /= 2;
      record.shared = [{ probe: 'transfer-bandwidth', processes: 1, usedBytes: 2 * 1024 ** 3, pids: [4242] }];
    });
    const diff = diffRecords(runs[0]!, sharedRecord);
    expect(diff.changed).toBe(false);
    expect(diff.pairs[0]!.metricTally).toMatchObject({ flagged: 0, explained: 1 });
    const text = formatDiff(diff, { a: 'a', b: 'b' }, new Map());
    expect(text).toContain('  b shared the GPU with 1 other process (pid 4242) during 1 cell (transfer-bandwidth)');
    const inferred = doctored(
      sharedRecord,
      'dddddddddddddd02',
      (record) => void record.shared!.push({ probe: 'runtime-init', processes: 1, usedBytes: null, pids: [4242], inferred: true }),
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
        doctored(sharedRecord, 'dddddddddddddd01', (record) => void delete record.shared),
      ).changed,
    ).toBe(true);
  });

  it('a pageable copy that slowed with its host control is the host: not counted', () => {
    const pageable = { direction: 'd2h', memory: 'pageable', size_bytes: 1024 ** 3 };
    const control = (record: BehaviourRecord, gbps: number) =>
      void record.metrics.push({
        name: 'transfer-bandwidth.host_memcpy_gbps',
        value: gbps,
        unit: 'GB/s',
        attrs: { size_bytes: 1024 ** 3 },
      });
    const fastHost = doctored(runs[0]!, 'eeeeeeeeeeeeee00', (record) => control(record, 20));
    const slowHost = doctored(runs[0]!, 'eeeeeeeeeeeeee01', (record) => {
      metricOf(record, series, pageable).value! /= 3;
      control(record, 8);
    });
    const pair = diffRecords(fastHost, slowHost, { all: true }).pairs[0]!;
    const comparison = pair.metrics.find(
      (metric) =>
        metric.name === series &&
        metric.attrs.memory === 'pageable' &&
        metric.attrs.direction === 'd2h' &&
        metric.attrs.size_bytes === 1024 ** 3,
    )!;
    expect([comparison.flagged, comparison.explained]).toEqual([
      false,
      { by: 'host', control: 'transfer-bandwidth.host_memcpy_gbps {size_bytes: 1073741824}', move: 0.6 },
    ]);
    // The host as fast as before: the driver's.
    const slowCopy = doctored(runs[0]!, 'eeeeeeeeeeeeee02', (record) => {
      metricOf(record, series, pageable).value! /= 3;
      control(record, 20);
    });
    expect(diffRecords(fastHost, slowCopy).changed).toBe(true);
  });

  it('lists what differs around the driver, and expectation outcomes that changed', () => {
    const otherKernel = doctored(runs[0]!, 'ffffffffffffff00', (record) => {
      record.sysinfo = { ...record.sysinfo, kernel: '6.99.0-other' };
      record.verdicts = record.verdicts.map((verdict, i) => (i === 0 ? { ...verdict, status: 'failed' } : verdict));
    });
    const pair = diffRecords(runs[0]!, otherKernel).pairs[0]!;
    expect(pair.environment).toEqual([{ field: 'kernel', a: runs[0]!.sysinfo.kernel, b: '6.99.0-other' }]);
    expect(pair.verdicts).toEqual([{ title: runs[0]!.verdicts[0]!.title, a: 'passed', b: 'failed' }]);
    const text = formatDiff(diffRecords(runs[0]!, otherKernel), { a: 'a', b: 'b' }, new Map());
    expect(text).toContain(`  around the driver, also different: kernel ${String(runs[0]!.sysinfo.kernel)} → 6.99.0-other`);
    expect(text).toContain('  expectations  1 outcome changed');
  });
});

describe('pairing', () => {
  const at = (record: BehaviourRecord, id: string, driver: string, date: string, edit: (copy: BehaviourRecord) => void = () => {}) =>
    doctored(record, id, (copy) => {
      copy.key = { ...copy.key, driver };
      copy.observed = { ...copy.observed, date, runId: `run-${id}` };
      edit(copy);
    });

  it('folders of two driver versions pair by key without the driver; a key on one side only is listed, as are older observations', () => {
    const old575 = at(runs[0]!, 'a575000000000001', '575.57.08', '2026-06-01T00:00:00.000Z');
    const older575 = at(runs[1]!, 'a575000000000000', '575.57.08', '2026-05-01T00:00:00.000Z');
    const wsl575 = at(
      runs[0]!,
      'a575000000000002',
      '575.57.08',
      '2026-06-01T00:00:00.000Z',
      (record) => void (record.key = { ...record.key, environment: 'wsl2', os: 'Ubuntu 24.04.3 LTS' }),
    );
    const new580 = at(
      runs[2]!,
      'b580000000000001',
      '580.159.04',
      '2026-12-01T00:00:00.000Z',
      (record) => void (record.facts['cuda-graph.supported']!.value = false),
    );
    const wddm580 = at(
      runs[2]!,
      'b580000000000002',
      '580.159.04',
      '2026-12-01T00:00:00.000Z',
      (record) => void (record.key = { ...record.key, environment: 'wddm', os: 'Windows 11 Pro', osBuild: '26100', container: null }),
    );
    const diff = diffRecords([older575, wsl575, old575], [wddm580, new580]);
    expect(diff.pairs.map((pair) => [pair.key, pair.a.id, pair.b.id, pair.a.driver, pair.b.driver])).toEqual([
      ['linux · NVIDIA H200 · Ubuntu 24.04.3 LTS · in docker', old575.id, new580.id, '575.57.08', '580.159.04'],
    ]);
    expect(diff.pairs[0]!.facts).toEqual([{ name: 'cuda-graph.supported', a: true, b: false }]);
    expect(diff.changed).toBe(true);
    expect(diff.onlyA.map((unpaired) => [unpaired.record.id, unpaired.reason])).toEqual([
      [older575.id, 'an older observation of this key; the newest (a5750000, 2026-06-01) was compared'],
      [wsl575.id, 'no observation of this key on the other side'],
    ]);
    expect(diff.onlyB.map((unpaired) => [unpaired.key, unpaired.reason])).toEqual([
      ['wddm · NVIDIA H200 · Windows 11 Pro · 26100', 'no observation of this key on the other side'],
    ]);
  });

  it('a record listing its metrics in another order (or with attrs in another order) pairs them all the same', () => {
    const reordered = doctored(runs[1]!, 'ae0ade00ae0ade00', (record) => {
      record.metrics = [...record.metrics]
        .reverse()
        .map((metric) => (metric.attrs ? { ...metric, attrs: Object.fromEntries(Object.entries(metric.attrs).reverse()) } : metric));
    });
    const orderedPair = diffRecords(runs[0]!, runs[1]!, { all: true }).pairs[0]!;
    const reorderedPair = diffRecords(runs[0]!, reordered, { all: true }).pairs[0]!;
    expect(reorderedPair.metricTally.compared).toBe(166);
    expect(reorderedPair.metrics.map((comparison) => [comparison.name, comparison.a, comparison.b, comparison.move])).toEqual(
      orderedPair.metrics.map((comparison) => [comparison.name, comparison.a, comparison.b, comparison.move]),
    );
  });
});

describe('a folder of several records of one key', () => {
  it('is compared as its newest record with each probe from the newest that measured it: a newer run of a few probes hides no change', () => {
    const full = runs[0]!;
    // Newer, of the same key, with only pinned-ceiling measured (an opt-in run).
    const few = doctored(full, 'f0f0f0f0f0f0f0f0', (record) => {
      record.observed = { ...record.observed, date: '2099-01-01T00:00:00.000Z' };
      record.facts = Object.fromEntries(Object.entries(record.facts).filter(([factName]) => factName.startsWith('pinned-ceiling.')));
      record.metrics = record.metrics.filter((metric) => metric.name.startsWith('pinned-ceiling.'));
      record.cells = record.cells.filter((cell) => cell.probe === 'pinned-ceiling');
    });
    const changed = doctored(full, 'c0c0c0c0c0c0c0c0', (record) => {
      record.facts['pinned-vram.counts_as_vram'] = { value: !record.facts['pinned-vram.counts_as_vram']!.value };
    });
    const diff = diffRecords([full, few], [changed]);
    expect(diff.changed).toBe(true);
    expect(diff.pairs[0]!.facts.map((fact) => fact.name)).toEqual(['pinned-vram.counts_as_vram']);
    // Both records of side a were compared: neither is listed as left out.
    expect(diff.onlyA).toEqual([]);
    // Cells too (a new user saw "cells 3 compared", the others "only in b"), and the side says
    // which record its other probes came from.
    const pair = diff.pairs[0]!;
    expect(pair.cellsCompared).toBe(full.cells.length);
    expect(pair.onlyB.cells).toEqual([]);
    expect(pair.a.id).toBe(few.id);
    const taken = full.cells.map((cell) => cell.probe).filter((probe) => probe !== 'pinned-ceiling');
    expect(pair.a.takenFrom).toEqual([
      {
        id: full.id,
        probes: expect.arrayContaining(taken.filter((probe) => full.cells.find((cell) => cell.probe === probe)!.status === 'passed')),
      },
    ]);
    expect(pair.b.takenFrom).toBeUndefined();
    const text = formatDiff(
      diff,
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
    const without = catalogue.flatMap((probe) =>
      probe.metrics.filter((metric) => metric.tolerance === undefined).map((metric) => `${probe.name}.${metric.name}`),
    );
    expect(without).toEqual([]);
  });
});
