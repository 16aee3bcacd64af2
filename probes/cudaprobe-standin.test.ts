/**
 * cudaprobe's GPU paths against a stand-in driver (test/fixtures/stub-libcuda.c, compiled here:
 * counted VRAM, events that always read 1 ms): what they measure means nothing, but the shape of
 * what they emit (issue 32's repeats, host control and neighbours) is the real code's. With
 * test/fixtures/stub-nvml.c beside it, NVML lists the compute processes a test asks for.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hasCommand, integrationAvailable, tempDir, testCacheDir } from '../test/helpers.ts';
import { nodeArch } from '../transports/local.ts';
import { buildProbe, type ProbeBinary } from './build.ts';
import { catalogue } from './catalogue.ts';
import { parseProbeOutput, type MetricRecord, type ProbeRecord } from './protocol.ts';

const repoRoot = path.join(import.meta.dirname, '..');
const ready = integrationAvailable('gcc, for cudaprobe against a stand-in driver', hasCommand('gcc'), 'apt-get install gcc');

let probe: ProbeBinary;
let stubDir: string;
let nvmlDir: string;
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
  nvmlDir = tempDir('cm-standin-nvml-');
  execFileSync('gcc', [
    '-shared',
    '-fPIC',
    '-O1',
    '-o',
    path.join(nvmlDir, 'libnvidia-ml.so.1'),
    path.join(repoRoot, 'test', 'fixtures', 'stub-nvml.c'),
  ]);
  probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
}, 600_000);

function runProbe(name: string, params: Record<string, string | number> = {}, env: NodeJS.ProcessEnv = {}) {
  const args = ['run', name, ...Object.entries(params).flatMap(([k, value]) => ['--param', `${k}=${value}`])];
  const result = spawnSync(probe.path, args, {
    encoding: 'utf8',
    env: { ...process.env, LD_LIBRARY_PATH: stubDir, ...env },
    timeout: 120_000,
  });
  const parsed = parseProbeOutput(result.stdout);
  expect(parsed.problems, result.stdout).toEqual([]);
  return { code: result.status, records: parsed.records, stderr: result.stderr };
}

/** The same, with the stand-in NVML listing `procs` (STUB_NVML_PROCS) on the loader path too. */
function runWithNvml(name: string, procs: string, params: Record<string, string | number> = {}) {
  return runProbe(name, params, { LD_LIBRARY_PATH: `${stubDir}:${nvmlDir}`, STUB_NVML_PROCS: procs });
}

function runBare(name: string, params: Record<string, string | number> = {}, env: NodeJS.ProcessEnv = {}) {
  const args = ['run', name, ...Object.entries(params).flatMap(([k, value]) => ['--param', `${k}=${value}`])];
  const result = spawnSync(probe.path, args, { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120_000 });
  const parsed = parseProbeOutput(result.stdout);
  expect(parsed.problems, result.stdout).toEqual([]);
  return { code: result.status, records: parsed.records, stderr: result.stderr };
}

const metrics = (records: ProbeRecord[], name: string) =>
  records.filter((record): record is MetricRecord => record.type === 'metric' && record.name === name);

describe.runIf(ready)('cudaprobe against a stand-in driver', () => {
  it('transfer-bandwidth: each bandwidth_gbps carries one repeat per timed copy, whose median is the value', () => {
    const result = runProbe('transfer-bandwidth', { sizes_mib: 1, fill_percent: 0, repetitions: 21 });
    expect(result.code, result.stderr).toBe(0);
    const bw = metrics(result.records, 'bandwidth_gbps');
    expect(bw).toHaveLength(4);
    for (const metric of bw) {
      expect(metric.repeats).toHaveLength(21);
      // The stand-in's events read 1 ms: 1 MiB per ms.
      const sorted = [...metric.repeats!].sort((left, right) => left - right);
      expect(sorted[10]).toBeCloseTo(metric.value!, 4);
    }
    expect(metrics(result.records, 'pageable_pinned_ratio').every((metric) => metric.repeats === undefined)).toBe(true);
  });

  it('transfer-bandwidth: a host memcpy control per size on the idle card only, declared in the catalogue', () => {
    const result = runProbe('transfer-bandwidth', { sizes_mib: '1,4', fill_percent: '0,10', fill_reserve_gib: 0 });
    expect(result.code, result.stderr).toBe(0);
    const host = metrics(result.records, 'host_memcpy_gbps');
    expect(host.map((metric) => metric.attrs)).toEqual([{ size_bytes: 1 * 1024 * 1024 }, { size_bytes: 4 * 1024 * 1024 }]);
    for (const metric of host) {
      expect(metric.unit).toBe('GB/s');
      expect(metric.value).toBeGreaterThan(0);
      expect(metric.repeats).toHaveLength(20);
    }
    // The filled round ran (its copies carry fill_percent) but has no control of its own.
    expect(metrics(result.records, 'bandwidth_gbps').some((metric) => metric.attrs?.fill_percent === 10)).toBe(true);
    const declared = catalogue
      .find((probeSpec) => probeSpec.name === 'transfer-bandwidth')!
      .metrics.find((metric) => metric.name === 'host_memcpy_gbps');
    expect(declared).toMatchObject({ unit: 'GB/s', tolerance: { relative: 0.45 } });
  });

  it('sync-latency: p50, p99 and mean of 10 batches as repeats; min has none', () => {
    const result = runProbe('sync-latency', { iterations: 1000 });
    expect(result.code, result.stderr).toBe(0);
    for (const name of ['p50_us', 'p99_us', 'mean_us']) expect(metrics(result.records, name)[0]!.repeats, name).toHaveLength(10);
    const mean = metrics(result.records, 'mean_us')[0]!;
    const batchMean = mean.repeats!.reduce((sum, repeat) => sum + repeat, 0) / 10;
    expect(Math.abs(batchMean - mean.value!) / mean.value!).toBeLessThan(1e-3);
    const p50 = metrics(result.records, 'p50_us')[0]!;
    expect(Math.min(...p50.repeats!)).toBeLessThanOrEqual(metrics(result.records, 'p99_us')[0]!.value!);
    expect(metrics(result.records, 'min_us')[0]!.repeats).toBeUndefined();
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
    expect(metrics(gap.records, 'host_gap_ms')[0]!.repeats!.every((repeat) => repeat >= 1)).toBe(true);
    expect(metrics(gap.records, 'elapsed_host_ratio')[0]!.repeats).toBeUndefined();
    const prio = runProbe('stream-priority', { repetitions: 3 });
    expect(prio.code, prio.stderr).toBe(0);
    for (const name of ['high_done_ms', 'long_done_ms', 'high_done_ratio']) {
      expect(metrics(prio.records, name).map((metric) => metric.repeats)).toEqual([
        [1, 1, 1],
        [1, 1, 1],
      ]);
    }
  });

  describe('neighbours on the GPU (issue 32)', () => {
    const NOT_AVAILABLE = 'NVML reports per-process memory as NOT_AVAILABLE (always so under WDDM, where Windows manages the memory)';
    const lines = (records: ProbeRecord[]) => records.filter((record) => record.type === 'neighbours');

    it('lists the other compute processes before the probe made its context and after its work, never itself', () => {
      const result = runWithNvml('sync-latency', '4242:1048576,self:2097152,4343:100', { iterations: 100 });
      expect(result.code, result.stderr).toBe(0);
      const others = { processes: 2, used_bytes: 1048676, pids: [4242, 4343] };
      expect(result.records[0]).toEqual({ schema: 'cudaprobe/1', type: 'neighbours', probe: 'sync-latency', phase: 'start', ...others });
      expect(result.records.at(-1)).toEqual({ schema: 'cudaprobe/1', type: 'neighbours', probe: 'sync-latency', phase: 'end', ...others });
      expect(lines(result.records)).toHaveLength(2);
      expect(result.records.filter((record) => record.type === 'metric')).toHaveLength(4);
    });

    it('says it cannot tell at the end when its own context was not listed (another PID namespace)', () => {
      const result = runWithNvml('sync-latency', '4242:na', { iterations: 100 });
      expect(lines(result.records)).toEqual([
        expect.objectContaining({ phase: 'start', processes: 1, used_bytes: null, pids: [4242], reason: NOT_AVAILABLE }),
        expect.objectContaining({
          phase: 'end',
          processes: null,
          used_bytes: null,
          pids: [],
          reason: "this process is not in NVML's list (another PID namespace): the end check cannot tell others from itself",
        }),
      ]);
    });

    it('counts every other process but names at most 16', () => {
      const procs = ['self:1', ...Array.from({ length: 20 }, (_, i) => `${5000 + i}:1`)].join(',');
      const [start] = lines(runWithNvml('event-host-gap', procs, { sleep_ms: 1, repetitions: 3 }).records);
      expect(start).toMatchObject({ processes: 20, used_bytes: 20 });
      expect((start as { pids: number[] }).pids).toEqual(Array.from({ length: 16 }, (_, i) => 5000 + i));
    });

    // A GPU host's loader finds its real NVML and driver: these two are for machines without.
    const gpuHost = hasCommand('nvidia-smi', ['-L']);

    it.skipIf(gpuHost)('is null with the reason where NVML cannot say: missing, or the query unsupported (WSL 2)', () => {
      const missing = runProbe('watchdog');
      expect(lines(missing.records).map((line) => line.type === 'neighbours' && [line.phase, line.processes, line.reason])).toEqual([
        ['start', null, expect.stringContaining('NVML library not found')],
        ['end', null, expect.stringContaining('NVML library not found')],
      ]);
      const unsupported = runWithNvml('watchdog', 'error');
      expect(
        lines(unsupported.records).map((line) => line.type === 'neighbours' && [line.processes, line.used_bytes, line.reason]),
      ).toEqual([
        [null, null, 'NVML: Not Supported (3)'],
        [null, null, 'NVML: Not Supported (3)'],
      ]);
    });

    it("a memory probe's start comes before its first subject and its end after the last, its subjects not counted", () => {
      const result = runWithNvml('pinned-vram', '4242:7', { sizes_gib: 0.01, apis: 'driver', register_size_gib: 0 });
      expect(result.code, result.stderr).toBe(0);
      expect(result.records[0]).toMatchObject({ type: 'neighbours', phase: 'start', processes: 1, used_bytes: 7, pids: [4242] });
      expect(result.records.findIndex((record) => record.type === 'sample')).toBe(1);
      expect(result.records.at(-1)).toMatchObject({ type: 'neighbours', phase: 'end', processes: 1, pids: [4242] });
    });

    it('ends with a neighbours line after a probe that failed once it had the device; none before it had it', () => {
      const failed = runWithNvml('transfer-bandwidth', '4242:1', { sizes_mib: 1500, fill_percent: 0 });
      expect(failed.code).toBe(2);
      expect(failed.records.map((record) => (record.type === 'neighbours' ? record.phase : record.type))).toEqual([
        'start',
        'error',
        'end',
      ]);
      const refused = runWithNvml('transfer-bandwidth', '4242:1', { repetitions: 5 });
      expect(refused.records.map((record) => record.type)).toEqual(['error']);
    });

    it.skipIf(gpuHost)('without a driver: the skip and no neighbours line, NVML or not', () => {
      for (const env of [{}, { LD_LIBRARY_PATH: nvmlDir, STUB_NVML_PROCS: '4242:1' }]) {
        const result = runBare('sync-latency', {}, env);
        expect(result.code).toBe(3);
        expect(result.records).toEqual([
          expect.objectContaining({ type: 'skip', reason: expect.stringContaining('no NVIDIA driver found') }),
        ]);
      }
    });
  });
});
