import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CudamatrixError } from '../core/errors.ts';
import { doctored, H200_DIR, h200Records, metricOf } from '../test/record-fixture.ts';
import type { BehaviourRecord } from './behaviour-record.ts';
import { BOUNDS, implausibleValues, pcieRate, refuseImplausible } from './plausibility.ts';
import { checkRecord } from './validate-record.ts';

/** The committed H200 records (records/driver-580.159.04/*.json): real runs, pinned copies about 55 GB/s on PCIe gen5 x16. */
const committed = readdirSync(H200_DIR)
  .filter((name) => name.endsWith('.json'))
  .map((name) => ({ name, record: checkRecord(JSON.parse(readFileSync(path.join(H200_DIR, name), 'utf8')), name) }));

let base: BehaviourRecord;
beforeAll(async () => {
  base = (await h200Records())[0]!;
});

const pinnedH2d = { direction: 'h2d', memory: 'pinned', size_bytes: 268435456 };

describe('plausibility: the committed records', () => {
  it('every committed H200 record passes, and is checked: its link and device total are known, its copies near the bound', () => {
    expect(committed.length).toBeGreaterThanOrEqual(13);
    for (const { name, record } of committed) {
      expect(implausibleValues(record), name).toEqual([]);
      for (const bound of BOUNDS.slice(0, 2)) expect(bound.limit(record.sysinfo), name).not.toHaveProperty('none');
      const copies = record.metrics.filter((metric) => metric.name === 'transfer-bandwidth.bandwidth_gbps' && metric.value !== null);
      // (one record of 2026-12-02 ran other probes: no copies)
      if (copies.length) expect(Math.max(...copies.map((metric) => metric.value!)), name).toBeGreaterThan(0.8 * pcieRate(5, 16)!);
    }
  });

  it('the records made from the four H200 event logs pass too', async () => {
    for (const record of await h200Records()) expect(implausibleValues(record)).toEqual([]);
  });
});

describe('plausibility: what is refused', () => {
  it('900 GB/s pinned copies on PCIe gen5 x16: refused naming the metric, its value, the bound and where it came from', () => {
    const record = doctored(base, 'fast', (copy) => (metricOf(copy, 'transfer-bandwidth.bandwidth_gbps', pinnedH2d).value = 900));
    expect(implausibleValues(record)).toEqual([
      {
        what: 'transfer-bandwidth.bandwidth_gbps {direction: h2d, memory: pinned, size_bytes: 268435456}',
        value: '900 GB/s',
        bound: 'at most 69.3 GB/s',
        source: 'PCIe gen5 x16 (sysinfo pcie_gen_max, pcie_width_max): 32 GT/s × 16 lanes, 128b/130b, 63 GB/s a direction, + 10 %',
      },
    ]);
    // Within the margin: kept (a timer's error on the median copy).
    const near = doctored(base, 'near', (copy) => (metricOf(copy, 'transfer-bandwidth.bandwidth_gbps', pinnedH2d).value = 68));
    expect(implausibleValues(near)).toEqual([]);
  });

  it('a link that trained to gen4 x8 at most cannot carry the H200 gen5 x16 copies', () => {
    const record = doctored(base, 'gen4', (copy) => Object.assign(copy.sysinfo, { pcie_gen_max: 4, pcie_width_max: 8 }));
    const problems = implausibleValues(record);
    expect(problems.length).toBeGreaterThan(0);
    expect(new Set(problems.map((problem) => problem.bound))).toEqual(new Set(['at most 17.3 GB/s']));
  });

  it('the copies are not bounded where the link is unknown, or where the GPU may be on NVLink-C2C (an aarch64 host)', () => {
    const fast = (edit: (copy: BehaviourRecord) => void) =>
      doctored(base, 'unbounded', (copy) => {
        metricOf(copy, 'transfer-bandwidth.bandwidth_gbps', pinnedH2d).value = 400;
        edit(copy);
      });
    expect(implausibleValues(fast((copy) => Object.assign(copy.sysinfo, { pcie_gen_max: null, pcie_width_max: null })))).toEqual([]);
    expect(implausibleValues(fast((copy) => Object.assign(copy.sysinfo, { arch: 'aarch64', gpu_name: 'NVIDIA GH200 480GB' })))).toEqual([]);
    expect(implausibleValues(fast(() => {}))).toHaveLength(1);
  });

  it('device memory above the total (a metric, and a sample reading) names the sysinfo total it broke', () => {
    const total = base.sysinfo.nvml_memory_total_bytes as number;
    const record = doctored(base, 'big', (copy) => {
      copy.metrics.find((metric) => metric.name === 'pinned-ceiling.free_vram_bytes')!.value = total + 1;
      copy.samples.find((sample) => sample.readings.nvml_device_used_bytes !== null)!.readings.nvml_device_used_bytes = 2 * total;
    });
    const problems = implausibleValues(record);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatchObject({
      what: expect.stringMatching(/^pinned-ceiling\.free_vram_bytes \{/),
      value: `${total + 1} bytes (140 GiB)`,
      bound: `at most ${total} bytes (140 GiB)`,
      source: "the device's total memory (sysinfo nvml_memory_total_bytes)",
    });
    expect(problems[1]!.what).toMatch(/ nvml_device_used_bytes$/);
    // The total itself is possible (a card entirely in use).
    const full = doctored(
      base,
      'full',
      (copy) => (copy.metrics.find((metric) => metric.name === 'pinned-ceiling.free_vram_bytes')!.value = total),
    );
    expect(implausibleValues(full)).toEqual([]);
  });

  it.each([0, -0.5])('a timing resolution of %s us is refused: a clock step is above zero', (value) => {
    const record = doctored(
      base,
      'clock',
      (copy) => (copy.metrics.find((metric) => metric.name === 'event-timing.resolution_us')!.value = value),
    );
    expect(implausibleValues(record)).toEqual([
      { what: 'event-timing.resolution_us', value: `${value} us`, bound: 'above 0', source: 'a clock step is above zero' },
    ]);
  });

  it('more pinned than the host has, where the record has the host total; not bounded where it has none', () => {
    const pinnedMetrics = ['pinned-ceiling.ceiling_bytes', 'pinned-vram.host_growth_bytes', 'multi-process-pinned.system_growth_bytes'];
    const most = Math.max(...base.metrics.filter((metric) => pinnedMetrics.includes(metric.name)).map((metric) => metric.value ?? 0));
    expect(implausibleValues(base)).toEqual([]);
    expect(implausibleValues(doctored(base, 'host', (copy) => (copy.sysinfo.host_memory_total_bytes = most)))).toEqual([]);
    const problems = implausibleValues(doctored(base, 'host', (copy) => (copy.sysinfo.host_memory_total_bytes = most - 1)));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]).toMatchObject({
      value: `${most} bytes (${(most / 2 ** 30).toFixed(0)} GiB)`,
      bound: `at most ${most - 1} bytes (${(most / 2 ** 30).toFixed(0)} GiB)`,
    });
    expect(new Set(problems.map((problem) => problem.source))).toEqual(
      new Set(["the host's total memory (sysinfo host_memory_total_bytes)"]),
    );
  });

  it('refuseImplausible throws RECORD_IMPLAUSIBLE with one line per value, naming the record', () => {
    const record = doctored(base, 'fast', (copy) => (metricOf(copy, 'transfer-bandwidth.bandwidth_gbps', pinnedH2d).value = 900));
    expect(() => refuseImplausible([{ record: base, where: 'good' }])).not.toThrow();
    let error: unknown;
    try {
      refuseImplausible([
        { record: base, where: 'good' },
        { record, where: 'bad.json' },
      ]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CudamatrixError);
    expect((error as CudamatrixError).code).toBe('RECORD_IMPLAUSIBLE');
    expect((error as CudamatrixError).message).toMatch(
      /^1 value that cannot be true; nothing was written:\n {2}bad\.json \(linux · NVIDIA H200 · 580\.159\.04 · Ubuntu 24\.04\.3 LTS · in docker\): transfer-bandwidth\.bandwidth_gbps \{direction: h2d, memory: pinned, size_bytes: 268435456\} = 900 GB\/s, at most 69\.3 GB\/s: PCIe gen5 x16/,
    );
  });
});

describe('the PCIe rates', () => {
  it('per direction: gen1-2 with 8b/10b, gen3-5 with 128b/130b, gen6 FLIT; unknown generations give none', () => {
    expect(pcieRate(1, 1)).toBeCloseTo(0.25, 6);
    expect(pcieRate(2, 16)).toBeCloseTo(8, 6);
    expect(pcieRate(3, 16)).toBeCloseTo(15.754, 3);
    expect(pcieRate(4, 16)).toBeCloseTo(31.508, 3);
    // what cudaprobe's pcie_theoretical_gbps says of the H200's link
    expect(pcieRate(5, 16)).toBeCloseTo(metricOf(base, 'transfer-bandwidth.pcie_theoretical_gbps', { gen: 5, width: 16 }).value!, 6);
    expect(pcieRate(6, 16)).toBeCloseTo(121, 6);
    expect(pcieRate(7, 16)).toBeNull();
    expect(pcieRate(0, 16)).toBeNull();
  });
});
