/**
 * Runs one probe on a target and turns what happened into a ProbeRun: the records it printed,
 * protocol problems, and a status. A probe that exits non-zero is data, never an exception.
 */
import type { ExecResult, Session } from '../transports/transport.ts';
import { paramArgs } from './catalogue.ts';
import type { DeployedProbe } from './deploy.ts';
import { describeProblem, parseProbeOutput, type ProbeRecord, type ProtocolProblem } from './protocol.ts';

/** cudaprobe's exit codes. */
export const ProbeExit = { ran: 0, failure: 1, usage: 2, noDriver: 3 } as const;

export type ProbeStatus = 'passed' | 'skipped' | 'error' | 'cancelled';

export interface ProbeRun {
  probe: string;
  status: ProbeStatus;
  /** Why it was skipped or failed, in one line. */
  reason?: string;
  errorCode?: 'PROBE_CRASHED' | 'PROBE_TIMEOUT' | 'PROBE_PROTOCOL' | 'USAGE';
  records: ProbeRecord[];
  problems: ProtocolProblem[];
  exec: ExecResult;
}

export interface RunProbeOptions {
  device?: number;
  params?: Record<string, unknown>;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export async function runProbe(session: Session, deployed: DeployedProbe, probe: string, options: RunProbeOptions = {}): Promise<ProbeRun> {
  const argv = [deployed.remotePath, 'run', probe, '--device', String(options.device ?? 0), ...paramArgs(options.params ?? {})];
  const exec = await session.exec(argv, { cwd: session.workDir, timeoutMs: options.timeoutMs, signal: options.signal });
  return classify(probe, exec);
}

/** Why a cell that started was stopped by a cancellation (an interrupt). */
export const CANCELLED_REASON = 'cancelled before it finished';

export function classify(probe: string, exec: ExecResult): ProbeRun {
  const { records, problems } = parseProbeOutput(exec.stdout);
  const run: ProbeRun = { probe, status: 'passed', records, problems, exec };
  const stderrTail = exec.stderr.trim().split('\n').slice(-3).join(' | ');
  const firstError = records.find((record) => record.type === 'error');
  const skips = records.filter((record) => record.type === 'skip');
  if (exec.cancelled) {
    return { ...run, status: 'cancelled', reason: CANCELLED_REASON };
  }
  if (exec.timedOut) {
    return {
      ...run,
      status: 'error',
      errorCode: 'PROBE_TIMEOUT',
      reason: `timed out after ${Math.round(exec.durationMs)} ms; the process tree was killed`,
    };
  }
  if (exec.truncated) {
    return { ...run, status: 'error', errorCode: 'PROBE_CRASHED', reason: 'printed more output than the cap allows; it was stopped' };
  }
  if (exec.signal) {
    return {
      ...run,
      status: 'error',
      errorCode: 'PROBE_CRASHED',
      reason: `killed by ${exec.signal}${stderrTail ? `: ${stderrTail}` : ''}`,
    };
  }
  if (problems.length > 0) {
    return { ...run, status: 'error', errorCode: 'PROBE_PROTOCOL', reason: describeProblem(probe, problems[0]!) };
  }
  switch (exec.exitCode) {
    case ProbeExit.ran:
      return run;
    case ProbeExit.noDriver:
      // The last skip is the one that stopped the probe (earlier ones skip a series of it).
      return { ...run, status: 'skipped', reason: skips.at(-1)?.reason ?? 'no usable NVIDIA driver or device' };
    case ProbeExit.usage:
      return { ...run, status: 'error', errorCode: 'USAGE', reason: firstError?.message ?? (stderrTail || 'usage error') };
    default: {
      const what = exec.exitCode === null ? 'could not be started' : `exited with ${exec.exitCode}`;
      const detail = firstError?.message ?? stderrTail;
      return { ...run, status: 'error', errorCode: 'PROBE_CRASHED', reason: `${what}${detail ? `: ${detail}` : ''}` };
    }
  }
}
