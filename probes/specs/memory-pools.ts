/** The memory-pools probe's spec (cudaprobe run memory-pools) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { capabilityFact } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { capabilitySummary } from '../summary-lines.ts';

const attempt = 'an allocation from it filled by a kernel and copied back';
const handleTypes = 'CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES';
const exported = `${attempt}, and the pool exported as that handle (closed again)`;

export const memoryPools: ProbeSpec = {
  name: 'memory-pools',
  title: 'Which memory pools work, against what the attributes claim?',
  claims: ['C29'],
  description:
    "The stream-ordered allocator's pools tried one by one against the attribute that claims each: the default pool, a pool " +
    'created on the device, one per shareable handle type, a managed pool and a host pool; a pool works when an allocation ' +
    'from it takes a kernel fill and the bytes come back right. A handle type of the other platform is tried only where claimed.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    size_mib: z
      .number()
      .min(1)
      .max(1024)
      .default(16)
      .describe("Size of each pool allocation, MiB (the managed pool's is 2 MiB whatever this says)"),
  }),
  facts: [
    capabilityFact(
      'device_pool',
      `cuDeviceGetDefaultMemPool + cuMemAllocAsync (MEMORY_POOLS_SUPPORTED): ${attempt}, freed with cuMemFreeAsync`,
    ),
    capabilityFact('pool_create', `cuMemPoolCreate on the device, handle type NONE (MEMORY_POOLS_SUPPORTED): ${attempt}`),
    capabilityFact('pool_posix_fd', `A pool with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (bit 1 of ${handleTypes}): ${exported}`, [
      'linux',
    ]),
    capabilityFact('pool_win32', `A pool with CU_MEM_HANDLE_TYPE_WIN32 (bit 2 of ${handleTypes}): ${exported}`, ['windows']),
    capabilityFact('pool_win32_kmt', `A pool with CU_MEM_HANDLE_TYPE_WIN32_KMT (bit 4 of ${handleTypes}): ${exported}`, ['windows']),
    capabilityFact('pool_fabric', `A pool with CU_MEM_HANDLE_TYPE_FABRIC (bit 8 of ${handleTypes}; needs an IMEX channel): ${exported}`),
    capabilityFact(
      'host_pool',
      'cuMemPoolCreate with location HOST (CUDA 13, HOST_MEMORY_POOLS_SUPPORTED; an older driver does not know the attribute): ' +
        "a kernel's fill copied into it and read by the CPU, and a pattern the CPU wrote copied to the device and back",
    ),
    capabilityFact(
      'managed_pool',
      'cuMemPoolCreate with allocType MANAGED and no preferred location (CUDA 13; no attribute claims it): 2 MiB filled by a kernel, ' +
        'copied back and read by the CPU once the GPU is idle',
    ),
  ],
  metrics: [],
  quick: { size_mib: 4 },
  summary: capabilitySummary,
};
