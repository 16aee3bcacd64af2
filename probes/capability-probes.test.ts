/**
 * The capability probes memory-pools and virtual-memory (issue 36, C29 and C30), built and run for
 * real. There is no GPU here: against the stand-in driver (test/fixtures/stub-libcuda.c, which
 * has none of the pool or virtual memory entry points) every attempt stops at the missing
 * symbol, as it would on a driver too old for them; and `cudaprobe judge` decides the facts from
 * logs written by hand in the shape of what the sources report (test/fixtures/capability/).
 * Their skip without a driver, Linux and Windows under Wine, is in ./cudaprobe.test.ts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hasCommand, integrationAvailable, repoRoot, tempDir, testCacheDir } from '../test/helpers.ts';
import { nodeArch } from '../transports/local.ts';
import { buildProbe, type ProbeBinary } from './build.ts';
import { catalogue } from './catalogue.ts';
import { parseProbeOutput, type FactRecord, type MetricRecord, type ProbeRecord, type SampleRecord } from './protocol.ts';

const fixtures = path.join(repoRoot, 'test', 'fixtures', 'capability');
const missing = 'missing in the driver library';

let probe: ProbeBinary;
beforeAll(async () => {
  probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
}, 600_000);

const factsOf = (records: ProbeRecord[]) =>
  Object.fromEntries(records.filter((record): record is FactRecord => record.type === 'fact').map((fact) => [fact.name, fact]));

/** `cudaprobe judge PROBE` on recorded lines: the facts it decides, by name. */
function judge(name: string, lines: string): Record<string, FactRecord> {
  const result = spawnSync(probe.path, ['judge', name], { input: lines, encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  const out = parseProbeOutput(result.stdout);
  expect(out.problems).toEqual([]);
  return factsOf(out.records);
}

const judgeFixture = (name: string, file: string) => judge(name, readFileSync(path.join(fixtures, file), 'utf8'));

describe('cudaprobe judge memory-pools: a TCC-shaped log (NVIDIA/cuda-python#206, cupy/cupy#6541: no stream-ordered allocator under TCC)', () => {
  // device_pool is the sources' case (MEMORY_POOLS_SUPPORTED 0, the pool call CUDA_ERROR_NOT_SUPPORTED);
  // pool_create, pool_posix_fd and host_pool are what the probe writes by its own rules on such a
  // driver: a POSIX fd not claimed on Windows, HOST_MEMORY_POOLS_SUPPORTED unknown before CUDA 13.
  it('decides device_pool unsupported, as the attribute says (agrees)', () => {
    const facts = judgeFixture('memory-pools', 'memory-pools-tcc.jsonl');
    expect(facts.device_pool).toMatchObject({
      value: 'unsupported',
      evidence: {
        claimed: false,
        attribute: 'CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED',
        attribute_value: 0,
        call: 'cuDeviceGetDefaultMemPool',
        result: 'CUDA_ERROR_NOT_SUPPORTED',
        agrees: true,
      },
    });
    expect(facts.pool_create).toMatchObject({ value: 'unsupported', evidence: { call: 'cuMemPoolCreate', agrees: true } });
  });

  it('leaves a handle type of the other platform null with the reason, and a fact no attribute speaks for without agreement', () => {
    const facts = judgeFixture('memory-pools', 'memory-pools-tcc.jsonl');
    expect(facts.pool_posix_fd).toMatchObject({
      value: null,
      reason: expect.stringContaining('POSIX file descriptor handle is for Linux'),
    });
    expect(facts.host_pool).toMatchObject({ value: 'unsupported', evidence: { claimed: null, attribute_value: null, agrees: null } });
  });
});

describe('cudaprobe judge memory-pools: a WSL 2 log, driver 581.15 (NVIDIA/cuda-python#1045: POSIX fd pools claimed, cuMemPoolCreate CUDA_ERROR_INVALID_VALUE)', () => {
  it('decides pool_posix_fd claimed-but-fails, naming the call, its error and the attribute value (agrees false)', () => {
    const facts = judgeFixture('memory-pools', 'memory-pools-wsl2-581.15.jsonl');
    expect(facts.pool_posix_fd).toMatchObject({
      value: 'claimed-but-fails',
      evidence: {
        claimed: true,
        attribute: 'CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES',
        attribute_value: 9,
        call: 'cuMemPoolCreate',
        result: 'CUDA_ERROR_INVALID_VALUE',
        agrees: false,
      },
    });
  });

  it('decides the pools without a handle type works (the source: handle type NONE succeeds), and Win32 pools null on Linux', () => {
    const facts = judgeFixture('memory-pools', 'memory-pools-wsl2-581.15.jsonl');
    expect(facts.device_pool).toMatchObject({ value: 'works', evidence: { claimed: true, agrees: true } });
    expect(facts.pool_create).toMatchObject({ value: 'works', evidence: { claimed: true, agrees: true } });
    for (const name of ['pool_win32', 'pool_win32_kmt'])
      expect(facts[name], name).toMatchObject({ value: null, reason: expect.stringContaining('Win32 handle is for Windows') });
  });
});

describe('cudaprobe judge virtual-memory: a WDDM log, driver 591.32 (NVIDIA/cuda-python#1241: VMM claimed, the mapping refused)', () => {
  // The source's shape; the error name in the fixture is the test's own choice.
  it('decides vmm claimed-but-fails at cuMemMap (agrees false), and a POSIX fd null on Windows', () => {
    const facts = judgeFixture('virtual-memory', 'virtual-memory-wddm-591.32.jsonl');
    expect(facts.vmm).toMatchObject({
      value: 'claimed-but-fails',
      evidence: {
        claimed: true,
        attribute: 'CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED',
        attribute_value: 1,
        call: 'cuMemMap',
        result: 'CUDA_ERROR_INVALID_VALUE',
        agrees: false,
      },
    });
    expect(facts.vmm_posix_fd).toMatchObject({ value: null, reason: expect.stringContaining('POSIX file descriptor handle is for Linux') });
  });

  it('decides works-unclaimed when the calls work against an attribute of 0 (agrees false)', () => {
    const line = readFileSync(path.join(fixtures, 'virtual-memory-wddm-591.32.jsonl'), 'utf8').split('\n')[0]!;
    const unclaimed = JSON.parse(line) as SampleRecord;
    Object.assign(unclaimed.attrs!, { claimed: false, call: 'cuMemAddressFree', result: 'CUDA_SUCCESS', works: true });
    unclaimed.readings.attribute_value = 0;
    expect(judge('virtual-memory', JSON.stringify(unclaimed)).vmm).toMatchObject({
      value: 'works-unclaimed',
      evidence: { claimed: false, attribute_value: 0, agrees: false },
    });
  });
});

const ready = integrationAvailable('gcc, for cudaprobe against a stand-in driver', hasCommand('gcc'), 'apt-get install gcc');

describe.runIf(ready)('memory-pools and virtual-memory against a stand-in driver without the pool and VMM entry points', () => {
  let stubDir: string;
  beforeAll(() => {
    stubDir = tempDir('cm-capability-standin-');
    execFileSync('gcc', [
      '-shared',
      '-fPIC',
      '-O1',
      '-o',
      path.join(stubDir, 'libcuda.so.1'),
      path.join(repoRoot, 'test', 'fixtures', 'stub-libcuda.c'),
    ]);
  });

  function runProbe(name: string) {
    const result = spawnSync(probe.path, ['run', name, '--param', 'size_mib=1'], {
      encoding: 'utf8',
      env: { ...process.env, LD_LIBRARY_PATH: stubDir },
      timeout: 120_000,
    });
    const parsed = parseProbeOutput(result.stdout);
    expect(parsed.problems, result.stdout).toEqual([]);
    expect(result.status, result.stderr).toBe(0);
    return parsed.records;
  }

  it.each(['memory-pools', 'virtual-memory'])(
    '%s: emits exactly its spec facts and metrics, and judge decides the same facts again',
    (name) => {
      const records = runProbe(name);
      const spec = catalogue.find((probeSpec) => probeSpec.name === name)!;
      const facts = factsOf(records);
      expect(Object.keys(facts).sort()).toEqual(spec.facts.map((fact) => fact.name).sort());
      const metricNames = new Set(records.filter((record) => record.type === 'metric').map((record) => (record as MetricRecord).name));
      for (const metric of metricNames) expect(spec.metrics.map((declared) => declared.name)).toContain(metric);
      const samples = records.filter((record) => record.type === 'sample');
      expect(samples).toHaveLength(spec.facts.length);
      expect(judge(name, samples.map((sample) => JSON.stringify(sample)).join('\n'))).toEqual(facts);
    },
  );

  it('memory-pools: the claimed default pool fails at the missing entry point; unclaimed pools are unsupported; Win32 pools null on Linux', () => {
    const facts = factsOf(runProbe('memory-pools'));
    // The stand-in answers MEMORY_POOLS_SUPPORTED with 1 and every other attribute with 0.
    expect(facts.device_pool).toMatchObject({
      value: 'claimed-but-fails',
      evidence: { claimed: true, attribute_value: 1, call: 'cuDeviceGetDefaultMemPool', result: missing, agrees: false },
    });
    expect(facts.pool_create).toMatchObject({ value: 'claimed-but-fails', evidence: { call: 'cuMemPoolCreate', result: missing } });
    for (const name of ['pool_posix_fd', 'pool_fabric', 'host_pool'])
      expect(facts[name], name).toMatchObject({ value: 'unsupported', evidence: { claimed: false, result: missing, agrees: true } });
    expect(facts.managed_pool).toMatchObject({ value: 'unsupported', evidence: { claimed: null, attribute: null, agrees: null } });
    expect(facts.pool_win32).toMatchObject({ value: null, reason: expect.stringContaining('Win32 handle is for Windows') });
  });

  it('virtual-memory: every attempt stops at the missing entry point, and the metrics are null with the reason', () => {
    const records = runProbe('virtual-memory');
    const facts = factsOf(records);
    for (const name of ['vmm', 'vmm_grow', 'vmm_posix_fd', 'host_vmm'])
      expect(facts[name], name).toMatchObject({
        value: 'unsupported',
        evidence: { claimed: false, call: 'cuMemGetAllocationGranularity', result: missing, agrees: true },
      });
    expect(facts.vmm_win32).toMatchObject({ value: null, reason: expect.stringContaining('Win32 handle is for Windows') });
    const metrics = records.filter((record): record is MetricRecord => record.type === 'metric');
    expect(metrics.map((metric) => [metric.name, metric.attrs])).toEqual([
      ['granularity_bytes', { kind: 'minimum' }],
      ['granularity_bytes', { kind: 'recommended' }],
      ['reservation_ceiling_bytes', { bounded_by: 'refusal' }],
    ]);
    for (const metric of metrics)
      expect(metric).toMatchObject({ value: null, reason: expect.stringContaining('missing in the driver library') });
  });
});
