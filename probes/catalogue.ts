/**
 * The catalogue of probes and of the facts and metrics each one produces: names, units and
 * descriptions. The matrix is validated against it, and the reports use it to explain results.
 * Each probe's spec (and its console summary) is its own file in ./specs/; this is their list,
 * in the order they run, and the lookups. cudaprobe's probe list (cudaprobe/probe_table.inc) is
 * generated from it: `pnpm probe-table` (./write-probe-table.ts; a test fails until it is run).
 */
import type { FactSpec, KeyMetric, MetricSpec, ProbeSpec } from './spec-types.ts';
import type { Scalar } from './protocol.ts';
import { allocCeiling } from './specs/alloc-ceiling.ts';
import { cudaGraph } from './specs/cuda-graph.ts';
import { cudaLog } from './specs/cuda-log.ts';
import { eventHostGap } from './specs/event-host-gap.ts';
import { eventTiming } from './specs/event-timing.ts';
import { hostRegisterFlags } from './specs/host-register-flags.ts';
import { ipcHandles } from './specs/ipc-handles.ts';
import { managedMemory } from './specs/managed-memory.ts';
import { memoryPools } from './specs/memory-pools.ts';
import { multiProcessPinned } from './specs/multi-process-pinned.ts';
import { p2p } from './specs/p2p.ts';
import { pinnedCeiling } from './specs/pinned-ceiling.ts';
import { pinnedRelease } from './specs/pinned-release.ts';
import { pinnedVram } from './specs/pinned-vram.ts';
import { runtimeInit } from './specs/runtime-init.ts';
import { streamPriority } from './specs/stream-priority.ts';
import { syncLatency } from './specs/sync-latency.ts';
import { sysinfo } from './specs/sysinfo.ts';
import { sysmemFallback } from './specs/sysmem-fallback.ts';
import { transferBandwidth } from './specs/transfer-bandwidth.ts';
import { virtualMemory } from './specs/virtual-memory.ts';
import { watchdog } from './specs/watchdog.ts';
import { windowsRegistry } from './specs/windows-registry.ts';

export type { FactSpec, KeyMetric, MetricSpec, MetricTolerance, ProbeSpec } from './spec-types.ts';
export { hostVmMetrics, sampleReadings } from './spec-helpers.ts';

export const catalogue: readonly ProbeSpec[] = [
  sysinfo,
  pinnedVram,
  pinnedRelease,
  multiProcessPinned,
  pinnedCeiling,
  transferBandwidth,
  eventTiming,
  eventHostGap,
  syncLatency,
  streamPriority,
  cudaGraph,
  managedMemory,
  cudaLog,
  windowsRegistry,
  p2p,
  watchdog,
  runtimeInit,
  hostRegisterFlags,
  memoryPools,
  virtualMemory,
  ipcHandles,
  // Opt-in ones last: they run after everything else on a target.
  allocCeiling,
  sysmemFallback,
];

/** Whether a metric has the attributes a key metric asks for. */
export function matchesKeyMetric(attrs: Record<string, Scalar> | undefined, k: KeyMetric): boolean {
  return !k.where || Object.keys(k.where).every((attr) => attrs?.[attr] === k.where![attr]);
}

/** Whether a match replaces the one picked so far: only for largestSize, when its size is larger. */
export function replacesKeyMetric(
  metric: { attrs?: Record<string, Scalar> },
  best: { attrs?: Record<string, Scalar> },
  k: KeyMetric,
): boolean {
  return Boolean(k.largestSize) && Number(metric.attrs?.size_bytes ?? 0) > Number(best.attrs?.size_bytes ?? 0);
}

/** The metric a key metric picks from a cell's metrics (named without the probe), or undefined. */
export function pickKeyMetric<M extends { name: string; attrs?: Record<string, Scalar> }>(
  metrics: readonly M[],
  k: KeyMetric,
): M | undefined {
  let best: M | undefined;
  for (const metric of metrics) {
    if (metric.name !== k.metric || !matchesKeyMetric(metric.attrs, k)) continue;
    if (!best || replacesKeyMetric(metric, best, k)) best = metric;
  }
  return best;
}

/** The parameters a probe runs with: its defaults, then the --quick profile, then the matrix's. */
export function effectiveParams(probe: string, explicit: Record<string, unknown> = {}, quick = false): Record<string, unknown> {
  const spec = probeSpec(probe);
  if (!spec) throw new Error(`unknown probe ${probe}`);
  return spec.params.parse({ ...(quick ? spec.quick : {}), ...explicit }) as Record<string, unknown>;
}

export function probeSpec(name: string): ProbeSpec | undefined {
  return catalogue.find((probe) => probe.name === name);
}

export function probeNames(): string[] {
  return catalogue.map((probe) => probe.name);
}

/** What `probes: all` selects: every probe but the opt-in ones. */
export function defaultProbeNames(): string[] {
  return catalogue.filter((probe) => !probe.optIn).map((probe) => probe.name);
}

/** The spec of "probe.fact" / "probe.metric" names used by expectations. */
export function resolveResultName(
  qualified: string,
  kind: 'fact' | 'metric',
): { probe: ProbeSpec; fact?: FactSpec; metric?: MetricSpec } | undefined {
  const dot = qualified.indexOf('.');
  if (dot <= 0) return undefined;
  const probe = probeSpec(qualified.slice(0, dot));
  const name = qualified.slice(dot + 1);
  if (!probe) return undefined;
  if (kind === 'fact') {
    const fact = probe.facts.find((factSpec) => factSpec.name === name);
    return fact ? { probe, fact } : undefined;
  }
  const metric = probe.metrics.find((metricSpec) => metricSpec.name === name);
  return metric ? { probe, metric } : undefined;
}

/** Every "probe.name" of a kind, for "did you mean" suggestions. */
export function allResultNames(kind: 'fact' | 'metric'): string[] {
  return catalogue.flatMap((probe) => (kind === 'fact' ? probe.facts : probe.metrics).map((result) => `${probe.name}.${result.name}`));
}

/** Parameters as cudaprobe takes them: --param NAME=VALUE, lists joined by commas. */
export function paramArgs(params: Record<string, unknown>): string[] {
  const args: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(',') : String(value);
    args.push('--param', `${name}=${text}`);
  }
  return args;
}
