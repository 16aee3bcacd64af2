/** `cudamatrix record` refusing numbers that cannot be true (behaviour/plausibility.ts): the real CLI process. */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { doctored, H200_RUNS, h200Records, metricOf } from '../record-fixture.ts';
import { recordJson, type BehaviourRecord } from '../../behaviour/behaviour-record.ts';
import { redactRecord } from '../../behaviour/redact.ts';
import { runCli } from '../cli.ts';
import { tempDir } from '../helpers.ts';

let base: BehaviourRecord;
beforeAll(async () => {
  // The first H200 run (2026-11-29), as `record` writes it: PCIe gen5 x16, pinned copies about 55 GB/s.
  base = redactRecord((await h200Records())[0]!);
});

/** The H200 record with one value changed, as a record file in `dir`. */
function doctoredFile(dir: string, edit: (copy: BehaviourRecord) => void): string {
  const file = path.join(dir, 'doctored.json');
  writeFileSync(file, recordJson(doctored(base, base.id, edit)));
  return file;
}

const files = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { recursive: true }).map(String) : []);

describe('cudamatrix record: numbers that cannot be true', () => {
  it('900 GB/s pinned copies on PCIe gen5 x16: exit 2, RECORD_IMPLAUSIBLE naming the bound; nothing written, not the good run beside it', async () => {
    const dir = tempDir('cm-bounds-');
    const records = path.join(dir, 'records');
    const bad = doctoredFile(dir, (copy) => {
      metricOf(copy, 'transfer-bandwidth.bandwidth_gbps', { direction: 'd2h', memory: 'pinned', size_bytes: 1073741824 }).value = 900;
    });
    const result = await runCli(['record', '--records-dir', records, H200_RUNS[1]!, bad]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('error [RECORD_IMPLAUSIBLE]: 1 value that cannot be true; nothing was written:\n');
    expect(result.stderr).toContain(
      `  ${bad}, target local (linux · NVIDIA H200 · 580.159.04 · Ubuntu 24.04.3 LTS · in docker): transfer-bandwidth.bandwidth_gbps {direction: d2h, memory: pinned, size_bytes: 1073741824} = 900 GB/s, at most 69.3 GB/s: PCIe gen5 x16 (sysinfo pcie_gen_max, pcie_width_max): 32 GT/s × 16 lanes, 128b/130b, 63 GB/s a direction, + 10 %\n`,
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(files(records)).toEqual([]);
    // The good run alone is written.
    const good = await runCli(['record', '--records-dir', records, H200_RUNS[1]!]);
    expect(good.code, good.stderr).toBe(0);
    expect(files(records).filter((name) => name.endsWith('.json'))).toHaveLength(1);
  });

  it('--submit: no submission file either', async () => {
    const dir = tempDir('cm-bounds-');
    const out = path.join(dir, 'submission.md');
    const bad = doctoredFile(dir, (copy) => {
      metricOf(copy, 'transfer-bandwidth.bandwidth_gbps', { direction: 'h2d', memory: 'pinned', size_bytes: 1073741824 }).value = 900;
    });
    const result = await runCli(['record', '--submit', out, bad]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('error [RECORD_IMPLAUSIBLE]');
    expect(existsSync(out)).toBe(false);
  });

  it.each([
    [
      'device memory above the total',
      (copy: BehaviourRecord) => {
        copy.metrics.find((metric) => metric.name === 'pinned-ceiling.free_vram_bytes')!.value =
          2 * (copy.sysinfo.nvml_memory_total_bytes as number);
      },
      /pinned-ceiling\.free_vram_bytes \{[^}]+\} = 301509640192 bytes \(281 GiB\), at most 150754820096 bytes \(140 GiB\): the device's total memory \(sysinfo nvml_memory_total_bytes\)\n/,
    ],
    [
      'a zero timing resolution',
      (copy: BehaviourRecord) => {
        copy.metrics.find((metric) => metric.name === 'event-timing.resolution_us')!.value = 0;
      },
      /event-timing\.resolution_us = 0 us, above 0: a clock step is above zero\n/,
    ],
    [
      'a negative timing resolution',
      (copy: BehaviourRecord) => {
        copy.metrics.find((metric) => metric.name === 'event-timing.host_clock_resolution_us')!.value = -1;
      },
      /event-timing\.host_clock_resolution_us = -1 us, above 0: a clock step is above zero\n/,
    ],
  ])('%s: exit 2, named with its bound, nothing written', async (_what, edit, line) => {
    const dir = tempDir('cm-bounds-');
    const records = path.join(dir, 'records');
    const result = await runCli(['record', '--records-dir', records, doctoredFile(dir, edit)]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('error [RECORD_IMPLAUSIBLE]: 1 value that cannot be true; nothing was written:\n');
    expect(result.stderr).toMatch(line);
    expect(files(records)).toEqual([]);
  });
});
