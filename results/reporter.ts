/**
 * Reporters with optional hooks. Each hook call is isolated: a reporter that throws is reported
 * once and skipped from then on, and the run and the other reporters carry on.
 */
import { describeError } from '../core/errors.ts';
import type { RunEvent } from '../events/events.ts';
import { withEventsFile, type RunSummary } from './verdicts.ts';

export interface RunContext {
  runDir: string;
  eventsFile: string;
  strict: boolean;
  /** The command's exit status where more than the summary decides it (gha merge: a record clash, --fail-on-change). */
  exitCode?: number;
}

export interface Reporter {
  name: string;
  onEvent?(event: RunEvent): void;
  /** A note for the person watching (a compile starts, the run is interrupted). */
  onMessage?(text: string): void;
  onEnd?(summary: RunSummary, context: RunContext): void | Promise<void>;
}

export class Reporters {
  /** Reporters switched off after a failure (by instance: two JUnit files are two reporters). */
  private readonly broken = new Set<Reporter>();

  constructor(
    private readonly list: Reporter[],
    private readonly warn: (message: string) => void = (m) => process.stderr.write(`${m}\n`),
  ) {}

  event(event: RunEvent): void {
    for (const r of this.list) this.guard(r, () => r.onEvent?.(event));
  }

  /** A note to the person watching: through the reporters that show notes, else on stderr. */
  message(text: string): void {
    const shown = this.list.filter((r) => r.onMessage && !this.broken.has(r));
    if (shown.length === 0) return void this.warn(text);
    for (const r of shown) this.guard(r, () => r.onMessage!(text));
  }

  /** Ends the run in every reporter; the summary's verdicts name the event log (context.eventsFile). */
  async end(summary: RunSummary, context: RunContext): Promise<void> {
    summary = withEventsFile(summary, context.eventsFile);
    for (const r of this.list) {
      if (this.broken.has(r)) continue;
      try {
        await r.onEnd?.(summary, context);
      } catch (error) {
        this.fail(r, error);
      }
    }
  }

  private guard(r: Reporter, fn: () => void): void {
    if (this.broken.has(r)) return;
    try {
      fn();
    } catch (error) {
      this.fail(r, error);
    }
  }

  private fail(r: Reporter, error: unknown): void {
    this.broken.add(r);
    this.warn(`warning: reporter "${r.name}" failed and was switched off: ${describeError(error)}`);
  }
}
