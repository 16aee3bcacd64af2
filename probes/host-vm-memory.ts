/**
 * A WSL 2 VM's GPU memory as its Windows host sees it (docs/claims.md C27). While a probe declared
 * with `hostVmMemory` (probes/catalogue.ts) runs in a distribution whose session has a Windows
 * `vmHost`, `cudaprobe vm-memory` runs on that host and samples the PDH GPU Process Memory
 * counters (Shared and Dedicated Usage) of the VM process; the cell gets their baseline, peak and
 * growth as metrics (hostVmMetrics), each null with the reason where there is nothing to read.
 *
 * The sampler starts first and the probe only after its first sample (the baseline), or after
 * FIRST_SAMPLE_MS. It is stopped with the probe, by the host session's own stop (the tree ended;
 * on an SSH host taskkill), and bounded by --max-seconds in case nothing stops it: a Windows
 * command whose SSH connection drops keeps running (PowerShell/Win32-OpenSSH#1751). Its stdin is
 * no lifeline here: the local transport gives a command none, and the SSH one closes it at once.
 */
import type { Session, VmHost } from '../transports/transport.ts';
import { hostVmMetrics, probeSpec } from './catalogue.ts';
import { deployProbe, type BuildFor } from './deploy.ts';
import { parseProbeOutput, PROTOCOL, type MetricRecord, type SampleRecord } from './protocol.ts';
import type { ProbeRun } from './run-probe.ts';

/** How long the sampler may take to give its first sample (its start, a process list, one PDH read). */
const FIRST_SAMPLE_MS = 60_000;
const INTERVAL_MS = 250;
/** The sampler's bound past the probe's own timeout (and the first sample's wait). */
const BOUND_MARGIN_S = 60;
/** The bound when the probe has no timeout. */
const UNTIMED_BOUND_S = 3600;

const COUNTERS = { shared: 'vm_shared_bytes', dedicated: 'vm_dedicated_bytes' } as const;

export interface SampleOptions {
  /** The probe's timeout: the sampler's bound is past it. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * Per target (`vmHost`: its session's, undefined where it runs in no VM of a Windows machine):
 * deploys cudaprobe.exe to the Windows host once, when a declared probe first needs it.
 */
export class HostVmMemory {
  private deployed: Promise<string[]> | undefined;

  constructor(
    private readonly vmHost: VmHost | undefined,
    private readonly build: BuildFor,
  ) {}

  /** Runs the probe (`run`), sampled from the Windows host where declared; the host's metrics are added to its records. */
  async around(probe: string, run: () => Promise<ProbeRun>, options: SampleOptions): Promise<ProbeRun> {
    const vmHost = this.vmHost;
    if (!vmHost || !probeSpec(probe)?.hostVmMemory) return run();
    if ('unreachable' in vmHost) {
      const result = await run();
      return { ...result, records: [...result.records, ...nullMetrics(probe, vmHost.unreachable)] };
    }
    this.deployed ??= deployProbe(vmHost.session, this.build).then((deployed) => [deployed.remotePath]);
    const command = await this.deployed.catch((error: unknown) => error as Error);
    if (command instanceof Error) {
      const result = await run();
      const why = `cudaprobe.exe could not be put on the Windows host (${vmHost.session.description}): ${command.message}`;
      return { ...result, records: [...result.records, ...nullMetrics(probe, why)] };
    }
    const { result, metrics } = await sampleDuring(vmHost.session, command, probe, run, options);
    return { ...result, records: [...result.records, ...metrics] };
  }
}

/**
 * Runs `command vm-memory` on `host` (command: the deployed cudaprobe.exe, or one under Wine in
 * the tests) while `during` runs, and summarises its samples as `probe`'s metrics.
 */
export async function sampleDuring<T>(
  host: Session,
  command: string[],
  probe: string,
  during: () => Promise<T>,
  options: SampleOptions,
): Promise<{ result: T; metrics: MetricRecord[] }> {
  const boundS = Math.ceil((options.timeoutMs ? options.timeoutMs / 1000 : UNTIMED_BOUND_S) + FIRST_SAMPLE_MS / 1000 + BOUND_MARGIN_S);
  const stop = new AbortController();
  const stopSampler = (): void => stop.abort();
  options.signal?.addEventListener('abort', stopSampler, { once: true });
  let firstSample: () => void = () => undefined;
  const sampled = new Promise<void>((resolve) => (firstSample = resolve));
  const sampler = host
    .exec([...command, 'vm-memory', '--max-seconds', String(boundS), '--interval-ms', String(INTERVAL_MS)], {
      cwd: host.workDir,
      signal: stop.signal,
      timeoutMs: (boundS + BOUND_MARGIN_S) * 1000,
      onStdout: (text) => text.includes('\n') && firstSample(),
    })
    .catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
  let timer: NodeJS.Timeout | undefined;
  try {
    const first = await Promise.race([
      sampled.then(() => 'sampled' as const),
      sampler.then(() => 'ended' as const),
      new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), FIRST_SAMPLE_MS))),
    ]);
    clearTimeout(timer);
    const result = await during();
    stop.abort();
    const ended = await sampler;
    if (first === 'late')
      return {
        result,
        metrics: nullMetrics(
          probe,
          `cudaprobe vm-memory on ${host.description} gave no sample within ${FIRST_SAMPLE_MS / 1000} s: no baseline before the probe`,
        ),
      };
    return { result, metrics: summarise(probe, ended, host.description) };
  } finally {
    clearTimeout(timer);
    stop.abort();
    options.signal?.removeEventListener('abort', stopSampler);
    await sampler;
  }
}

type Ended = Awaited<ReturnType<Session['exec']>> | Error;

/** Baseline (the first sample), peak and growth of each counter, from the sampler's lines (`ended`: its exec). */
export function summarise(probe: string, ended: Ended, where: string): MetricRecord[] {
  if (ended instanceof Error) return nullMetrics(probe, `cudaprobe vm-memory on ${where} failed: ${ended.message}`);
  const samples = parseProbeOutput(ended.stdout).records.filter(
    (record): record is SampleRecord => record.type === 'sample' && record.probe === 'vm-memory',
  );
  if (!samples.length) {
    const said = ended.stderr.trim().split('\n').slice(-3).join(' | ');
    return nullMetrics(probe, `cudaprobe vm-memory on ${where} gave no sample (exit status ${ended.exitCode})${said ? `: ${said}` : ''}`);
  }
  const vmPids = samples[0]!.attrs?.vm_pids;
  return Object.entries(COUNTERS).flatMap(([counter, key]) => {
    const attrs = { counter, vm_pids: typeof vmPids === 'string' ? vmPids : '', samples: samples.length };
    const first = samples[0]!;
    const baseline = first.readings[key];
    if (baseline === null || baseline === undefined)
      return nullMetrics(probe, first.reasons?.[key] ?? `the sampler's first sample has no ${key}`, { counter });
    const values = samples.map((sample) => sample.readings[key]).filter((reading): reading is number => typeof reading === 'number');
    const peak = Math.max(...values);
    return [
      metric(probe, 'host_vm_baseline_bytes', baseline, attrs),
      metric(probe, 'host_vm_peak_bytes', peak, attrs),
      metric(probe, 'host_vm_growth_bytes', peak - baseline, attrs),
    ];
  });
}

function metric(probe: string, name: string, value: number | null, attrs: Record<string, string | number>, reason?: string): MetricRecord {
  return { schema: PROTOCOL, type: 'metric', probe, name, value, unit: 'bytes', attrs, ...(reason ? { reason } : {}) };
}

/** Every host metric null, with `reason` (for both counters unless one is named). */
function nullMetrics(probe: string, reason: string, only?: { counter: string }): MetricRecord[] {
  const counters = only ? [only.counter] : Object.keys(COUNTERS);
  return counters.flatMap((counter) => hostVmMetrics.map((hostMetric) => metric(probe, hostMetric.name, null, { counter }, reason)));
}
