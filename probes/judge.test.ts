/**
 * The memory facts' classification, tested on the readings of the real H200 run committed under
 * results/records/ (not invented), and on edge cases made from them: a source missing, noisy
 * readings, other platforms' shapes. The classification is cudaprobe's own code
 * (`cudaprobe judge PROBE` decides the facts again from recorded JSON lines).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readEventLog, type CellEndEvent } from '../events/events.ts';
import { repoRoot, testCacheDir } from '../test/helpers.ts';
import { nodeArch } from '../runners/local.ts';
import { buildProbe, type ProbeBinary } from './build.ts';
import { parseProbeOutput, type FactRecord, type ProbeRecord, type SampleRecord } from './protocol.ts';

const record = path.join(repoRoot, 'results', 'records', 'driver-580.159.04', 'h200-linux', 'events.jsonl');
const cells = new Map(readEventLog(record).flatMap((e) => (e.type === 'cell-end' ? [[e.probe, e as CellEndEvent]] : [])));
const GiB = 1024 ** 3;

let probe: ProbeBinary;
beforeAll(async () => {
  probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
});

/** The recorded lines of a probe (samples and metrics: what the judge reads). */
function recorded(name: string): ProbeRecord[] {
  return structuredClone(cells.get(name)!.records.filter((r) => r.type === 'sample' || r.type === 'metric'));
}

function judge(name: string, records: ProbeRecord[]): Record<string, FactRecord> {
  const r = spawnSync(probe.path, ['judge', name], { input: records.map((x) => JSON.stringify(x)).join('\n'), encoding: 'utf8' });
  expect(r.status).toBe(0);
  const out = parseProbeOutput(r.stdout);
  expect(out.problems).toEqual([]);
  return Object.fromEntries(out.records.filter((x): x is FactRecord => x.type === 'fact').map((f) => [f.name, f]));
}

function recordedFacts(name: string): Record<string, unknown> {
  return Object.fromEntries(cells.get(name)!.records.filter((r): r is FactRecord => r.type === 'fact').map((f) => [f.name, f.value]));
}

const samplesOf = (records: ProbeRecord[]) => records.filter((r): r is SampleRecord => r.type === 'sample');
const series = (records: ProbeRecord[], api: string, kind: string, size: number) =>
  samplesOf(records).filter((s) => s.attrs?.api === api && s.attrs?.kind === kind && s.attrs?.size_bytes === size);
const phase = (list: SampleRecord[], name: string) => list.find((s) => s.phase === name)!;

function drop(records: ProbeRecord[], key: string): ProbeRecord[] {
  for (const s of samplesOf(records)) {
    s.readings[key] = null;
    s.reasons = { ...s.reasons, [key]: 'dropped by the test' };
  }
  return records;
}

describe('classification on the committed H200 readings', () => {
  it.each(['pinned-vram', 'pinned-release', 'multi-process-pinned', 'pinned-ceiling'])('%s: judging the recorded lines again gives the recorded facts', (name) => {
    const facts = judge(name, recorded(name));
    expect(Object.fromEntries(Object.entries(facts).map(([k, f]) => [k, f.value]))).toEqual(recordedFacts(name));
  });

  it('pinned-vram decided on the per-process NVML source: +0 bytes for 4 GiB pinned, +4 GiB for the control', () => {
    const f = judge('pinned-vram', recorded('pinned-vram'));
    expect(f.counts_as_vram).toMatchObject({ value: false, evidence: { source: 'nvml_process_used_bytes', nvml_process_used_bytes: 0, size_bytes: 4 * GiB } });
    expect(f.control_counts_as_vram).toMatchObject({ value: true, evidence: { nvml_process_used_bytes: 4 * GiB } });
  });
});

describe('pinned-vram edge cases', () => {
  it('falls back to the device-wide NVML reading when the per-process one is missing', () => {
    const f = judge('pinned-vram', drop(recorded('pinned-vram'), 'nvml_process_used_bytes'));
    expect(f.counts_as_vram).toMatchObject({ value: false, evidence: { source: 'nvml_device_used_bytes', nvml_device_used_bytes: 8 * 1024 ** 2 } });
    expect(f.control_counts_as_vram!.value).toBe(true);
  });

  it('falls back to cuMemGetInfo when NVML is missing altogether', () => {
    const records = drop(drop(recorded('pinned-vram'), 'nvml_process_used_bytes'), 'nvml_device_used_bytes');
    expect(judge('pinned-vram', records).counts_as_vram).toMatchObject({ value: false, evidence: { source: 'subject_cu_used_bytes' } });
  });

  it('says it cannot decide when no device source can be read', () => {
    let records = recorded('pinned-vram');
    for (const k of ['nvml_process_used_bytes', 'nvml_device_used_bytes', 'subject_cu_used_bytes']) records = drop(records, k);
    const f = judge('pinned-vram', records);
    expect(f.counts_as_vram).toMatchObject({ value: null, reason: expect.stringContaining('no device-memory source could be read') });
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
    for (const s of samplesOf(records)) s.readings.pdh_process_dedicated_bytes = 100 * 1024 ** 2;
    phase(series(records, 'driver', 'pinned', 4 * GiB), 'after-touch').readings.pdh_process_dedicated_bytes = 100 * 1024 ** 2 + 4 * GiB;
    expect(judge('pinned-vram', records).counts_as_vram).toMatchObject({ value: true, evidence: { source: 'pdh_process_dedicated_bytes' } });
  });

  it('reports the runtime fact as undecided when no runtime series was recorded (no CUDA runtime on the target)', () => {
    const records = recorded('pinned-vram').filter((r) => r.type !== 'sample' || r.attrs?.api !== 'runtime');
    expect(judge('pinned-vram', records).counts_as_vram_runtime).toMatchObject({ value: null, reason: expect.stringContaining('no runtime pinned series completed') });
  });
});

describe('pinned-release edge cases', () => {
  const driver = (records: ProbeRecord[]) => samplesOf(records).filter((s) => s.attrs?.api === 'driver');

  it('was charged to the subject\'s resident set on Linux, and seen back at the first reading after free', () => {
    const f = judge('pinned-release', recorded('pinned-release'));
    expect(f.released).toMatchObject({ value: 'on-free', evidence: { source: 'subject_rss_bytes' } });
  });

  it('reads on-exit when the memory stays until the subject exits (the WDDM shape)', () => {
    const records = recorded('pinned-release');
    const d = driver(records);
    const touched = phase(d, 'after-touch');
    for (const s of d.filter((x) => x.phase.startsWith('after-free+'))) {
      s.readings.subject_rss_bytes = touched.readings.subject_rss_bytes!;
      s.readings.system_available_bytes = touched.readings.system_available_bytes!;
    }
    expect(judge('pinned-release', records).released!.value).toBe('on-exit');
  });

  it('reads never when it is still held after the subject exited', () => {
    const records = recorded('pinned-release');
    const d = driver(records);
    const touched = phase(d, 'after-touch');
    for (const s of d.filter((x) => x.phase !== 'baseline' && x.phase !== 'after-touch')) {
      if (s.readings.subject_rss_bytes !== null) s.readings.subject_rss_bytes = touched.readings.subject_rss_bytes!;
      s.readings.system_available_bytes = touched.readings.system_available_bytes!;
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
    const all = samplesOf(records).find((s) => s.phase === 'after-all-pinned')!;
    all.readings.nvml_process_used_bytes = all.readings.nvml_process_used_bytes! + times * GiB;
    expect(judge('multi-process-pinned', records).vram_growth!.value).toBe(expected);
  });

  it('finds a real ceiling that tracks free VRAM once a pin fails before the cap', () => {
    const records = recorded('pinned-ceiling');
    const ceilings = records.filter((r) => r.type === 'metric' && r.name === 'ceiling_bytes' && r.attrs?.api === 'driver');
    for (const m of ceilings) {
      if (m.type !== 'metric') continue;
      m.attrs!.stopped_by = 'allocation-failure';
      if (m.attrs!.prefill_percent === 90) m.value = 0.3 * GiB;
    }
    const f = judge('pinned-ceiling', records);
    expect(f.limited_by!.value).toBe('allocation-failure');
    expect(f.tracks_free_vram!.value).toBe(true);
  });

  it('decides that the ceiling does not track free VRAM when a level pinned more than the VRAM left free (issue 20)', () => {
    // As the 16 GiB default would on the H200: every level at the cap, 16 GiB pinned with 13.9 GiB free at 90 %.
    const records = recorded('pinned-ceiling');
    for (const m of records) {
      if (m.type === 'metric' && m.name === 'ceiling_bytes' && m.attrs?.api === 'driver') {
        m.value = 16 * GiB;
        m.attrs.cap_bytes = 16 * GiB;
      }
    }
    const f = judge('pinned-ceiling', records);
    expect(f.limited_by!.value).toBe('safety-cap');
    expect(f.tracks_free_vram).toMatchObject({ value: false, evidence: { ceiling_bytes: 16 * GiB, free_vram_bytes: 14955970560, prefill_percent: 90 } });
    // Without the free-VRAM readings it cannot tell, and says the cap is what to raise.
    const blind = judge('pinned-ceiling', records.filter((r) => !(r.type === 'metric' && r.name === 'free_vram_bytes')));
    expect(blind.tracks_free_vram).toMatchObject({ value: null, reason: expect.stringContaining('raise max_gib/max_fraction') });
  });

  it('says a cudaDeviceReset helps only beyond the noise (30 % faster, or a 5 % higher ceiling)', () => {
    const records = recorded('pinned-ceiling');
    for (const m of records) {
      if (m.type === 'metric' && m.name === 'chunk_alloc_ms' && m.attrs?.variant === 'reset') m.value = 40;
    }
    expect(judge('pinned-ceiling', records).reset_helps!.value).toBe(true);
  });
});
