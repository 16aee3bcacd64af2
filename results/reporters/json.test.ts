import { describe, expect, it } from 'vitest';
import { cell, runEnd, runStart, targetStart } from '../../test/events-fixture.ts';
import { summarize } from '../verdicts.ts';
import { summaryJson } from './json.ts';

describe('JSON summary', () => {
  it('gives a target that cannot run probes by its nature as skipped, with the reason, and not as an error', () => {
    const why = 'WSL distribution "Legacy" runs under WSL 1, which has no GPU: "wsl.exe --set-version Legacy 2"';
    const events = [
      runStart(),
      targetStart('wsl1'),
      { type: 'target-error' as const, target: 'wsl1', time: '', code: 'WSL_VERSION_1', message: why },
      cell('wsl1', 'sysinfo', 'skipped', [], { reason: why, errorCode: 'WSL_VERSION_1', durationMs: 0 }),
      targetStart('down'),
      { type: 'target-error' as const, target: 'down', time: '', code: 'TARGET_UNREACHABLE', message: 'connect ECONNREFUSED' },
      cell('down', 'sysinfo', 'error', [], { reason: 'connect ECONNREFUSED', errorCode: 'TARGET_UNREACHABLE' }),
      runEnd,
    ];
    const json = JSON.parse(summaryJson(summarize(events))) as { counts: { cells: Record<string, number> }; targets: Record<string, unknown>[] };
    expect(json.counts.cells).toEqual({ skipped: 1, error: 1 });
    expect(json.targets[0]).toMatchObject({ name: 'wsl1', error: null, skipped: { code: 'WSL_VERSION_1', reason: why }, cells: [{ status: 'skipped', reason: why }] });
    expect(json.targets[1]).toMatchObject({ name: 'down', error: { code: 'TARGET_UNREACHABLE' }, skipped: null });
  });
});
