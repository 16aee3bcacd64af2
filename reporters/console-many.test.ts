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
      names.flatMap((name) => [`${name}/sysinfo`, `${name}/sync-latency`]),
    ),
  ];
  for (const name of names) {
    events.push(targetStart(name, [], 'auto', ['sysinfo', 'sync-latency']));
    events.push(cell(name, 'sysinfo', 'passed'));
    events.push(
      name === 't7'
        ? cell(name, 'sync-latency', 'error', [], { errorCode: 'PROBE_CRASHED', reason: 'cudaprobe crashed (SIGSEGV)' })
        : cell(name, 'sync-latency', 'passed'),
    );
  }
  events.push(runEnd);
  return events;
}

function render(events: RunEvent[], verbose = false): string[] {
  const writes: string[] = [];
  const reporter = consoleReporter({ color: false, verbose, out: { write: (chunk: string) => writes.push(chunk) } });
  for (const e of events) reporter.onEvent!(e);
  reporter.onEnd(summarize(events), { runDir: 'runs/x', eventsFile: 'runs/x/events.jsonl', strict: false });
  return writes.join('').split('\n');
}

describe(`the console above ${COLLAPSE_ABOVE} targets`, () => {
  it('lists the problem as it comes and progress at each tenth, and at the end only the target with a problem', () => {
    const lines = render(fleet(200));
    const text = lines.join('\n');
    expect(text).toContain(
      '200 targets: only problems are listed as they come, and progress at each tenth of the cells (--verbose lists every target and cell)',
    );
    expect(lines.filter((line) => line.includes('▶'))).toEqual([]);
    expect(lines.filter((line) => /^ {2}\S \[\d+\/400\] t\d+\//.test(line))).toEqual([
      expect.stringMatching(/^ {2}✗ \[16\/400\] t7\/sync-latency error in 120 ms: PROBE_CRASHED: cudaprobe crashed/),
    ]);
    const progress = lines.filter((line) => /^ {2}\[\d+\/400\] cells done in /.test(line));
    expect(progress.map((line) => Number(/\[(\d+)\//.exec(line)![1]))).toEqual([40, 80, 120, 160, 200, 240, 280, 320, 360, 400]);
    expect(progress.at(-1)).toMatch(/, 1 with a problem$/);
    // The table: the header, its rule, t7's row; the others counted.
    const table = lines.slice(lines.findIndex((line) => line.startsWith('target ')));
    expect(table[2]).toMatch(/^t7 /);
    expect(table[3]).toBe(
      '199 more targets with no problem (every cell passed or skipped, no expectation failed) not listed; --verbose lists them',
    );
    expect(lines.length).toBeLessThan(60);
  });

  it('--verbose lists every target and cell', () => {
    const lines = render(fleet(200), true);
    expect(lines.filter((line) => line.startsWith('▶'))).toHaveLength(200);
    expect(lines.filter((line) => /^ {2}\S \[\d+\/400\] /.test(line))).toHaveLength(400);
    expect(lines.join('\n')).not.toContain('more targets with no problem');
  });

  it(`lists everything at ${COLLAPSE_ABOVE} targets and fewer`, () => {
    const lines = render(fleet(COLLAPSE_ABOVE));
    expect(lines.filter((line) => line.startsWith('▶'))).toHaveLength(COLLAPSE_ABOVE);
    expect(lines.join('\n')).not.toContain('cells done in');
  });
});
