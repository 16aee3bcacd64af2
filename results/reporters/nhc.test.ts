/** The nhc reporter's line per target: the status that target alone gives, --strict included. */
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../events/events.ts';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../../test/events-fixture.ts';
import { summarize } from '../verdicts.ts';
import { nhcLines } from './nhc.ts';

const events: RunEvent[] = [
  runStart({ linux: [{ fact: 'sysinfo.tcc_driver', equals: false }] }),
  targetStart('gpu', [], 'auto'),
  cell('gpu', 'sysinfo', 'passed', sysinfo({ environment: 'linux', tcc_driver: false })),
  targetStart('nodriver'),
  cell('nodriver', 'sysinfo', 'skipped', sysinfo({ environment: 'linux' }), { reason: 'no NVIDIA driver found' }),
  targetStart('crashed'),
  cell('crashed', 'sysinfo', 'error', [], { reason: 'killed by SIGSEGV', errorCode: 'PROBE_CRASHED' }),
  runEnd,
];

describe('nhc lines', () => {
  it('a node that measured nothing is healthy without --strict, and exit status 4 with it, as a run of it alone ends', () => {
    const summary = summarize(events);
    expect(nhcLines(summary, { strict: false })).toBe(
      [
        'gpu 0 OK: 1 cells, 1 expectations passed',
        'nodriver 0 OK: 1 cells (1 skipped), 0 expectations passed',
        'crashed 3 ERROR: nhc: Health check failed: crashed: sysinfo PROBE_CRASHED: killed by SIGSEGV',
        '',
      ].join('\n'),
    );
    const strict = nhcLines(summary, { strict: true }).split('\n');
    expect(strict[0]).toBe('gpu 0 OK: 1 cells, 1 expectations passed');
    expect(strict[1]).toBe(
      'nodriver 4 ERROR: nhc: Health check failed: nodriver: nothing measured (--strict): 1 cells skipped, sysinfo: no NVIDIA driver found',
    );
    expect(strict[2]).toMatch(/^crashed 3 /);
  });
});
