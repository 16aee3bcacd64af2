/** The console over many targets (issue 22, item 5): problems and progress, not a line per cell. */
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../events/events.ts';
import { cell, runEnd, runStart, targetStart } from '../test/events-fixture.ts';
import { summarize } from '../verdicts/verdicts.ts';
import { COLLAPSE_ABOVE, consoleReporter } from './console.ts';

/** `count` targets of two cells each, all passed but for t7's second cell, which crashed. */
function fleet(count: number): RunEvent[] {
  const names = Array.from({ length: count }, (_, i) => `t${i}`);
  const events: RunEvent[] = [
    runStart(
      {},
      names.flatMap((n) => [`${n}/sysinfo`, `${n}/sync-latency`]),
    ),
  ];
  for (const n of names) {
    events.push(targetStart(n, [], 'auto', ['sysinfo', 'sync-latency']));
    events.push(cell(n, 'sysinfo', 'passed'));
    events.push(
      n === 't7'
        ? cell(n, 'sync-latency', 'error', [], { errorCode: 'PROBE_CRASHED', reason: 'cudaprobe crashed (SIGSEGV)' })
        : cell(n, 'sync-latency', 'passed'),
    );
  }
  events.push(runEnd);
  return events;
}

function render(events: RunEvent[], verbose = false): string[] {
  const writes: string[] = [];
  const r = consoleReporter({ color: false, verbose, out: { write: (t: string) => writes.push(t) } });
  for (const e of events) r.onEvent!(e);
  r.onEnd(summarize(events), { runDir: 'runs/x', eventsFile: 'runs/x/events.jsonl', strict: false });
  return writes.join('').split('\n');
}

describe(`the console above ${COLLAPSE_ABOVE} targets`, () => {
  it('lists the problem as it comes and progress at each tenth, and at the end only the target with a problem', () => {
    const lines = render(fleet(200));
    const text = lines.join('\n');
    expect(text).toContain(
      '200 targets: only problems are listed as they come, and progress at each tenth of the cells (--verbose lists every target and cell)',
    );
    expect(lines.filter((l) => l.includes('▶'))).toEqual([]);
    expect(lines.filter((l) => /^ {2}\S \[\d+\/400\] t\d+\//.test(l))).toEqual([
      expect.stringMatching(/^ {2}✗ \[16\/400\] t7\/sync-latency error in 120 ms: PROBE_CRASHED: cudaprobe crashed/),
    ]);
    const progress = lines.filter((l) => /^ {2}\[\d+\/400\] cells done in /.test(l));
    expect(progress.map((l) => Number(/\[(\d+)\//.exec(l)![1]))).toEqual([40, 80, 120, 160, 200, 240, 280, 320, 360, 400]);
    expect(progress.at(-1)).toMatch(/, 1 with a problem$/);
    // The table: the header, its rule, t7's row; the others counted.
    const table = lines.slice(lines.findIndex((l) => l.startsWith('target ')));
    expect(table[2]).toMatch(/^t7 /);
    expect(table[3]).toBe(
      '199 more targets with no problem (every cell passed or skipped, no expectation failed) not listed; --verbose lists them',
    );
    expect(lines.length).toBeLessThan(60);
  });

  it('--verbose lists every target and cell', () => {
    const lines = render(fleet(200), true);
    expect(lines.filter((l) => l.startsWith('▶'))).toHaveLength(200);
    expect(lines.filter((l) => /^ {2}\S \[\d+\/400\] /.test(l))).toHaveLength(400);
    expect(lines.join('\n')).not.toContain('more targets with no problem');
  });

  it(`lists everything at ${COLLAPSE_ABOVE} targets and fewer`, () => {
    const lines = render(fleet(COLLAPSE_ABOVE));
    expect(lines.filter((l) => l.startsWith('▶'))).toHaveLength(COLLAPSE_ABOVE);
    expect(lines.join('\n')).not.toContain('cells done in');
  });
});
