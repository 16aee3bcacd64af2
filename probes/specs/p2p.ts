/** The p2p probe's spec (cudaprobe run p2p) and its console summary: see ../catalogue.ts. */
import { z } from 'zod';
import type { MetricRecord } from '../protocol.ts';
import { MiB, vramValues, count } from '../spec-helpers.ts';
import type { ProbeSpec } from '../spec-types.ts';
import { fmt, metricsOf, type SummaryLine } from '../summary-lines.ts';

const pairAttrs = 'attrs src and dst (CUDA device indices), peer (peer access enabled), size_bytes';
export const p2p: ProbeSpec = {
  name: 'p2p',
  title: 'Peer access between GPUs, and MIG slices',
  claims: ['C15', 'C16', 'C17', 'C18', 'C19', 'C34'],
  description:
    "Every pair of the GPUs outside MIG: cuDeviceCanAccessPeer, NVML's P2P status and link class (as nvidia-smi topo -m), " +
    "then copies both ways without and with peer access (bandwidth, and NVML's PCIe transmit rate during them), each " +
    'verified word by word, the host path beside them, the time of cuCtxEnablePeerAccess and of the first copy after it, and ' +
    'free VRAM on both devices before and after enabling and after a peer mapping. MIG slices: one process per MIG device ' +
    'UUID (MIG mode is read, never changed). Skipped, with its device facts, on a target with fewer than two GPUs.',
  platforms: ['linux', 'windows'],
  params: z.strictObject({
    size_mib: z.number().min(1).max(4096).default(256).describe('Size of each copy, MiB'),
    repetitions: count(10, 3, 'Timed copies of each direction and mode (medians are reported)'),
    map_mib: z.number().min(2).max(4096).default(256).describe('The allocation whose peer mapping is measured, MiB'),
    mig_pin_mib: z.number().min(1).default(256).describe("Pinned in each MIG slice's process, MiB"),
  }),
  facts: [
    { name: 'device_count', description: 'CUDA devices the driver reports (cuDeviceGetCount)' },
    {
      name: 'nvml_topology_available',
      description: 'NVML has the topology and P2P-status calls (nvmlDeviceGetTopologyCommonAncestor, nvmlDeviceGetP2PStatus)',
      values: [true, false],
    },
    {
      name: 'mig_mode',
      description: 'MIG mode of the devices: enabled on one, disabled on all, or unsupported (read, never changed)',
      values: ['enabled', 'disabled', 'unsupported'],
    },
    {
      name: 'iommu_mode',
      description:
        "The IOMMU's domain type for the GPUs (Linux sysfs iommu_group/type: identity is passthrough, DMA or DMA-FQ translate; off: no IOMMU; mixed) (C34)",
      platforms: ['linux'],
    },
    {
      name: 'acs_redirect',
      description:
        'A PCIe bridge above a GPU redirects peer requests or completions upstream (ACS Control P2P Request/Completion Redirect), so peer traffic passes the IOMMU (C34; null where the extended configuration space needs root)',
      values: [true, false],
      platforms: ['linux'],
    },
    {
      name: 'peer_override_variables',
      description:
        "The CUDA_ and NCCL_ environment variables naming P2P, PEER, IOMMU or ACS that were set (the override of the driver's peer-access gating among them), or none (C34)",
    },
    { name: 'pair_count', description: 'Pairs of GPUs outside MIG (each once)' },
    {
      name: 'link_class',
      description:
        'The link of every pair as nvidia-smi topo -m names it (NV# for # NVLinks, PIX, PXB, PHB, NODE, SYS, internal); "mixed" when pairs differ; evidence per pair',
    },
    { name: 'can_access_peer', description: 'cuDeviceCanAccessPeer says yes both ways, for every pair', values: [true, false] },
    {
      name: 'nvml_p2p_read',
      description:
        "NVML's P2P read status of every pair (OK, CHIPSET_NOT_SUPPORTED, GPU_NOT_SUPPORTED, IOH_TOPOLOGY_NOT_SUPPORTED, DISABLED_BY_REGKEY, NOT_SUPPORTED, UNKNOWN; mixed)",
    },
    {
      name: 'capability_agrees',
      description: 'cuDeviceCanAccessPeer and NVML (read and write OK) agree, for every pair',
      values: [true, false],
    },
    {
      name: 'copy_intact_without_peer',
      description: 'Copies without peer access delivered every word, both ways, every pair',
      values: [true, false],
    },
    {
      name: 'enable_ok',
      description: 'cuCtxEnablePeerAccess succeeded both ways on every pair that can access its peer',
      values: [true, false],
    },
    {
      name: 'copy_intact_with_peer',
      description: 'Copies with peer access delivered every word, both ways, every pair',
      values: [true, false],
    },
    {
      name: 'staged_through_host',
      description:
        'A copy without peer access went through host memory on some pair: no faster than the host path and clearly slower than with peer access (or no peer path at all)',
      values: [true, false],
    },
    {
      name: 'enable_uses_vram',
      description: 'Enabling peer access, or a peer mapping, lowered free VRAM by more than 2 MiB on some device',
      values: [true, false],
    },
    {
      name: 'mig_memory_matches_profile',
      description: "Each MIG slice's process sees its profile's memory (cuMemGetInfo total within 2 % of NVML's)",
      values: [true, false],
    },
    {
      name: 'mig_pinned_charged',
      description: "Pinned memory in a slice's process lowered the slice's free memory (the thresholds of pinned-vram)",
      values: vramValues,
    },
    {
      name: 'mig_peer_access',
      description: 'A process given two MIG slices enumerates both (peer access between slices possible)',
      values: [true, false],
    },
  ],
  metrics: [
    {
      name: 'bandwidth_gbps',
      unit: 'GB/s',
      description: `Device-to-device copy bandwidth, median (${pairAttrs})`,
      tolerance: { relative: 0.1 },
    },
    {
      name: 'host_path_gbps',
      unit: 'GB/s',
      description: 'The slower of pinned D2H from src and H2D to dst: what a copy through the host can reach',
      tolerance: { relative: 0.1 },
    },
    {
      name: 'pcie_tx_gbps',
      unit: 'GB/s',
      description: "NVML's PCIe transmit rate of src during the copies (attrs.peer): near zero when an NVLink copy bypasses PCIe",
      tolerance: { relative: 0.5, absolute: 1 },
    },
    {
      name: 'wrong_bytes',
      unit: 'bytes',
      description: 'Bytes of a verified copy that differ from what was sent (words compared; attrs.peer)',
      tolerance: { relative: 0 },
    },
    { name: 'enable_ms', unit: 'ms', description: "cuCtxEnablePeerAccess in src's context to dst's memory", tolerance: { relative: 0.7 } },
    { name: 'first_copy_ms', unit: 'ms', description: 'The first copy after enabling peer access', tolerance: { relative: 0.7 } },
    { name: 'steady_copy_ms', unit: 'ms', description: 'The copy after it', tolerance: { relative: 0.3 } },
    {
      name: 'free_bytes',
      unit: 'bytes',
      description: 'Free VRAM of a device (attrs.device, pair, stage: before-enable, after-enable, after-mapping)',
      tolerance: { relative: 0.01, absolute: 64 * MiB },
    },
    {
      name: 'enable_vram_cost_bytes',
      unit: 'bytes',
      description: 'Free VRAM lost on a device by enabling peer access',
      tolerance: { relative: 0.05, absolute: 4 * MiB },
    },
    {
      name: 'mapping_vram_cost_bytes',
      unit: 'bytes',
      description: 'Free VRAM lost on a device by a peer mapping of map_mib (the allocation itself not counted)',
      tolerance: { relative: 0.05, absolute: 4 * MiB },
    },
    {
      name: 'mig_profile_bytes',
      unit: 'bytes',
      description: "A MIG slice's memory as NVML reports it (attrs.uuid)",
      tolerance: { relative: 0 },
    },
    {
      name: 'mig_total_bytes',
      unit: 'bytes',
      description: "A MIG slice's memory as its process's cuMemGetInfo reports it",
      tolerance: { relative: 0 },
    },
    {
      name: 'mig_pinned_free_drop_bytes',
      unit: 'bytes',
      description: "The slice's free memory lost by pinning mig_pin_mib in its process",
      tolerance: { relative: 0.05, absolute: 4 * MiB },
    },
  ],
  quick: { size_mib: 64, repetitions: 5, map_mib: 64, mig_pin_mib: 64 },
  keyMetrics: [
    {
      metric: 'bandwidth_gbps',
      label: 'device-to-device bandwidth, peer access on (first pair, 0 to 1)',
      where: { src: 0, dst: 1, peer: true },
    },
    {
      metric: 'bandwidth_gbps',
      label: 'device-to-device bandwidth, peer access off (first pair, 0 to 1)',
      where: { src: 0, dst: 1, peer: false },
    },
    { metric: 'enable_ms', label: 'cuCtxEnablePeerAccess (0 to 1)', where: { src: 0, dst: 1 } },
  ],
  summary: (records) => {
    const lines: SummaryLine[] = [];
    const pairs = new Map<string, { on?: MetricRecord; off?: MetricRecord }>();
    for (const metric of metricsOf(records, 'bandwidth_gbps')) {
      const key = `${metric.attrs?.src} to ${metric.attrs?.dst}`;
      pairs.set(key, { ...pairs.get(key), [metric.attrs?.peer ? 'on' : 'off']: metric });
    }
    for (const [key, { on, off }] of pairs) lines.push([`copy ${key}`, `${fmt(on)} with peer access, ${fmt(off)} without`]);
    const enable = metricsOf(records, 'enable_ms');
    if (enable.length)
      lines.push([
        'enabling peer access',
        enable.map((metric) => `${fmt(metric)} (${metric.attrs?.src} to ${metric.attrs?.dst})`).join(', '),
      ]);
    return lines;
  },
};
