/** The nhc reporter's line per target: the status that target alone gives; measuring nothing is not healthy. */
import { describe, expect, it } from 'vitest';
import type { RunEvent, TargetStartEvent } from '../events/events.ts';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../test/events-fixture.ts';
import { summarize } from '../verdicts/verdicts.ts';
import type { KnownBadEntry } from '../matrix/known-bad.ts';
import { nhcLines } from './nhc.ts';

const events: RunEvent[] = [
  runStart({ linux: [{ fact: 'sysinfo.tcc_driver', equals: false }] }),
  targetStart('gpu', [], 'auto'),
  cell('gpu', 'sysinfo', 'passed', sysinfo({ environment: 'linux', tcc_driver: false })),
  targetStart('nodriver'),
  cell('nodriver', 'sysinfo', 'skipped', sysinfo({ environment: 'linux' }), { reason: 'no NVIDIA driver found' }),
  targetStart('crashed'),
  cell('crashed', 'sysinfo', 'error', [], { reason: 'killed by SIGSEGV', errorCode: 'PROBE_CRASHED' }),
  // docker gpus: none: no driver there is as asked.
  { ...(targetStart('cpu-only') as TargetStartEvent), noGpu: true },
  cell('cpu-only', 'sysinfo', 'skipped', sysinfo({ environment: 'linux' }), { reason: 'no NVIDIA driver found' }),
  runEnd,
];

describe('nhc lines', () => {
  it('a node that measured nothing (no usable driver) is status 4, not OK; a target that asks for no GPU is OK', () => {
    expect(nhcLines(summarize(events))).toBe(
      [
        'gpu 0 OK: 1 cells, 1 expectations passed',
        'nodriver 4 ERROR: nhc: Health check failed: nodriver: nothing measured: 1 cells skipped, sysinfo: no NVIDIA driver found',
        'crashed 3 ERROR: nhc: Health check failed: crashed: sysinfo PROBE_CRASHED: killed by SIGSEGV',
        'cpu-only 0 OK: 1 cells (1 skipped: the target asks for no GPU), 0 expectations passed',
        '',
      ].join('\n'),
    );
  });

  it('a driver in the known-bad registry for a behaviour the node checked is status 7, as gate fails it; a single report is not', () => {
    const checked: RunEvent[] = [
      runStart({}),
      targetStart('n3', [], 'auto'),
      cell('n3', 'sysinfo', 'passed', sysinfo({ environment: 'linux', driver_version: '591.32', gpu_name: 'NVIDIA H200' })),
      cell('n3', 'transfer-bandwidth', 'passed', []),
      runEnd,
    ];
    const entry = (trust: KnownBadEntry['trust'], concerns: string[]): KnownBadEntry => ({
      id: 'slow-copies',
      drivers: [{ os: 'linux', from: '591' }],
      symptom: 'Pinned copies lose a tenth of their bandwidth.',
      fixedIn: null,
      source: 'https://github.com/example/tracker/issues/1',
      trust,
      concerns,
    });
    const line = (e: KnownBadEntry) => nhcLines(summarize(checked), { knownBad: [e] });
    expect(line(entry('multiple-reports', ['transfer-bandwidth']))).toBe(
      'n3 7 ERROR: nhc: Health check failed: n3: known-bad driver 591.32: Pinned copies lose a tenth of their bandwidth. (source https://github.com/example/tracker/issues/1)\n',
    );
    // By a claim the probe decides (C8: transfer-bandwidth's).
    expect(line(entry('maintainer-confirmed', ['C8']))).toMatch(/^n3 7 /);
    expect(line(entry('single-report', ['transfer-bandwidth']))).toMatch(/^n3 0 OK/);
    expect(line(entry('multiple-reports', ['cuda-graph']))).toMatch(/^n3 0 OK/);
  });
});
