/**
 * Reporters with optional hooks. Each hook call is isolated: a reporter that throws is reported
 * once and skipped from then on, and the run and the other reporters carry on. A file that
 * could not be written (a full disk) is listed in `unwritten`, which makes the run exit 6.
 */
import { CudamatrixError, describeError } from '../core/errors.ts';
import type { RunEvent } from '../events/events.ts';
import { withEventsFile, type RunSummary } from '../verdicts/verdicts.ts';

export interface RunContext {
  runDir: string;
  eventsFile: string;
  strict: boolean;
  /** The command's exit status where more than the summary decides it (gha merge: a record clash, --fail-on-change). */
  exitCode?: number;
  /** The outputs that could not be written (each naming the file and the cause): exit 6. */
  unwritten?: readonly string[];
}

export interface Reporter {
  name: string;
  onEvent?(event: RunEvent): void;
  /** A note for the person watching (a compile starts, the run is interrupted). */
  onMessage?(text: string): void;
  onEnd?(summary: RunSummary, context: RunContext): void | Promise<void>;
}

/** A reporter whose output is written when onEnd returns (the console, JSON, JUnit): a caller may read it at once. */
export interface SyncReporter extends Reporter {
  onEnd(summary: RunSummary, context: RunContext): void;
}

export class Reporters {
  /** Reporters switched off after a failure (by instance: two JUnit files are two reporters). */
  private readonly broken = new Set<Reporter>();
  /** The outputs that could not be written, each naming the file and the cause. */
  readonly unwritten: string[] = [];

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

  /**
   * Ends the run in every reporter; the summary's verdicts name the event log (context.eventsFile).
   * The reporters that write files end first, so that those that show the run (the console, with
   * its exit status) know what could not be written (context.unwritten, with the caller's own).
   * Returns the outputs not written.
   */
  async end(summary: RunSummary, context: RunContext): Promise<readonly string[]> {
    summary = withEventsFile(summary, context.eventsFile);
    this.unwritten.push(...(context.unwritten ?? []));
    // The caller's own (the event log cut short) are said by the console; without one, here.
    if (!this.list.some((r) => r.onMessage && !this.broken.has(r))) for (const u of context.unwritten ?? []) this.warn(`error: ${u}`);
    const files = this.list.filter((r) => !r.onMessage);
    for (const r of [...files, ...this.list.filter((r) => r.onMessage)]) {
      if (this.broken.has(r)) continue;
      try {
        await r.onEnd?.(summary, { ...context, unwritten: this.unwritten });
      } catch (error) {
        this.fail(r, error, files.includes(r));
      }
    }
    return this.unwritten;
  }

  private guard(r: Reporter, fn: () => void): void {
    if (this.broken.has(r)) return;
    try {
      fn();
    } catch (error) {
      this.fail(r, error);
    }
  }

  private fail(r: Reporter, error: unknown, writesFile = false): void {
    this.broken.add(r);
    if (writesFile || (error instanceof CudamatrixError && error.code === 'OUTPUT_FAILED')) {
      this.unwritten.push(describeError(error instanceof CudamatrixError ? error.message : error));
      this.warn(`error: reporter "${r.name}": ${describeError(error instanceof CudamatrixError ? error.message : error)}`);
      return;
    }
    this.warn(`warning: reporter "${r.name}" failed and was switched off: ${describeError(error)}`);
  }
}
