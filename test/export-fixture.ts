/**
 * The fixture of `cudamatrix export`'s tests: a hand-written event log (test/fixtures/export/events.jsonl,
 * two targets: wsl-box on WSL 2 and driver 581.15, h200 on Linux) holding capability facts of probes
 * that are not in the catalogue yet (issue 36), and a catalogue of those probes' capability facts.
 */
import path from 'node:path';
import { catalogueCapabilities, type CapabilitySpec } from '../behaviour/export-capabilities.ts';
import { capabilityFact } from '../probes/spec-helpers.ts';

export const EXPORT_FIXTURE_LOG = path.resolve(import.meta.dirname, 'fixtures', 'export', 'events.jsonl');

/** The capability facts the fixture's probes would declare, and one fact that is no capability (not exported). */
export function fixtureCapabilities(): CapabilitySpec[] {
  return catalogueCapabilities([
    {
      name: 'memory-pools',
      facts: [
        capabilityFact('device_pool', "cuDeviceGetDefaultMemPool and cuMemAllocAsync: the device's default pool"),
        capabilityFact('pool_posix_fd', 'a pool exportable as a POSIX file descriptor'),
        capabilityFact('host_pool', 'a pool of host memory'),
        { name: 'pool_count', description: 'not a capability: how many pools were made' },
      ],
    },
    { name: 'virtual-memory', facts: [capabilityFact('vmm', 'cuMemCreate and cuMemMap')] },
    {
      name: 'ipc-handles',
      facts: [capabilityFact('posix_fd', 'POSIX file descriptor handles'), capabilityFact('win32', 'Win32 handles', ['windows'])],
    },
    { name: 'host-register-flags', facts: [capabilityFact('read_only', 'CU_MEMHOSTREGISTER_READ_ONLY')] },
  ]);
}

/** The skip reason the fixture gives wsl-box's memory-pools.pool_posix_fd (the brief's example). */
export const POOL_POSIX_FD_REASON =
  'memory-pools.pool_posix_fd: claimed-but-fails (cuMemPoolCreate → CUDA_ERROR_INVALID_VALUE) on driver 581.15, wsl2';
