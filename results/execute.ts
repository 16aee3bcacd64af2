/**
 * Runs a plan: reaches each target through its transport, deploys cudaprobe, runs sysinfo
 * (always first: it detects the environment) and then the planned probes one after another,
 * and writes every step to the event log as it happens. Targets run concurrently up to the
 * matrix's limit, but never two on the same host at once (their measurements would disturb
 * each other). Cancelling stops running probes and still writes results for what finished.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { CudamatrixError, describeError } from '../core/errors.ts';
import type { Target } from '../matrix/load.ts';
import { cellName, type Plan } from '../matrix/plan.ts';
import { buildOnce } from '../probes/build.ts';
import { effectiveParams } from '../probes/catalogue.ts';
import { deployProbe, type BuildFor, type DeployedProbe } from '../probes/deploy.ts';
import { runProbe, type ProbeRun } from '../probes/run-probe.ts';
import { connectChain, hostKeyOf } from '../runners/registry.ts';
import type { Session } from '../runners/transport.ts';
import { EVENTS_SCHEMA_VERSION, EventLog, type CellEndEvent, type RunEvent } from './events.ts';
import { Reporters, type Reporter } from './reporter.ts';
import { summarize, type RunSummary } from './verdicts.ts';
import { TOOL_VERSION } from './version.ts';

export interface ExecuteOptions {
  /** Where run folders go (results/runs). */
  runsDir: string;
  runId?: string;
  strict?: boolean;
  /** The --quick profile: small parameters for CI-sized runs. */
  quick?: boolean;
  /** Overrides the matrix's concurrency. */
  concurrency?: number;
  /** Unknown SSH hosts are accepted and recorded on first use (--accept-new). */
  acceptNewHostKeys?: boolean;
  signal?: AbortSignal;
  reporters?: Reporter[];
  build?: BuildFor;
  onProgress?: (message: string) => void;
}

export interface ExecuteResult {
  summary: RunSummary;
  runDir: string;
  eventsFile: string;
}

export function newRunId(now = new Date()): string {
  return `${now.toISOString().replace(/[:.]/g, '-')}-${randomBytes(3).toString('hex')}`;
}

export async function executePlan(plan: Plan, options: ExecuteOptions): Promise<ExecuteResult> {
  const runId = options.runId ?? newRunId();
  const runDir = path.join(options.runsDir, runId);
  mkdirSync(runDir, { recursive: true });
  const eventsFile = path.join(runDir, 'events.jsonl');
  const log = new EventLog(eventsFile);
  const reporters = new Reporters(options.reporters ?? []);
  const emit = (event: RunEvent): void => {
    log.write(event);
    reporters.event(event);
  };
  const started = Date.now();
  const strict = options.strict ?? false;
  const build = options.build ?? buildOnce({ onProgress: options.onProgress });
  emit({
    type: 'run-start',
    schemaVersion: EVENTS_SCHEMA_VERSION,
    tool: 'cudamatrix',
    version: TOOL_VERSION,
    runId,
    started: new Date(started).toISOString(),
    shard: plan.shard ?? null,
    matrix: { file: plan.matrix.file, description: plan.matrix.description, expectations: plan.matrix.expectations },
    cells: plan.cells.map((c) => c.name),
    options: { strict, quick: options.quick ?? false },
  });

  const cellsOf = (t: Target) => plan.cells.filter((c) => c.target === t.name).map((c) => c.probe);
  // At most hostConcurrency targets at once on one host (default 1: measurements on one host
  // would disturb each other); a slow host holds only its own slots.
  const hosts = new Map<string, Semaphore>();
  const context = { runId, emit, build, signal: options.signal, quick: options.quick ?? false, acceptNewHostKeys: options.acceptNewHostKeys, onProgress: options.onProgress };
  const runTarget = async (t: Target): Promise<void> => {
    const key = hostKeyOf(t.hops);
    let host = hosts.get(key);
    if (!host) hosts.set(key, (host = new Semaphore(plan.matrix.hostConcurrency)));
    await host.use(() => runOneTarget(t, cellsOf(t), context));
  };
  await poolOf(plan.targets, options.concurrency ?? plan.matrix.concurrency, runTarget);

  emit({ type: 'run-end', finished: new Date().toISOString(), durationMs: Date.now() - started, interrupted: Boolean(options.signal?.aborted) });
  log.close();
  const summary = summarize(log.events);
  await reporters.end(summary, { runDir, eventsFile, strict });
  return { summary, runDir, eventsFile };
}

interface TargetContext {
  runId: string;
  emit: (e: RunEvent) => void;
  build: BuildFor;
  signal?: AbortSignal;
  quick: boolean;
  acceptNewHostKeys?: boolean;
  onProgress?: (message: string) => void;
}

async function runOneTarget(t: Target, probes: string[], ctx: TargetContext): Promise<void> {
  const now = () => new Date().toISOString();
  const { emit, signal } = ctx;
  emit({ type: 'target-start', target: t.name, time: now(), environment: t.environment, transport: t.hops.map((h) => h.kind), probes, expect: t.expect });
  const failAll = (code: string, message: string, remaining: string[]): void => {
    emit({ type: 'target-error', target: t.name, time: now(), code, message });
    for (const probe of remaining) emit(blankCell(t, probe, { status: 'error', errorCode: code, reason: message }));
  };
  const cancelAll = (remaining: string[]): void => {
    for (const probe of remaining) emit(blankCell(t, probe, { status: 'cancelled', reason: 'the run was cancelled before this probe started' }));
  };
  if (signal?.aborted) return cancelAll(probes);

  let session: Session | undefined;
  try {
    let deployed: DeployedProbe;
    try {
      session = await connectChain(t.hops, {
        target: t.name,
        runId: ctx.runId,
        signal,
        acceptNewHostKeys: ctx.acceptNewHostKeys,
        binaryFor: ctx.build,
        onProgress: ctx.onProgress,
      });
      deployed = await deployProbe(session, ctx.build);
    } catch (error) {
      if (signal?.aborted) return cancelAll(probes);
      const code = error instanceof CudamatrixError ? error.code : 'TARGET_UNREACHABLE';
      return failAll(code, describeError(error), probes);
    }
    emit({
      type: 'target-ready',
      target: t.name,
      time: now(),
      session: session.description,
      platform: session.platform,
      arch: session.arch,
      probe: { hash: deployed.binary.hash, built: deployed.binary.built, uploaded: deployed.uploaded, path: deployed.remotePath },
    });

    const run = async (probe: string): Promise<CellEndEvent> => {
      const params = effectiveParams(probe, t.params[probe], ctx.quick);
      const result = await runProbe(session!, deployed, probe, { device: t.device, params, timeoutMs: t.timeoutMs, signal });
      return cellEvent(t, result, probes.includes(probe), params);
    };

    // A transport failure (the connection dropped) ends the target: its remaining cells are
    // errors with the reason. A probe is never re-run.
    const attempt = async (probe: string, remaining: string[]): Promise<CellEndEvent | undefined> => {
      try {
        return await run(probe);
      } catch (error) {
        const code = error instanceof CudamatrixError ? error.code : 'TRANSPORT_FAILED';
        failAll(code, describeError(error), remaining);
        return undefined;
      }
    };

    // sysinfo first, always: it says which environment the target really is.
    const sysinfo = await attempt('sysinfo', probes);
    if (!sysinfo) return;
    emit(sysinfo);
    const rest = probes.filter((p) => p !== 'sysinfo');
    const detected = sysinfo.records.find((r) => r.type === 'sysinfo' && r.name === 'environment')?.value as string | null | undefined;
    if (t.environment !== 'auto' && typeof detected === 'string' && detected !== t.environment) {
      return failAll(
        'ENVIRONMENT_MISMATCH',
        `target "${t.name}" is declared as ${t.environment}, but the probe detected ${detected}; correct "environment:" in the matrix (or use auto)`,
        rest,
      );
    }
    for (let i = 0; i < rest.length; i++) {
      if (signal?.aborted) return cancelAll(rest.slice(i));
      const cell = await attempt(rest[i]!, rest.slice(i));
      if (!cell) return;
      emit(cell);
    }
  } finally {
    if (session) await Promise.resolve(session[Symbol.asyncDispose]()).catch(() => undefined);
  }
}

function cellEvent(t: Target, run: ProbeRun, planned: boolean, params: Record<string, unknown>): CellEndEvent {
  const stderr = run.exec.stderr.trim();
  return {
    type: 'cell-end',
    cell: cellName(t.name, run.probe),
    target: t.name,
    probe: run.probe,
    planned,
    time: new Date().toISOString(),
    status: run.status,
    reason: run.reason,
    errorCode: run.errorCode,
    params,
    durationMs: Math.round(run.exec.durationMs),
    exitCode: run.exec.exitCode,
    signal: run.exec.signal,
    records: run.records,
    problems: run.problems,
    stderrTail: stderr.length > 2000 ? stderr.slice(-2000) : stderr,
  };
}

function blankCell(t: Target, probe: string, outcome: Pick<CellEndEvent, 'status' | 'reason'> & { errorCode?: string }): CellEndEvent {
  return {
    type: 'cell-end',
    cell: cellName(t.name, probe),
    target: t.name,
    probe,
    planned: true,
    time: new Date().toISOString(),
    durationMs: 0,
    exitCode: null,
    signal: null,
    records: [],
    problems: [],
    stderrTail: '',
    ...outcome,
  };
}

/** At most `limit` holders at once. */
class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}
  async use<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((r) => this.waiting.push(r));
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

/** Runs `fn` over items with at most `limit` at once. */
async function poolOf<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(workers);
}
