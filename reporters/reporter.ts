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
    private readonly warn: (message: string) => void = (message) => process.stderr.write(`${message}\n`),
  ) {}

  event(event: RunEvent): void {
    for (const reporter of this.list) this.guard(reporter, () => reporter.onEvent?.(event));
  }

  /** A note to the person watching: through the reporters that show notes, else on stderr. */
  message(text: string): void {
    const shown = this.list.filter((reporter) => reporter.onMessage && !this.broken.has(reporter));
    if (shown.length === 0) return void this.warn(text);
    for (const reporter of shown) this.guard(reporter, () => reporter.onMessage!(text));
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
    if (!this.list.some((reporter) => reporter.onMessage && !this.broken.has(reporter)))
      for (const unwritten of context.unwritten ?? []) this.warn(`error: ${unwritten}`);
    const files = this.list.filter((reporter) => !reporter.onMessage);
    for (const reporter of [...files, ...this.list.filter((candidate) => candidate.onMessage)]) {
      if (this.broken.has(reporter)) continue;
      try {
        await reporter.onEnd?.(summary, { ...context, unwritten: this.unwritten });
      } catch (error) {
        this.fail(reporter, error, files.includes(reporter));
      }
    }
    return this.unwritten;
  }

  private guard(reporter: Reporter, fn: () => void): void {
    if (this.broken.has(reporter)) return;
    try {
      fn();
    } catch (error) {
      this.fail(reporter, error);
    }
  }

  private fail(reporter: Reporter, error: unknown, writesFile = false): void {
    this.broken.add(reporter);
    if (writesFile || (error instanceof CudamatrixError && error.code === 'OUTPUT_FAILED')) {
      this.unwritten.push(describeError(error instanceof CudamatrixError ? error.message : error));
      this.warn(`error: reporter "${reporter.name}": ${describeError(error instanceof CudamatrixError ? error.message : error)}`);
      return;
    }
    this.warn(`warning: reporter "${reporter.name}" failed and was switched off: ${describeError(error)}`);
  }
}
