/**
 * The memory facts' classification, tested on the readings of the real H200 run committed under
 * records/ (not invented), and on edge cases made from them: a source missing, noisy
 * readings, other platforms' shapes. The classification is cudaprobe's own code
 * (`cudaprobe judge PROBE` decides the facts again from recorded JSON lines).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type CellEndEvent } from '../events/events.ts';
import { repoRoot, testCacheDir } from '../test/helpers.ts';
import { nodeArch } from '../transports/local.ts';
import { buildProbe, type ProbeBinary } from './build.ts';
import { parseProbeOutput, type FactRecord, type ProbeRecord, type SampleRecord, type Scalar } from './protocol.ts';

const h200Log = path.join(repoRoot, 'records', 'driver-580.159.04', 'h200-linux', 'events.jsonl');
const cells = new Map(readEventLog(h200Log).flatMap((e) => (e.type === 'cell-end' ? [[e.probe, e as CellEndEvent]] : [])));
const GiB = 1024 ** 3;

let probe: ProbeBinary;
beforeAll(async () => {
  probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
});

/** The recorded lines of a probe (samples and metrics: what the judge reads). */
function recorded(name: string): ProbeRecord[] {
  return structuredClone(cells.get(name)!.records.filter((record) => record.type === 'sample' || record.type === 'metric'));
}

function judge(name: string, records: ProbeRecord[]): Record<string, FactRecord> {
  const result = spawnSync(probe.path, ['judge', name], {
    input: records.map((record) => JSON.stringify(record)).join('\n'),
    encoding: 'utf8',
  });
  expect(result.status).toBe(0);
  const out = parseProbeOutput(result.stdout);
  expect(out.problems).toEqual([]);
  return Object.fromEntries(out.records.filter((record): record is FactRecord => record.type === 'fact').map((fact) => [fact.name, fact]));
}

function recordedFacts(name: string): Record<string, unknown> {
  return Object.fromEntries(
    cells
      .get(name)!
      .records.filter((record): record is FactRecord => record.type === 'fact')
      .map((fact) => [fact.name, fact.value]),
  );
}

const samplesOf = (records: ProbeRecord[]) => records.filter((record): record is SampleRecord => record.type === 'sample');
const series = (records: ProbeRecord[], api: string, kind: string, size: number) =>
  samplesOf(records).filter(
    (sampleRecord) => sampleRecord.attrs?.api === api && sampleRecord.attrs?.kind === kind && sampleRecord.attrs?.size_bytes === size,
  );
const phase = (list: SampleRecord[], name: string) => list.find((sampleRecord) => sampleRecord.phase === name)!;

function drop(records: ProbeRecord[], key: string): ProbeRecord[] {
  for (const sampleRecord of samplesOf(records)) {
    sampleRecord.readings[key] = null;
    sampleRecord.reasons = { ...sampleRecord.reasons, [key]: 'dropped by the test' };
  }
  return records;
}

describe('classification on the committed H200 readings', () => {
  it.each(['pinned-vram', 'pinned-release', 'multi-process-pinned', 'pinned-ceiling'])(
    '%s: judging the recorded lines again gives the recorded facts',
    (name) => {
      // Facts added after the record was made (failure_poisons, issue 36) are judged too; the record's own must come out as recorded.
      const added = new Set(['failure_poisons']);
      const facts = Object.entries(judge(name, recorded(name))).filter(([k]) => !added.has(k));
      expect(Object.fromEntries(facts.map(([k, fact]) => [k, fact.value]))).toEqual(recordedFacts(name));
    },
  );

  it('pinned-vram decided on the per-process NVML source: +0 bytes for 4 GiB pinned, +4 GiB for the control', () => {
    const facts = judge('pinned-vram', recorded('pinned-vram'));
    expect(facts.counts_as_vram).toMatchObject({
      value: false,
      evidence: { source: 'nvml_process_used_bytes', nvml_process_used_bytes: 0, size_bytes: 4 * GiB },
    });
    expect(facts.control_counts_as_vram).toMatchObject({ value: true, evidence: { nvml_process_used_bytes: 4 * GiB } });
  });
});

describe('pinned-vram edge cases', () => {
  it('falls back to the device-wide NVML reading when the per-process one is missing', () => {
    const facts = judge('pinned-vram', drop(recorded('pinned-vram'), 'nvml_process_used_bytes'));
    expect(facts.counts_as_vram).toMatchObject({
      value: false,
      evidence: { source: 'nvml_device_used_bytes', nvml_device_used_bytes: 8 * 1024 ** 2 },
    });
    expect(facts.control_counts_as_vram!.value).toBe(true);
  });

  it('falls back to cuMemGetInfo when NVML is missing altogether', () => {
    const records = drop(drop(recorded('pinned-vram'), 'nvml_process_used_bytes'), 'nvml_device_used_bytes');
    expect(judge('pinned-vram', records).counts_as_vram).toMatchObject({ value: false, evidence: { source: 'subject_cu_used_bytes' } });
  });

  it('says it cannot decide when no device source can be read', () => {
    let records = recorded('pinned-vram');
    for (const k of ['nvml_process_used_bytes', 'nvml_device_used_bytes', 'subject_cu_used_bytes']) records = drop(records, k);
    const facts = judge('pinned-vram', records);
    expect(facts.counts_as_vram).toMatchObject({ value: null, reason: expect.stringContaining('no device-memory source could be read') });
  });

  it.each([
    [0.03, false],
    [0.2, 'partial'],
    [0.6, true],
  ])('noise: another process adding %d x N of device memory during the 4 GiB driver series reads as %j', (fraction, expected) => {
    const records = drop(recorded('pinned-vram'), 'nvml_process_used_bytes');
    const touched = phase(series(records, 'driver', 'pinned', 4 * GiB), 'after-touch');
    touched.readings.nvml_device_used_bytes = touched.readings.nvml_device_used_bytes! + fraction * 4 * GiB;
    expect(judge('pinned-vram', records).counts_as_vram!.value).toBe(expected);
  });

  it('uses the PDH per-process dedicated counter first, as on Windows, when it is there', () => {
    const records = recorded('pinned-vram');
    for (const sampleRecord of samplesOf(records)) sampleRecord.readings.pdh_process_dedicated_bytes = 100 * 1024 ** 2;
    phase(series(records, 'driver', 'pinned', 4 * GiB), 'after-touch').readings.pdh_process_dedicated_bytes = 100 * 1024 ** 2 + 4 * GiB;
    expect(judge('pinned-vram', records).counts_as_vram).toMatchObject({
      value: true,
      evidence: { source: 'pdh_process_dedicated_bytes' },
    });
  });

  it('reports the runtime fact as undecided when no runtime series was recorded (no CUDA runtime on the target)', () => {
    const records = recorded('pinned-vram').filter((record) => record.type !== 'sample' || record.attrs?.api !== 'runtime');
    expect(judge('pinned-vram', records).counts_as_vram_runtime).toMatchObject({
      value: null,
      reason: expect.stringContaining('no runtime pinned series completed'),
    });
  });
});

describe('pinned-release edge cases', () => {
  const driver = (records: ProbeRecord[]) => samplesOf(records).filter((sampleRecord) => sampleRecord.attrs?.api === 'driver');

  it("was charged to the subject's resident set on Linux, and seen back at the first reading after free", () => {
    const facts = judge('pinned-release', recorded('pinned-release'));
    expect(facts.released).toMatchObject({ value: 'on-free', evidence: { source: 'subject_rss_bytes' } });
  });

  it('reads on-exit when the memory stays until the subject exits (the WDDM shape)', () => {
    const records = recorded('pinned-release');
    const driverSamples = driver(records);
    const touched = phase(driverSamples, 'after-touch');
    for (const sampleRecord of driverSamples.filter((driverSample) => driverSample.phase.startsWith('after-free+'))) {
      sampleRecord.readings.subject_rss_bytes = touched.readings.subject_rss_bytes!;
      sampleRecord.readings.system_available_bytes = touched.readings.system_available_bytes!;
    }
    expect(judge('pinned-release', records).released!.value).toBe('on-exit');
  });

  it('reads never when it is still held after the subject exited', () => {
    const records = recorded('pinned-release');
    const driverSamples = driver(records);
    const touched = phase(driverSamples, 'after-touch');
    for (const sampleRecord of driverSamples.filter(
      (driverSample) => driverSample.phase !== 'baseline' && driverSample.phase !== 'after-touch',
    )) {
      if (sampleRecord.readings.subject_rss_bytes !== null) sampleRecord.readings.subject_rss_bytes = touched.readings.subject_rss_bytes!;
      sampleRecord.readings.system_available_bytes = touched.readings.system_available_bytes!;
    }
    expect(judge('pinned-release', records).released!.value).toBe('never');
  });

  it('cannot tell when no source grew by half the allocation', () => {
    const records = drop(drop(recorded('pinned-release'), 'subject_rss_bytes'), 'system_available_bytes');
    expect(judge('pinned-release', records).released).toMatchObject({ value: null, reason: expect.stringContaining('no source grew') });
  });
});

describe('multi-process-pinned and pinned-ceiling edge cases', () => {
  it.each([
    [2, 'sum-of-processes'],
    [1, 'partial'],
  ])('device growth of %d x N with two processes reads as %s', (times, expected) => {
    const records = recorded('multi-process-pinned');
    const all = samplesOf(records).find((sampleRecord) => sampleRecord.phase === 'after-all-pinned')!;
    all.readings.nvml_process_used_bytes = all.readings.nvml_process_used_bytes! + times * GiB;
    expect(judge('multi-process-pinned', records).vram_growth!.value).toBe(expected);
  });

  it('finds a real ceiling that tracks free VRAM once a pin fails before the cap', () => {
    const records = recorded('pinned-ceiling');
    const ceilings = records.filter(
      (record) => record.type === 'metric' && record.name === 'ceiling_bytes' && record.attrs?.api === 'driver',
    );
    for (const ceiling of ceilings) {
      if (ceiling.type !== 'metric') continue;
      ceiling.attrs!.stopped_by = 'allocation-failure';
      if (ceiling.attrs!.prefill_percent === 90) ceiling.value = 0.3 * GiB;
    }
    const facts = judge('pinned-ceiling', records);
    expect(facts.limited_by!.value).toBe('allocation-failure');
    expect(facts.tracks_free_vram!.value).toBe(true);
  });

  it('decides that the ceiling does not track free VRAM when a level pinned more than the VRAM left free (issue 20)', () => {
    // As the 16 GiB default would on the H200: every level at the cap, 16 GiB pinned with 13.9 GiB free at 90 %.
    const records = recorded('pinned-ceiling');
    for (const record of records) {
      if (record.type === 'metric' && record.name === 'ceiling_bytes' && record.attrs?.api === 'driver') {
        record.value = 16 * GiB;
        record.attrs.cap_bytes = 16 * GiB;
      }
    }
    const facts = judge('pinned-ceiling', records);
    expect(facts.limited_by!.value).toBe('safety-cap');
    expect(facts.tracks_free_vram).toMatchObject({
      value: false,
      evidence: { ceiling_bytes: 16 * GiB, free_vram_bytes: 14955970560, prefill_percent: 90 },
    });
    // Without the free-VRAM readings it cannot tell, and says the cap is what to raise.
    const blind = judge(
      'pinned-ceiling',
      records.filter((record) => !(record.type === 'metric' && record.name === 'free_vram_bytes')),
    );
    expect(blind.tracks_free_vram).toMatchObject({ value: null, reason: expect.stringContaining('raise max_gib/max_fraction') });
  });

  it('says whether a failed pin poisons the process: the smaller pin asked right after it (C33, the RTX 3090/5070 Ti reports)', () => {
    // The H200 never failed before its cap: nothing followed a failure, so nothing is decided.
    expect(judge('pinned-ceiling', recorded('pinned-ceiling')).failure_poisons).toMatchObject({
      value: null,
      reason: expect.stringContaining('no pin failed'),
    });
    // The reported shape: the ceiling is hit at 90 % pre-fill, and the next, smaller cudaMallocHost fails as well.
    const failedAt = (records: ProbeRecord[], afterFailure: Record<string, Scalar>) => {
      for (const record of records) {
        if (record.type !== 'metric' || record.name !== 'ceiling_bytes' || record.attrs?.prefill_percent !== 90) continue;
        Object.assign(record.attrs, { stopped_by: 'allocation-failure', failure: 'CUDA_ERROR_OUT_OF_MEMORY (2)', ...afterFailure });
      }
      return records;
    };
    const poisoned = failedAt(recorded('pinned-ceiling'), {
      after_failure_bytes: 16 * 1024 ** 2,
      after_failure_ok: false,
      after_failure_error: 'CUDA_ERROR_ALREADY_MAPPED (208)',
    });
    expect(judge('pinned-ceiling', poisoned).failure_poisons).toMatchObject({
      value: true,
      evidence: { api: 'driver', after_failure_error: 'CUDA_ERROR_ALREADY_MAPPED (208)', after_failure_bytes: 16 * 1024 ** 2 },
    });
    const recovered = failedAt(recorded('pinned-ceiling'), { after_failure_bytes: 16 * 1024 ** 2, after_failure_ok: true });
    expect(judge('pinned-ceiling', recovered).failure_poisons).toMatchObject({ value: false, evidence: { rounds_after_failure: 1 } });
  });

  it('says a cudaDeviceReset helps only beyond the noise (30 % faster, or a 5 % higher ceiling)', () => {
    const records = recorded('pinned-ceiling');
    for (const record of records) {
      if (record.type === 'metric' && record.name === 'chunk_alloc_ms' && record.attrs?.variant === 'reset') record.value = 40;
    }
    expect(judge('pinned-ceiling', records).reset_helps!.value).toBe(true);
  });
});

/**
 * Windows traces, made from the documented meaning of each source (no Windows GPU has run these
 * probes yet): \GPU Process Memory(pid_N_luid_L_phys_P)\Dedicated Usage is what process N has in
 * the dedicated (VRAM) segments of adapter L, \GPU Adapter Memory(luid_L_phys_P)\Dedicated Usage
 * the whole adapter's; NVML reports per-process memory as NOT_AVAILABLE under WDDM and answers
 * under TCC; cuMemGetInfo is device-wide; after the subject exits, every per-process reading is
 * gone and only the device- and system-wide ones remain (sampler.cpp).
 */
const MiB = 1024 ** 2;
const READINGS = [
  'dxgi_local_bytes',
  'dxgi_nonlocal_bytes',
  'nvml_device_used_bytes',
  'nvml_process_used_bytes',
  'pdh_adapter_dedicated_bytes',
  'pdh_adapter_shared_bytes',
  'pdh_process_dedicated_bytes',
  'pdh_process_shared_bytes',
  'subject_cu_used_bytes',
  'subject_private_bytes',
  'subject_rss_bytes',
  'system_available_bytes',
];
const PER_PROCESS = READINGS.filter((k) => k.startsWith('subject_') || k.startsWith('dxgi_') || k.includes('_process_'));
const WDDM_NO_NVML_PROCESS = 'NVML reports per-process memory as NOT_AVAILABLE (always so under WDDM, where Windows manages the memory)';

function sample(
  probe: string,
  phase: string,
  attrs: Record<string, unknown>,
  readings: Record<string, number | null>,
  reasons: Record<string, string> = {},
): SampleRecord {
  const allReadings: Record<string, number | null> = {};
  const why: Record<string, string> = {};
  for (const k of READINGS) {
    allReadings[k] = readings[k] ?? null;
    if (allReadings[k] === null)
      why[k] =
        reasons[k] ?? (phase.startsWith('after-exit') && PER_PROCESS.includes(k) ? 'the subject has exited' : 'not read in this trace');
  }
  return { schema: 'cudaprobe/1', probe, type: 'sample', phase, readings: allReadings, reasons: why, attrs } as SampleRecord;
}

/** The same readings with some bytes added to the named sources. */
const plus = (base: Record<string, number | null>, bytes: number, keys: string[]) =>
  Object.fromEntries(Object.entries(base).map(([k, value]) => [k, value !== null && keys.includes(k) ? value + bytes : value]));
const without = (base: Record<string, number | null>, keys: string[]) =>
  Object.fromEntries(Object.entries(base).filter(([k]) => !keys.includes(k)));

describe('pinned-release on WDDM traces (synthetic, from the documented counter semantics)', () => {
  const sizeBytes = GiB;
  const attrs = { api: 'driver', kind: 'pinned', size_bytes: sizeBytes };
  // The subject's context holds 300 MiB of VRAM; the desktop another 1.2 GiB of the adapter.
  const base = {
    pdh_process_dedicated_bytes: 300 * MiB,
    pdh_process_shared_bytes: 20 * MiB,
    pdh_adapter_dedicated_bytes: 1500 * MiB,
    pdh_adapter_shared_bytes: 200 * MiB,
    nvml_device_used_bytes: 1600 * MiB,
    subject_cu_used_bytes: 1600 * MiB,
    dxgi_local_bytes: 300 * MiB,
    dxgi_nonlocal_bytes: 20 * MiB,
    subject_rss_bytes: 100 * MiB,
    subject_private_bytes: 80 * MiB,
    system_available_bytes: 30 * GiB,
  };
  const vram = [
    'pdh_process_dedicated_bytes',
    'pdh_adapter_dedicated_bytes',
    'nvml_device_used_bytes',
    'subject_cu_used_bytes',
    'dxgi_local_bytes',
  ];
  const touched = plus(plus(base, sizeBytes, vram), sizeBytes, ['subject_rss_bytes', 'subject_private_bytes']);
  const deviceWide = ['pdh_adapter_dedicated_bytes', 'pdh_adapter_shared_bytes', 'nvml_device_used_bytes', 'system_available_bytes'];
  /** After exit: the device-wide readings only, `held` bytes still charged; the context's 300 MiB gone. */
  const exited = (held: number, drop: string[] = []) =>
    without(
      plus(
        plus(Object.fromEntries(deviceWide.map((k) => [k, base[k as keyof typeof base]])), -300 * MiB, [
          'pdh_adapter_dedicated_bytes',
          'nvml_device_used_bytes',
        ]),
        held,
        ['pdh_adapter_dedicated_bytes', 'nvml_device_used_bytes'],
      ),
      drop,
    );
  const trace = (afterFree: Record<string, number | null>[], afterExit: Record<string, number | null>): ProbeRecord[] => [
    sample('pinned-release', 'baseline', attrs, base, { nvml_process_used_bytes: WDDM_NO_NVML_PROCESS }),
    sample('pinned-release', 'after-touch', { ...attrs, allocated: true }, touched, { nvml_process_used_bytes: WDDM_NO_NVML_PROCESS }),
    ...afterFree.map((readings, i) =>
      sample('pinned-release', `after-free+${[0, 1, 5][i]}s`, { ...attrs, wait_s: [0, 1, 5][i] }, readings, {
        nvml_process_used_bytes: WDDM_NO_NVML_PROCESS,
      }),
    ),
    sample('pinned-release', 'after-exit', { ...attrs, settle_s: 0.4 }, afterExit),
  ];
  const held = plus(base, sizeBytes, vram);

  it('reads on-exit when VRAM stays charged after free and comes back when the subject exits, decided on the adapter-wide PDH counter', () => {
    const records = trace([held, held, held], exited(0));
    const facts = judge('pinned-release', records);
    expect(facts.released).toMatchObject({
      value: 'on-exit',
      evidence: {
        source: 'pdh_process_dedicated_bytes',
        after_exit_source: 'pdh_adapter_dedicated_bytes',
        retained_after_exit_bytes: -300 * MiB,
      },
    });
  });

  it('reads on-free when the counter falls back within the waits (after 1 s here)', () => {
    const facts = judge('pinned-release', trace([held, base, base], exited(0)));
    expect(facts.released).toMatchObject({ value: 'on-free', evidence: { source: 'pdh_process_dedicated_bytes' } });
  });

  it('reads never when the adapter still holds the allocation after the subject exited', () => {
    expect(judge('pinned-release', trace([held, held, held], exited(sizeBytes))).released!.value).toBe('never');
  });

  it("decides after exit on NVML's device-wide reading when the adapter counter is missing", () => {
    const facts = judge('pinned-release', trace([held, held, held], exited(0, ['pdh_adapter_dedicated_bytes'])));
    expect(facts.released).toMatchObject({ value: 'on-exit', evidence: { after_exit_source: 'nvml_device_used_bytes' } });
  });

  it('says it cannot tell, rather than never, when no device-wide source was read after exit', () => {
    const facts = judge('pinned-release', trace([held, held, held], exited(0, ['pdh_adapter_dedicated_bytes', 'nvml_device_used_bytes'])));
    expect(facts.released).toMatchObject({ value: null, reason: expect.stringContaining('no source read after the subject exited') });
  });

  it('keeps the Linux answer where the charge was host memory (RSS, then system memory after exit)', () => {
    const facts = judge('pinned-release', recorded('pinned-release'));
    expect(facts.released!.value).toBe('on-free');
    expect(facts.released!.evidence).not.toHaveProperty('after_exit_source');
  });
});

/** `cudaprobe selftest pdh-select PID LUID`: what the sampler makes of a counter's instance list. */
function pdhSelect(pid: number, luid: string, instances: [string, number][]): { value: number | null; value_reason?: string } {
  const result = spawnSync(probe.path, ['selftest', 'pdh-select', String(pid), luid], {
    input: instances.map(([instance, value]) => `${instance}\t${value}\n`).join(''),
    encoding: 'utf8',
  });
  expect(result.status, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as { value: number | null; value_reason?: string };
}

describe("the PDH instances of the CUDA device's adapter only (recorded instance lists)", () => {
  const NV = '0x00000000_0x0000D3E5';
  const IGPU = '0x00000000_0x0000C1A2';
  // An Optimus laptop: the subject (pid 4242) on the Intel iGPU and on the NVIDIA GPU (a linked
  // pair, phys_0 and phys_1), and other processes beside it.
  const optimus: [string, number][] = [
    [`pid_4242_luid_${IGPU}_phys_0`, 64 * MiB],
    [`pid_4242_luid_${NV}_phys_0`, 300 * MiB],
    [`pid_4242_luid_${NV}_phys_1`, 10 * MiB],
    [`pid_42_luid_${NV}_phys_0`, 900 * MiB],
    [`pid_424_luid_${NV}_phys_0`, 5 * MiB],
    [`pid_4242_luid_${NV}_phys_0_eng_0_engtype_3D`, 7],
  ];

  it.each([
    ['the subject on the NVIDIA adapter: its phys_0 and phys_1, not the iGPU, not pid 42 or 424', 4242, NV, optimus, 310 * MiB],
    ['the subject on the iGPU, when that is the device asked for', 4242, IGPU, optimus, 64 * MiB],
    [
      'the adapter instances (pid 0) of the NVIDIA adapter',
      0,
      NV,
      [
        [`luid_${NV}_phys_0`, 1500 * MiB],
        [`luid_${IGPU}_phys_0`, 128 * MiB],
      ] as [string, number][],
      1500 * MiB,
    ],
    [
      'a LUID with a HighPart',
      7,
      '0x00000001_0x0000D3E5',
      [
        [`pid_7_luid_0x00000001_0x0000D3E5_phys_0`, 5],
        [`pid_7_luid_${NV}_phys_0`, 9],
      ] as [string, number][],
      5,
    ],
  ])('sums %s', (_what, pid, luid, list, expected) => {
    expect(pdhSelect(pid, luid, list)).toEqual({ value: expected });
  });

  it.each([
    ['an empty list is unavailable, not 0', 4242, NV, [], 'the counter lists no instance at all (no WDDM GPU adapter is active)'],
    [
      "only another adapter's instances (a TCC GPU beside the display adapter)",
      4242,
      NV,
      [[`pid_4242_luid_${IGPU}_phys_0`, 0]],
      `the subject's instances are on other adapters (luid_${IGPU}), none on the CUDA device's luid_${NV}`,
    ],
    ['no instance of the subject', 99, NV, optimus, 'no instance for the subject (pid 99)'],
    ['a device without a LUID (TCC)', 4242, '-', optimus, 'no LUID given'],
    [
      'names of another shape',
      4242,
      NV,
      [
        ['pid_4242_luid_0xD3E5_phys_0', 1],
        ['_Total', 2],
        [`pid_4242x_luid_${NV}_phys_0`, 3],
      ],
      'no instance for the subject (pid 4242)',
    ],
  ] as [string, number, string, [string, number][], string][])('%s', (_what, pid, luid, list, reason) => {
    expect(pdhSelect(pid, luid, list)).toEqual({ value: null, value_reason: reason });
  });

  it('a TCC GPU beside a display adapter: NVML per-process decides, so pinned memory and the control read as they are', () => {
    const sizeBytes = GiB;
    // The subject's stray entry on the display adapter stays at 0 whatever it allocates on the GPU.
    const stray = (): [string, number][] => [[`pid_4242_luid_${IGPU}_phys_0`, 0]];
    const pdh = pdhSelect(4242, NV, stray());
    const records: ProbeRecord[] = [];
    for (const [kind, charged] of [
      ['pinned', 0],
      ['device', sizeBytes],
    ] as const) {
      const attrs = { api: 'driver', kind, size_bytes: sizeBytes };
      const base = {
        nvml_process_used_bytes: 500 * MiB,
        nvml_device_used_bytes: 600 * MiB,
        subject_cu_used_bytes: 600 * MiB,
        subject_rss_bytes: 100 * MiB,
        system_available_bytes: 60 * GiB,
        pdh_process_dedicated_bytes: pdh.value,
      };
      const reasons = { pdh_process_dedicated_bytes: pdh.value_reason ?? '' };
      records.push(sample('pinned-vram', 'baseline', attrs, base, reasons));
      records.push(
        sample(
          'pinned-vram',
          'after-touch',
          { ...attrs, allocated: true },
          plus(base, charged, ['nvml_process_used_bytes', 'nvml_device_used_bytes', 'subject_cu_used_bytes']),
          reasons,
        ),
      );
    }
    const facts = judge('pinned-vram', records);
    expect(facts.counts_as_vram).toMatchObject({ value: false, evidence: { source: 'nvml_process_used_bytes' } });
    expect(facts.control_counts_as_vram).toMatchObject({ value: true, evidence: { source: 'nvml_process_used_bytes' } });
    // What summing every adapter's entries gave before: PDH read 0 at every phase and decided.
    const summed = records.map((record) =>
      record.type === 'sample' ? { ...record, readings: { ...record.readings, pdh_process_dedicated_bytes: 0 } } : record,
    );
    expect(judge('pinned-vram', summed).control_counts_as_vram).toMatchObject({
      value: false,
      evidence: { source: 'pdh_process_dedicated_bytes' },
    });
  });
});
