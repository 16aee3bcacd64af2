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
  const hostLocks = new Map<string, Promise<void>>();
  const runTarget = async (t: Target): Promise<void> => {
    // One target at a time per host: chain this target behind the previous one on its host.
    const key = hostKeyOf(t.hops);
    const before = hostLocks.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    hostLocks.set(key, before.then(() => mine));
    await before;
    try {
      await runOneTarget(t, cellsOf(t), { runId, emit, build, signal: options.signal, quick: options.quick ?? false });
    } finally {
      release();
    }
  };
  await pool(plan.targets, options.concurrency ?? plan.matrix.concurrency, runTarget);

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
      session = await connectChain(t.hops, { target: t.name, runId: ctx.runId, signal });
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
      probe: { hash: deployed.binary.hash, built: deployed.binary.built },
    });

    const run = async (probe: string): Promise<CellEndEvent> => {
      const params = effectiveParams(probe, t.params[probe], ctx.quick);
      const result = await runProbe(session!, deployed, probe, { device: t.device, params, timeoutMs: t.timeoutMs, signal });
      return cellEvent(t, result, probes.includes(probe), params);
    };

    // sysinfo first, always: it says which environment the target really is.
    const sysinfo = await run('sysinfo');
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
      emit(await run(rest[i]!));
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

/** Runs `fn` over items with at most `limit` at once. */
async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(workers);
}
