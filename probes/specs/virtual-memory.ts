/** The virtual-memory probe's spec (cudaprobe run virtual-memory) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { capabilityFact } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { capabilitySummary } from '../summary-lines.ts';

const mapped = 'cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess (read-write), filled by a kernel and copied back';
const exported = `${mapped}, and the allocation exported as that handle (closed again)`;

export const virtualMemory: ProbeSpec = {
  name: 'virtual-memory',
  title: 'Does virtual memory management work, against what the attributes claim?',
  claims: ['C30'],
  description:
    'The virtual memory management calls tried against the attributes that claim them: device memory mapped and filled by a ' +
    'kernel, a mapping grown in place by a reservation right after it, host memory read by the CPU, and the shareable handle ' +
    'types; the allocation granularity, and the largest address reservation granted, doubling from 1 GiB up to max_reserve_gib.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    size_mib: z.number().min(1).max(1024).default(16).describe('Size of each allocation, MiB, rounded up to the allocation granularity'),
    max_reserve_gib: z
      .number()
      .int()
      .min(1)
      .max(65536)
      .default(4096)
      .describe('Cap of the reservation ceiling, GiB: address space only, nothing is committed and each reservation is freed at once'),
  }),
  facts: [
    capabilityFact('vmm', `Device memory (VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED): ${mapped}; unmapped, released and freed`),
    capabilityFact(
      'vmm_grow',
      'A second reservation asked for right after the first (VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) and a second allocation mapped ' +
        'there: granted at that address, and one kernel fills both as one range',
    ),
    capabilityFact('vmm_posix_fd', `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED): ${exported}`, [
      'linux',
    ]),
    capabilityFact('vmm_win32', `CU_MEM_HANDLE_TYPE_WIN32 (HANDLE_TYPE_WIN32_HANDLE_SUPPORTED): ${exported}`, ['windows']),
    capabilityFact(
      'host_vmm',
      'Host memory, location HOST (CUDA 13, HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED): mapped, made accessible to the device and ' +
        'the CPU, filled by a kernel, copied back and read by the CPU',
    ),
  ],
  metrics: [
    {
      name: 'granularity_bytes',
      unit: 'bytes',
      description: 'cuMemGetAllocationGranularity of device memory (attrs.kind: minimum, recommended)',
      tolerance: { relative: 0 },
    },
    {
      name: 'reservation_ceiling_bytes',
      unit: 'bytes',
      description:
        'The largest cuMemAddressReserve granted, doubling from 1 GiB (attrs.bounded_by: cap, the max_reserve_gib parameter; ' +
        'refusal, the next size was refused)',
      tolerance: { relative: 0 },
    },
  ],
  quick: { size_mib: 4, max_reserve_gib: 64 },
  keyMetrics: [
    { metric: 'granularity_bytes', label: 'VMM granularity (minimum)', where: { kind: 'minimum' } },
    { metric: 'reservation_ceiling_bytes', label: 'largest address reservation' },
  ],
  summary: capabilitySummary,
};
