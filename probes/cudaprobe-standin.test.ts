/**
 * cudaprobe's GPU paths against a stand-in driver (test/fixtures/stub-libcuda.c, compiled here:
 * counted VRAM, events that always read 1 ms): what they measure means nothing, but the shape of
 * what they emit (issue 32's repeats and host control) is the real code's.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hasCommand, integrationAvailable, tempDir, testCacheDir } from '../test/helpers.ts';
import { nodeArch } from '../runners/local.ts';
import { buildProbe, type ProbeBinary } from './build.ts';
import { catalogue } from './catalogue.ts';
import { parseProbeOutput, type MetricRecord, type ProbeRecord } from './protocol.ts';

const repoRoot = path.join(import.meta.dirname, '..');
const ready = integrationAvailable('gcc, for cudaprobe against a stand-in driver', hasCommand('gcc'), 'apt-get install gcc');

let probe: ProbeBinary;
let stubDir: string;
beforeAll(async () => {
  if (!ready) return;
  stubDir = tempDir('cm-standin-');
  execFileSync('gcc', [
    '-shared',
    '-fPIC',
    '-O1',
    '-o',
    path.join(stubDir, 'libcuda.so.1'),
    path.join(repoRoot, 'test', 'fixtures', 'stub-libcuda.c'),
  ]);
  probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
}, 600_000);

function runProbe(name: string, params: Record<string, string | number> = {}, env: NodeJS.ProcessEnv = {}) {
  const args = ['run', name, ...Object.entries(params).flatMap(([k, v]) => ['--param', `${k}=${v}`])];
  const r = spawnSync(probe.path, args, { encoding: 'utf8', env: { ...process.env, LD_LIBRARY_PATH: stubDir, ...env }, timeout: 120_000 });
  const parsed = parseProbeOutput(r.stdout);
  expect(parsed.problems, r.stdout).toEqual([]);
  return { code: r.status, records: parsed.records, stderr: r.stderr };
}

const metrics = (records: ProbeRecord[], name: string) => records.filter((r): r is MetricRecord => r.type === 'metric' && r.name === name);

describe.runIf(ready)('cudaprobe against a stand-in driver', () => {
  it('transfer-bandwidth: each bandwidth_gbps carries one repeat per timed copy, whose median is the value', () => {
    const r = runProbe('transfer-bandwidth', { sizes_mib: 1, fill_percent: 0, repetitions: 21 });
    expect(r.code, r.stderr).toBe(0);
    const bw = metrics(r.records, 'bandwidth_gbps');
    expect(bw).toHaveLength(4);
    for (const m of bw) {
      expect(m.repeats).toHaveLength(21);
      // The stand-in's events read 1 ms: 1 MiB per ms.
      const sorted = [...m.repeats!].sort((a, b) => a - b);
      expect(sorted[10]).toBeCloseTo(m.value!, 4);
    }
    expect(metrics(r.records, 'pageable_pinned_ratio').every((m) => m.repeats === undefined)).toBe(true);
  });

  it('transfer-bandwidth: a host memcpy control per size on the idle card only, declared in the catalogue', () => {
    const r = runProbe('transfer-bandwidth', { sizes_mib: '1,4', fill_percent: '0,10', fill_reserve_gib: 0 });
    expect(r.code, r.stderr).toBe(0);
    const host = metrics(r.records, 'host_memcpy_gbps');
    expect(host.map((m) => m.attrs)).toEqual([{ size_bytes: 1 * 1024 * 1024 }, { size_bytes: 4 * 1024 * 1024 }]);
    for (const m of host) {
      expect(m.unit).toBe('GB/s');
      expect(m.value).toBeGreaterThan(0);
      expect(m.repeats).toHaveLength(20);
    }
    // The filled round ran (its copies carry fill_percent) but has no control of its own.
    expect(metrics(r.records, 'bandwidth_gbps').some((m) => m.attrs?.fill_percent === 10)).toBe(true);
    const declared = catalogue.find((p) => p.name === 'transfer-bandwidth')!.metrics.find((m) => m.name === 'host_memcpy_gbps');
    expect(declared).toMatchObject({ unit: 'GB/s', tolerance: { relative: 0.45 } });
  });

  it('sync-latency: p50, p99 and mean of 10 batches as repeats; min has none', () => {
    const r = runProbe('sync-latency', { iterations: 1000 });
    expect(r.code, r.stderr).toBe(0);
    for (const name of ['p50_us', 'p99_us', 'mean_us']) expect(metrics(r.records, name)[0]!.repeats, name).toHaveLength(10);
    const mean = metrics(r.records, 'mean_us')[0]!;
    const batchMean = mean.repeats!.reduce((a, b) => a + b, 0) / 10;
    expect(Math.abs(batchMean - mean.value!) / mean.value!).toBeLessThan(1e-3);
    const p50 = metrics(r.records, 'p50_us')[0]!;
    expect(Math.min(...p50.repeats!)).toBeLessThanOrEqual(metrics(r.records, 'p99_us')[0]!.value!);
    expect(metrics(r.records, 'min_us')[0]!.repeats).toBeUndefined();
  });

  it('event-timing: the samples as repeats, and past 200 the medians of 20 batches', () => {
    const few = runProbe('event-timing', { targets_us: 1, repetitions: 30 });
    expect(few.code, few.stderr).toBe(0);
    expect(metrics(few.records, 'elapsed_us')[0]!.repeats).toEqual(Array(30).fill(1000));
    expect(metrics(few.records, 'host_elapsed_us')[0]!.repeats).toHaveLength(30);
    const many = runProbe('event-timing', { targets_us: 1, repetitions: 250 });
    expect(metrics(many.records, 'elapsed_us')[0]!.repeats).toEqual(Array(20).fill(1000));
    expect(metrics(many.records, 'host_elapsed_us')[0]!.repeats).toHaveLength(20);
  });

  it('event-host-gap and stream-priority: their medians carry repeats, the ratios of medians none', () => {
    const gap = runProbe('event-host-gap', { sleep_ms: 1, repetitions: 4 });
    expect(gap.code, gap.stderr).toBe(0);
    expect(metrics(gap.records, 'elapsed_ms')[0]!.repeats).toEqual([1, 1, 1, 1]);
    expect(metrics(gap.records, 'host_gap_ms')[0]!.repeats!.every((v) => v >= 1)).toBe(true);
    expect(metrics(gap.records, 'elapsed_host_ratio')[0]!.repeats).toBeUndefined();
    const prio = runProbe('stream-priority', { repetitions: 3 });
    expect(prio.code, prio.stderr).toBe(0);
    for (const name of ['high_done_ms', 'long_done_ms', 'high_done_ratio']) {
      expect(metrics(prio.records, name).map((m) => m.repeats)).toEqual([
        [1, 1, 1],
        [1, 1, 1],
      ]);
    }
  });
});
