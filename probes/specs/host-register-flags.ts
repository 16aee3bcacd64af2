/** The host-register-flags probe's spec (cudaprobe run host-register-flags) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { capabilityFact } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { capabilitySummary } from '../summary-lines.ts';

const attempt = 'registered on page-aligned malloc memory, copied to the device and back';

export const hostRegisterFlags: ProbeSpec = {
  name: 'host-register-flags',
  title: 'Which cuMemHostRegister flags work?',
  claims: ['C32'],
  description:
    'Each cuMemHostRegister flag (Default, Portable, Mapped, ReadOnly, IoMemory) tried on malloc memory against the attribute ' +
    'that claims it; it works when the GPU reads the bytes back (and, Mapped, writes them through the device pointer).',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    size_mib: z.number().min(1).max(1024).default(16).describe('Size of the malloc buffer registered with each flag, MiB'),
  }),
  facts: [
    capabilityFact('default', `Flags 0 (CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED): ${attempt}`),
    capabilityFact('portable', `CU_MEMHOSTREGISTER_PORTABLE, cudaHostRegisterPortable (HOST_REGISTER_SUPPORTED): ${attempt}`),
    capabilityFact(
      'mapped',
      `CU_MEMHOSTREGISTER_DEVICEMAP (CAN_MAP_HOST_MEMORY): ${attempt}, and a kernel writes it through the mapped pointer`,
    ),
    capabilityFact('read_only', `CU_MEMHOSTREGISTER_READ_ONLY (READ_ONLY_HOST_REGISTER_SUPPORTED): ${attempt}`),
    capabilityFact(
      'io_memory',
      `CU_MEMHOSTREGISTER_IOMEMORY, meant for I/O space: no attribute claims it for malloc memory (refused by design)`,
    ),
  ],
  metrics: [],
  quick: { size_mib: 4 },
  typicalMs: 300,
  summary: capabilitySummary,
};
