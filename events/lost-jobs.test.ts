import { describe, expect, it } from 'vitest';
import type { CellEndEvent, RunEvent, TargetErrorEvent } from './events.ts';
import { cell, runEnd, runStart, targetStart } from '../test/events-fixture.ts';
import { accountForLostJobs, type OwedTarget } from './lost-jobs.ts';
import { exitCodeOf, summarize } from '../verdicts/verdicts.ts';

const owe = (job: string, target: string, probes: string[]): OwedTarget => ({
  job,
  cells: probes.map((probe) => `${target}/${probe}`),
  start: { target, environment: 'linux', transport: ['local'], probes, expect: [{ fact: 'sysinfo.os_family', equals: 'linux' }] },
});
const NOW = '2026-12-01T03:00:00.000Z';
const ends = (events: RunEvent[]) => events.filter((e): e is CellEndEvent => e.type === 'cell-end');
const errors = (events: RunEvent[]) => events.filter((e): e is TargetErrorEvent => e.type === 'target-error');

describe('accounting for lost jobs (gha merge)', () => {
  const owed = [
    owe('ok-job', 'ok', ['sysinfo', 'sync-latency']),
    owe('cut-job', 'cut', ['sysinfo', 'sync-latency', 'event-timing']),
    owe('gone-job', 'gone', ['sysinfo']),
  ];
  // ok finished; cut's log stops after sysinfo (killed mid-run: no run-end); gone left no log.
  const merged: RunEvent[] = [
    runStart({}, ['ok/sysinfo', 'ok/sync-latency', 'cut/sysinfo', 'cut/sync-latency', 'cut/event-timing']),
    targetStart('ok', [], 'linux'),
    cell('ok', 'sysinfo', 'passed'),
    cell('ok', 'sync-latency', 'passed'),
    targetStart('cut', [], 'linux'),
    cell('cut', 'sysinfo', 'passed', [], { time: '2026-11-29T12:00:05.000Z' }),
    { type: 'cell-start', cell: 'cut/sync-latency', target: 'cut', probe: 'sync-latency', time: '2026-11-29T12:00:06.000Z' },
  ];

  it('ends every cell no log finished as JOB_LOST, says which job and what is known, and ends the run', () => {
    const { events, lost } = accountForLostJobs(merged, owed, { cutShort: new Set(['cut']), interrupted: new Set() }, NOW);
    expect(lost).toEqual([
      { target: 'cut', job: 'cut-job', how: 'cut-short', cells: ['cut/sync-latency', 'cut/event-timing'] },
      { target: 'gone', job: 'gone-job', how: 'no-log', cells: ['gone/sysinfo'] },
    ]);
    const lostEnds = ends(events).filter((e) => e.errorCode === 'JOB_LOST');
    expect(lostEnds.map((e) => [e.cell, e.status])).toEqual([
      ['cut/sync-latency', 'error'],
      ['cut/event-timing', 'error'],
      ['gone/sysinfo', 'error'],
    ]);
    const [cutError, goneError] = errors(events);
    expect(cutError!.message).toMatch(
      /job "cut-job"'s event log for target cut stops at 2026-11-29T12:00:06.000Z without an end .*never finished: sync-latency, event-timing/,
    );
    expect(goneError!.message).toMatch(/job "gone-job" left no event log for target gone \(its artifact is missing/);
    // The lost target's events follow its own; a target no log named is started from the plan, last.
    const order = events.map((e) => `${e.type}${'target' in e ? ` ${e.target}` : ''}`);
    expect(order.indexOf('target-error cut')).toBe(order.lastIndexOf('cell-start cut') + 1);
    expect(order.slice(-4)).toEqual(['target-start gone', 'target-error gone', 'cell-end gone', 'run-end']);
    expect(events[0]!.type === 'run-start' && events[0]!.cells).toContain('gone/sysinfo');
    const end = events.at(-1)!;
    expect(end).toMatchObject({ type: 'run-end', interrupted: false });
  });

  it('judges the result as a run with an infrastructure error, not an interrupted one, and keeps the other targets', () => {
    const { events } = accountForLostJobs(merged, owed, { cutShort: new Set(['cut']), interrupted: new Set() }, NOW);
    const summary = summarize(events);
    expect(summary.interrupted).toBe(false);
    expect(summary.hasInfrastructureError).toBe(true);
    expect(exitCodeOf(summary, { strict: false })).toBe(3);
    const byName = new Map(summary.targets.map((target) => [target.name, target]));
    expect(byName.get('ok')!.error).toBeUndefined();
    expect(byName.get('gone')!.error?.code).toBe('JOB_LOST');
    expect(byName.get('gone')!.verdicts.map((verdict) => verdict.status)).toEqual(['error']);
  });

  it('leaves a complete run alone, and does not call an interrupted (ended) log lost', () => {
    const complete = [...merged.slice(0, 4), runEnd];
    const done = accountForLostJobs(complete, [owed[0]!], { cutShort: new Set(), interrupted: new Set() }, NOW);
    expect(done.lost).toEqual([]);
    expect(done.events).toEqual(complete);
  });

  it('counts the cells a timed-out or cancelled job did not finish as lost, and the merge as complete', () => {
    // The runner's Ctrl-C on a timeout: the run ends interrupted, its unfinished cells not run or cancelled.
    const interrupted = [
      ...merged.slice(0, 5),
      cell('cut', 'sysinfo', 'passed'),
      cell('cut', 'sync-latency', 'cancelled', [], { time: '2026-11-29T12:00:07.000Z' }),
      cell('cut', 'event-timing', 'not-run', [], { time: '2026-11-29T12:00:07.000Z' }),
      { ...runEnd, interrupted: true } as RunEvent,
    ];
    const { events, lost } = accountForLostJobs(interrupted, owed.slice(0, 2), { cutShort: new Set(), interrupted: new Set(['cut']) }, NOW);
    expect(lost).toEqual([{ target: 'cut', job: 'cut-job', how: 'interrupted', cells: ['cut/sync-latency', 'cut/event-timing'] }]);
    // The not-run and cancelled ends are replaced, not doubled.
    expect(
      ends(events)
        .filter((e) => e.target === 'cut')
        .map((e) => [e.probe, e.status]),
    ).toEqual([
      ['sysinfo', 'passed'],
      ['sync-latency', 'error'],
      ['event-timing', 'error'],
    ]);
    expect(errors(events)[0]!.message).toMatch(
      /job "cut-job" was stopped at 2026-11-29T12:00:07.000Z before target cut finished \(the job timed out or was cancelled/,
    );
    const summary = summarize(events);
    expect(summary.interrupted).toBe(false);
    expect(exitCodeOf(summary, { strict: false })).toBe(3);
    // A log that ended normally owes nothing, interrupted flag or not.
    const done = [...merged.slice(0, 4), { ...runEnd, interrupted: true } as RunEvent];
    expect(accountForLostJobs(done, [owed[0]!], { cutShort: new Set(), interrupted: new Set(['ok']) }, NOW).lost).toEqual([]);
  });

  it('makes a run of nothing but lost jobs when no job left a log', () => {
    const { events, lost } = accountForLostJobs([runStart({}, [])], owed, { cutShort: new Set(), interrupted: new Set() }, NOW);
    expect(lost.map((lostTarget) => [lostTarget.target, lostTarget.how])).toEqual([
      ['ok', 'no-log'],
      ['cut', 'no-log'],
      ['gone', 'no-log'],
    ]);
    expect(ends(events)).toHaveLength(6);
    expect(summarize(events).counts.cells).toEqual({ error: 6 });
  });
});
