/**
 * What a fanned-out run owed and did not deliver. On GitHub Actions each job runs some targets
 * and uploads its event log; a job whose runner was lost, that was cancelled or timed out, or
 * whose step was killed leaves a log that stops early or no log at all. `gha merge` knows which
 * targets each job owed (the `gha matrix` plan), so instead of a merged run that silently lacks
 * them (or counts as interrupted as a whole) every owed cell that no log finished ends here as an
 * error with code JOB_LOST, on a target-error that says which job and what is known. The merged
 * run then ends (run-end), is judged like any run (exit 3: an infrastructure error), and records
 * can still be made of the targets that were not lost.
 *
 * Pure: the merged events in, the accounted events out.
 */
import type { CellEndEvent, RunEndEvent, RunEvent, RunStartEvent, TargetStartEvent } from './events.ts';

/** A target a job owed: its definition (as run would have started it) and its planned cells. */
export interface OwedTarget {
  job: string;
  start: Omit<TargetStartEvent, 'type' | 'time'>;
  /** Planned cell names ("target/probe"), in plan order. */
  cells: string[];
}

export interface LostTarget {
  target: string;
  job: string;
  /**
   * no-log: nothing of the target in any log; cut-short: its log stops without a run-end (killed);
   * interrupted: its run ended interrupted (the job timed out or was cancelled: the runner sends
   * Ctrl-C), with cells not run or stopped.
   */
  how: 'no-log' | 'cut-short' | 'interrupted';
  /** The cells that ended as JOB_LOST. */
  cells: string[];
}

const probeOf = (cell: string) => cell.slice(cell.lastIndexOf('/') + 1);
const latest = (times: string[]) => times.reduce((latestSoFar, time) => (Date.parse(time) > Date.parse(latestSoFar) ? time : latestSoFar));
const timeOf = (e: RunEvent): string | undefined =>
  'time' in e ? e.time : e.type === 'run-start' ? e.started : e.type === 'run-end' ? e.finished : undefined;

/** What the logs say about how each job ended, by target. */
export interface JobEnds {
  /** Targets whose log has no run-end. */
  cutShort: ReadonlySet<string>;
  /** Targets whose log's run-end says interrupted. */
  interrupted: ReadonlySet<string>;
}

/**
 * `events`: a merged run (run-start first; a run-end when every log had one). Returns the events
 * with every owed cell accounted for and a run-end that is not interrupted (in a fanned-out run
 * an interrupted job is a job that timed out or was cancelled: its unfinished cells are lost, and
 * the merge itself is complete), and the targets that were lost.
 */
export function accountForLostJobs(
  events: RunEvent[],
  owed: OwedTarget[],
  ends: JobEnds,
  now: string,
): { events: RunEvent[]; lost: LostTarget[] } {
  const start = events[0] as RunStartEvent;
  // An interrupted run ends its unfinished cells as not run or cancelled: here they are lost, and those ends are replaced.
  const stopped = (e: RunEvent): boolean =>
    e.type === 'cell-end' && e.planned && ends.interrupted.has(e.target) && (e.status === 'not-run' || e.status === 'cancelled');
  const ended = new Set(events.flatMap((e) => (e.type === 'cell-end' && e.planned && !stopped(e) ? [e.cell] : [])));
  const seen = new Set(events.flatMap((e) => ('target' in e ? [e.target] : [])));
  // When a job with no log was lost is not known: the last thing any log saw (or now, with none).
  const times = events.flatMap((e) => timeOf(e) ?? []).filter((time) => !Number.isNaN(Date.parse(time)));
  const lostAt = times.length ? latest(times) : now;

  const lost: LostTarget[] = [];
  const added = new Map<string, RunEvent[]>();
  for (const owedTarget of owed) {
    const missing = owedTarget.cells.filter((cell) => !ended.has(cell));
    // A target whose log ended normally finished what it owed; one with no log, a log that stops
    // short, or a run that ended interrupted is lost for the cells it did not finish.
    const target = owedTarget.start.target;
    if (missing.length === 0 || (seen.has(target) && !ends.cutShort.has(target) && !ends.interrupted.has(target))) continue;
    const how = !seen.has(target) ? 'no-log' : ends.cutShort.has(target) ? 'cut-short' : 'interrupted';
    const time = how === 'no-log' ? lostAt : latest(events.flatMap((e) => ('target' in e && e.target === target ? [e.time] : [])));
    const cells = `${missing.length} planned cell${missing.length === 1 ? '' : 's'}`;
    const message = {
      'no-log': `job "${owedTarget.job}" left no event log for target ${target} (its artifact is missing: the job was cancelled, timed out, failed before cudamatrix started, or its runner was lost); ${cells} not run. See that job's log on GitHub`,
      'cut-short': `job "${owedTarget.job}"'s event log for target ${target} stops at ${time} without an end (the job was killed or its runner was lost mid-run); ${cells} never finished: ${missing.map(probeOf).join(', ')}`,
      interrupted: `job "${owedTarget.job}" was stopped at ${time} before target ${target} finished (the job timed out or was cancelled: its run ended interrupted); ${cells} not finished: ${missing.map(probeOf).join(', ')}`,
    }[how];
    const list: RunEvent[] = [];
    if (how === 'no-log') list.push({ type: 'target-start', time, ...owedTarget.start });
    list.push({ type: 'target-error', target: owedTarget.start.target, time, code: 'JOB_LOST', message });
    for (const cell of missing) {
      const end: CellEndEvent = {
        type: 'cell-end',
        cell,
        target: owedTarget.start.target,
        probe: probeOf(cell),
        planned: true,
        time,
        status: 'error',
        reason: message,
        errorCode: 'JOB_LOST',
        durationMs: 0,
        exitCode: null,
        signal: null,
        records: [],
        problems: [],
        stderrTail: '',
      };
      list.push(end);
    }
    added.set(owedTarget.start.target, list);
    lost.push({ target: owedTarget.start.target, job: owedTarget.job, how, cells: missing });
  }

  // Each target's accounting follows its own events; targets no log named come last, in plan order.
  const body = events.filter((e) => e.type !== 'run-start' && e.type !== 'run-end' && !stopped(e));
  const out: RunEvent[] = [];
  const placed = new Set<string>();
  const lastIndex = new Map<string, number>();
  body.forEach((e, i) => 'target' in e && lastIndex.set(e.target, i));
  for (let i = 0; i < body.length; i++) {
    const e = body[i]!;
    out.push(e);
    const target = 'target' in e ? e.target : undefined;
    if (target === undefined || !added.has(target) || lastIndex.get(target) !== i) continue;
    out.push(...added.get(target)!);
    placed.add(target);
  }
  for (const [target, list] of added) if (!placed.has(target)) out.push(...list);

  const owedCells = owed.flatMap((owedTarget) => owedTarget.cells);
  const cells = [...start.cells, ...owedCells.filter((cell) => !start.cells.includes(cell))];
  const end = events.find((e): e is RunEndEvent => e.type === 'run-end');
  const finished = end?.finished ?? lostAt;
  const runEnd: RunEndEvent = end
    ? { ...end, interrupted: false }
    : { type: 'run-end', finished, durationMs: Math.max(0, Date.parse(finished) - Date.parse(start.started)), interrupted: false };
  return { events: [{ ...start, cells }, ...out, runEnd], lost };
}
