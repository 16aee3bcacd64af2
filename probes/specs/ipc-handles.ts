/** The ipc-handles probe's spec (cudaprobe run ipc-handles) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import { capabilityFact } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { capabilitySummary } from '../summary-lines.ts';

const shared = 'exported here, imported, mapped and read back by a second process (cudaprobe ipc-import)';

export const ipcHandles: ProbeSpec = {
  name: 'ipc-handles',
  title: 'Which IPC handle types share memory between processes?',
  claims: ['C31'],
  description:
    'Each way to share device memory with another process (cuMemCreate exported as a POSIX fd, a Win32 NT or KMT handle, a fabric ' +
    'handle; cuIpcGetMemHandle) tried against the attribute that claims it: it works when a second process imports it and reads ' +
    'back the pattern written here.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    size_mib: z.number().min(1).max(256).default(4).describe('Size of the allocation shared with each handle type, MiB'),
    timeout_s: z.number().min(1).max(300).default(30).describe('How long the importing process may take to answer, s'),
  }),
  facts: [
    capabilityFact(
      'posix_fd',
      `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED): the fd ${shared}, which inherits it`,
      ['linux'],
    ),
    capabilityFact('win32', `CU_MEM_HANDLE_TYPE_WIN32 (HANDLE_TYPE_WIN32_HANDLE_SUPPORTED): the NT handle duplicated into and ${shared}`, [
      'windows',
    ]),
    capabilityFact('win32_kmt', `CU_MEM_HANDLE_TYPE_WIN32_KMT (HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED): the KMT handle's value ${shared}`, [
      'windows',
    ]),
    capabilityFact(
      'fabric',
      `CU_MEM_HANDLE_TYPE_FABRIC (HANDLE_TYPE_FABRIC_SUPPORTED; needs IMEX channels): the 64-byte handle ${shared}`,
      ['linux'],
    ),
    capabilityFact(
      'legacy_ipc',
      `cuIpcGetMemHandle on cuMemAlloc memory, opened with cuIpcOpenMemHandle by a second process and read back; no attribute claims it`,
    ),
  ],
  metrics: [],
  quick: { size_mib: 2 },
  typicalMs: 2000,
  summary: capabilitySummary,
};
