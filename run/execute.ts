/**
 * The run engine: reaches each target through its transport, deploys cudaprobe, runs sysinfo
 * (always first: it detects the environment) and then the planned probes one after another,
 * and writes every step to the event log as it happens. Targets run concurrently up to the
 * matrix's limit and its per-host limit (see schedule.ts). Cancelling stops running probes and
 * compiles; cells that never started end as "not-run", and the log is still closed properly.
 *
 * The engine knows nothing of how results are rendered: it hands each event to `onEvent`, and
 * the caller (the CLI) feeds the reporters and judges the expectations.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { CudamatrixError, describeError, isNotApplicable } from '../core/errors.ts';
import { makeDir, makeNewDir } from '../core/fs.ts';
import { TOOL_VERSION } from '../core/version.ts';
import { EVENTS_SCHEMA_VERSION, type CellEndEvent, type RunEvent } from '../events/events.ts';
import type { Target } from '../matrix/load.ts';
import { probeBinaries } from '../probes/binary.ts';
import { effectiveParams } from '../probes/catalogue.ts';
import { deployProbe, type BuildFor, type DeployedProbe } from '../probes/deploy.ts';
import { HostVmMemory } from '../probes/host-vm-memory.ts';
import { CANCELLED_REASON, runProbe, type ProbeRun } from '../probes/run-probe.ts';
import { asksForNoGpu, connectChain, hostKeyOf, noGpuAsked } from '../transports/registry.ts';
import { hostKeyAddedMessage, type HostKeyAdded, type Session } from '../transports/transport.ts';
import { EventLog } from './event-log.ts';
import { cellName, type Plan } from './plan.ts';
import { schedule } from './schedule.ts';

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
  /** Every event, as it is written to the log. */
  onEvent?: (event: RunEvent) => void;
  build?: BuildFor;
  onProgress?: (message: string) => void;
}

export interface ExecuteResult {
  events: RunEvent[];
  runDir: string;
  eventsFile: string;
  /** Why the event log stopped being written (a full disk), if it did. */
  logFailure?: CudamatrixError;
}

export const NOT_RUN_REASON = 'the run was interrupted before this cell started';

export function newRunId(now = new Date()): string {
  return `${now.toISOString().replace(/[:.]/g, '-')}-${randomBytes(3).toString('hex')}`;
}

export async function executePlan(plan: Plan, options: ExecuteOptions): Promise<ExecuteResult> {
  const { runId, runDir } = claimRunDir(options.runsDir, options.runId);
  const eventsFile = path.join(runDir, 'events.jsonl');
  const log = new EventLog(eventsFile);
  const emit = (event: RunEvent): void => {
    log.write(event);
    options.onEvent?.(event);
  };
  const started = Date.now();
  const build = options.build ?? probeBinaries({ onProgress: options.onProgress, signal: options.signal });
  emit({
    type: 'run-start',
    schemaVersion: EVENTS_SCHEMA_VERSION,
    tool: 'cudamatrix',
    version: TOOL_VERSION,
    runId,
    started: new Date(started).toISOString(),
    shard: plan.shard ?? null,
    matrix: { file: plan.matrix.file, description: plan.matrix.description, expectations: plan.matrix.expectations },
    cells: plan.cells.map((cell) => cell.name),
    options: { strict: options.strict ?? false, quick: options.quick ?? false },
  });

  const context: TargetContext = {
    runId,
    emit,
    build,
    signal: options.signal,
    quick: options.quick ?? false,
    acceptNewHostKeys: options.acceptNewHostKeys,
    onProgress: options.onProgress,
  };
  try {
    await schedule(plan.targets, {
      limit: options.concurrency ?? plan.matrix.concurrency,
      hostLimit: plan.matrix.hostConcurrency,
      hostOf: (target) => {
        try {
          return hostKeyOf(target.hops);
        } catch {
          return `target:${target.name}`;
        }
      },
      run: (target) =>
        runOneTarget(
          target,
          plan.cells.filter((cell) => cell.target === target.name).map((cell) => cell.probe),
          context,
        ),
    });
  } finally {
    emit({
      type: 'run-end',
      finished: new Date().toISOString(),
      durationMs: Date.now() - started,
      interrupted: Boolean(options.signal?.aborted),
    });
    log.close();
  }
  return { events: log.events, runDir, eventsFile, logFailure: log.failure };
}

/**
 * A new run folder of its own: runs started together with one --results-dir never share one
 * (the folder is created exclusively; a taken id draws another). A given id (a test's) is used as it is.
 */
function claimRunDir(runsDir: string, given: string | undefined): { runId: string; runDir: string } {
  if (given !== undefined) {
    makeDir(path.join(runsDir, given), 'the run folder');
    return { runId: given, runDir: path.join(runsDir, given) };
  }
  makeDir(runsDir, '--results-dir');
  for (;;) {
    const runId = newRunId();
    if (makeNewDir(path.join(runsDir, runId), 'the run folder')) return { runId, runDir: path.join(runsDir, runId) };
  }
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

/**
 * One target from start to end. Never throws: whatever goes wrong (a bad option, a dropped
 * connection, a bug) ends this target with an error for its remaining cells, and the other
 * targets carry on. A transport that finds the target cannot run probes by its nature (an
 * error of class not-applicable, such as WSL_VERSION_1) ends its cells as skipped instead.
 */
async function runOneTarget(target: Target, probes: string[], ctx: TargetContext): Promise<void> {
  const now = () => new Date().toISOString();
  const { emit, signal } = ctx;
  emit({
    type: 'target-start',
    target: target.name,
    time: now(),
    environment: target.environment,
    transport: target.hops.map((hop) => hop.kind),
    probes,
    expect: target.expect,
    ...(asksForNoGpu(target.hops) ? { noGpu: true as const } : {}),
  });
  // Cells not yet ended: whatever stops the target early ends them all, once.
  const pending = new Set(probes);
  const end = (cell: CellEndEvent): void => {
    pending.delete(cell.probe);
    emit(cell);
  };
  // A code of class not-applicable (a WSL 1 distribution: no GPU by construction) is recorded
  // the same way, but the target's cells are skipped, not failed: the message says why, and what
  // to do, and the run does not fail because of it (core/errors.ts).
  // Keys accept-new trusted: said on stderr as OpenSSH says it, and kept in the log.
  const keysAdded: HostKeyAdded[] = [];
  const onHostKeyAdded = (added: HostKeyAdded): void => {
    keysAdded.push(added);
    ctx.onProgress?.(`${target.name}: ${hostKeyAddedMessage(added)}`);
  };
  const withKeys = () => (keysAdded.length ? { hostKeysAdded: [...keysAdded] } : {});
  const failRest = (code: string, message: string): void => {
    emit({ type: 'target-error', target: target.name, time: now(), code, message, ...withKeys() });
    const status = isNotApplicable(code) ? 'skipped' : 'error';
    for (const probe of [...pending]) end(blankCell(target, probe, { status, errorCode: code, reason: message }));
  };
  const notRunRest = (): void => {
    for (const probe of [...pending]) end(blankCell(target, probe, { status: 'not-run', reason: NOT_RUN_REASON }));
  };
  const codeOf = (error: unknown, fallback: string) => (error instanceof CudamatrixError ? error.code : fallback);

  let session: Session | undefined;
  try {
    if (signal?.aborted) return notRunRest();
    let deployed: DeployedProbe;
    try {
      session = await connectChain(target.hops, {
        target: target.name,
        runId: ctx.runId,
        signal,
        acceptNewHostKeys: ctx.acceptNewHostKeys,
        binaryFor: ctx.build,
        onProgress: ctx.onProgress,
        onHostKeyAdded,
      });
      deployed = await deployProbe(session, ctx.build);
    } catch (error) {
      if (signal?.aborted) return notRunRest();
      return failRest(codeOf(error, 'TARGET_UNREACHABLE'), describeError(error));
    }
    emit({
      type: 'target-ready',
      target: target.name,
      time: now(),
      session: session.description,
      platform: session.platform,
      arch: session.arch,
      probe: {
        hash: deployed.binary.hash,
        built: deployed.binary.built,
        prebuilt: deployed.binary.prebuilt,
        uploaded: deployed.uploaded,
        path: deployed.remotePath,
      },
      ...withKeys(),
    });

    const hostVm = new HostVmMemory(session.vmHost, ctx.build);
    // A transport failure (the connection dropped) ends the target: its remaining cells are
    // errors with the reason. A probe is never re-run.
    const run = async (probe: string): Promise<CellEndEvent | undefined> => {
      if (signal?.aborted) {
        notRunRest();
        return undefined;
      }
      emit({ type: 'cell-start', cell: cellName(target.name, probe), target: target.name, probe, time: now() });
      const startedAt = Date.now();
      try {
        const params = effectiveParams(probe, target.params[probe], ctx.quick);
        const options = { device: target.device, params, timeoutMs: target.timeoutMs, signal };
        const result = await hostVm.around(probe, () => runProbe(session!, deployed, probe, options), options);
        const cell = cellEvent(target, result, probes.includes(probe), params);
        if (probes.includes(probe)) end(cell);
        else emit(cell);
        return cell;
      } catch (error) {
        if (signal?.aborted) {
          // It started, so it was cancelled, whatever the transport's exec did on the way out (a
          // real wsl.exe dies on Ctrl-C, and its agent's stream ends: the exec rejects).
          const cancelled = {
            ...blankCell(target, probe, { status: 'cancelled', reason: CANCELLED_REASON }),
            durationMs: Date.now() - startedAt,
          };
          if (probes.includes(probe)) end(cancelled);
          else emit({ ...cancelled, planned: false });
          notRunRest();
        } else failRest(codeOf(error, 'TRANSPORT_FAILED'), describeError(error));
        return undefined;
      }
    };

    // sysinfo first, always: it says which environment the target really is.
    const sysinfo = await run('sysinfo');
    if (!sysinfo) return;
    const detected = sysinfo.records.find((record) => record.type === 'sysinfo' && record.name === 'environment')?.value as
      string | null | undefined;
    if (target.environment !== 'auto' && typeof detected === 'string' && detected !== target.environment) {
      return failRest(
        'ENVIRONMENT_MISMATCH',
        `target "${target.name}" is declared as ${target.environment}, but the probe detected ${detected}; correct "environment:" in the matrix (or use auto)`,
      );
    }
    for (const probe of probes.filter((probeName) => probeName !== 'sysinfo')) {
      if (!(await run(probe))) return;
    }
  } catch (error) {
    // A bug, not a measurement: still a result for this target only.
    failRest('INTERNAL', `cudamatrix failed on this target: ${describeError(error)}`);
  } finally {
    if (session) await Promise.resolve(session[Symbol.asyncDispose]()).catch(() => undefined);
  }
}

/** Why a cell of a target that asks for no GPU (by `option`: docker's gpus: none, slurm's gres: none) found no driver. */
export const noGpuAsAsked = (option: string) => `no GPU, as the target asks (${option})`;

/**
 * A cell's reason: a target that asks for no GPU has no driver by design, and its skipped cells
 * say so first (as doctor does), then what the probe said.
 */
function reasonOf(target: Target, run: ProbeRun): string | undefined {
  const noDriver = run.status === 'skipped' && /\bNVIDIA driver\b|no usable NVIDIA/.test(run.reason ?? '');
  const asked = noGpuAsked(target.hops);
  return noDriver && asked ? `${noGpuAsAsked(asked)}: ${run.reason}` : run.reason;
}

function cellEvent(target: Target, run: ProbeRun, planned: boolean, params: Record<string, unknown>): CellEndEvent {
  const stderr = run.exec.stderr.trim();
  return {
    type: 'cell-end',
    cell: cellName(target.name, run.probe),
    target: target.name,
    probe: run.probe,
    planned,
    time: new Date().toISOString(),
    status: run.status,
    reason: reasonOf(target, run),
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

function blankCell(target: Target, probe: string, outcome: Pick<CellEndEvent, 'status' | 'reason'> & { errorCode?: string }): CellEndEvent {
  return {
    type: 'cell-end',
    cell: cellName(target.name, probe),
    target: target.name,
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
