/**
 * Facts that exist on another platform only (the watchdog's Windows TDR registry values) are said
 * once on Linux, as not applicable, not as a list of nulls with registry reasons; and a probe that
 * was skipped is said once, in the skipped lines, not also with its not-applicable nulls (issue 33).
 * On the committed H200 run (Linux, watchdog passed) and on a real run here (no driver: skipped).
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEventLog, type RunEvent } from '../events/events.ts';
import { runCli } from '../test/cli.ts';
import { repoRoot, tempDir } from '../test/helpers.ts';
import { noDriverHere } from '../test/live-and-merged.ts';
import { summarize } from '../verdicts/verdicts.ts';
import { consoleReporter } from './console.ts';

function render(events: RunEvent[]): string {
  const writes: string[] = [];
  const reporter = consoleReporter({ color: false, out: { write: (chunk: string) => writes.push(chunk) } });
  for (const e of events) reporter.onEvent!(e);
  reporter.onEnd(summarize(events), { runDir: 'runs/x', eventsFile: 'runs/x/events.jsonl', strict: false });
  return writes.join('');
}

describe('console: facts of another platform', () => {
  it('the H200 run (Linux): the watchdog shows its one Linux fact, and the TDR values once as not applicable', () => {
    const log = path.join(repoRoot, 'records', 'driver-580.159.04', 'h200-linux-2026-12-02-issue24', 'events.jsonl');
    const events = readEventLog(log);
    const watchdog = events.find((e) => e.type === 'cell-end' && e.probe === 'watchdog');
    expect(watchdog && watchdog.type === 'cell-end' && watchdog.status).toBe('passed');
    const text = render(events);
    const section = text.slice(text.indexOf('  watchdog  Kernel watchdog'), text.indexOf('  runtime-init '));
    expect(section).toMatch(/^ {4}watchdog\.kernel_exec_timeout +false$/m);
    expect(section).toMatch(/^ {4}watchdog\.tdr_delay_s, tdr_level +not applicable on linux \(Windows only\)$/m);
    expect(section).not.toMatch(/null|registry/i);
    expect(text).not.toMatch(/^ {2}skipped.*\bwatchdog\b/m);
  });

  it.runIf(noDriverHere)(
    'a real run here without a driver: the skipped watchdog is said once, in the skipped line, with no nulls',
    async () => {
      const dir = tempDir('cm-watchdog-');
      const result = await runCli(['run', '-p', 'watchdog', '--results-dir', path.join(dir, 'runs')], { cwd: dir });
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stdout).toMatch(/^ {2}skipped: watchdog — no NVIDIA driver found/m);
      expect(result.stdout).not.toContain('Kernel watchdog');
      expect(result.stdout).not.toMatch(/tdr_|TdrDelay|TdrLevel/);
      expect(result.code).toBe(0);
    },
  );
});
