/** The windows-registry probe's spec (cudaprobe run windows-registry) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import type { MetricRecord } from '../protocol.ts';
import type { ProbeSpec } from '../spec-types.ts';

export const windowsRegistry: ProbeSpec = {
  name: 'windows-registry',
  title: 'GraphicsDrivers registry values',
  claims: ['C10'],
  description:
    'Reads HKLM\\SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers (EnableGpuMemoryCompression, HwSchMode, TdrDelay, TdrLevel). ' +
    'Read only; the Win+Ctrl+Shift+B hot-key is never sent (a driver reset can break live work). Skipped off Windows.',
  platforms: ['windows'],
  params: z.strictObject({}),
  facts: [
    { name: 'gpu_memory_compression_value_exists', description: 'The EnableGpuMemoryCompression value exists', values: [true, false] },
  ],
  metrics: ['EnableGpuMemoryCompression', 'HwSchMode', 'TdrDelay', 'TdrLevel'].map((valueName) => ({
    name: `registry_${valueName}`,
    unit: 'count' as const,
    description: `DWORD value ${valueName}`,
    tolerance: { relative: 0 },
  })),
  typicalMs: 10,
  summary: (records) => {
    const values = records.filter(
      (record): record is MetricRecord => record.type === 'metric' && record.name.startsWith('registry_') && record.value !== null,
    );
    return values.length
      ? [['GraphicsDrivers values', values.map((metric) => `${metric.name.slice('registry_'.length)} ${metric.value}`).join(', ')]]
      : [];
  },
};
