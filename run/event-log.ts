/**
 * The writer of the event log: one synchronous write per event, as it happens, so that a crash
 * loses nothing already measured.
 */
import { closeSync, fstatSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import { outputError } from '../core/fs.ts';
import type { CudamatrixError } from '../core/errors.ts';
import { eventText, type RunEvent } from '../events/events.ts';

/**
 * Appends events to a file, one synchronous write each (a crash loses at most the event being
 * written). A write that fails (a full disk) is cut back to the last whole line, and the log
 * stops there: `failure` says so, and the run goes on with the events in memory.
 */
export class EventLog {
  private fd: number | undefined;
  /** Bytes of whole lines in the file. */
  private size: number;
  readonly events: RunEvent[] = [];
  /** Why the log stopped being written (OUTPUT_FAILED), if it did. */
  failure: CudamatrixError | undefined;

  constructor(readonly file: string) {
    try {
      this.fd = openSync(file, 'a');
    } catch (error) {
      throw outputError(file, error);
    }
    this.size = fstatSync(this.fd).size;
  }

  write(event: RunEvent): void {
    this.events.push(event);
    if (this.fd === undefined) return;
    const line = Buffer.from(eventText(event));
    try {
      for (let done = 0; done < line.length;) done += writeSync(this.fd, line, done);
      this.size += line.length;
    } catch (error) {
      this.stop(error);
    }
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  /** Cuts the file back to its whole lines (a reader never meets half an event) and writes no more. */
  private stop(error: unknown): void {
    const whole = this.events.length - 1;
    try {
      ftruncateSync(this.fd!, this.size);
    } catch {
      // Truncating frees space, so it does not fail for a full disk; if it does, readers still refuse a cut line by name.
    }
    this.close();
    this.failure = outputError(
      this.file,
      error,
      `it holds the first ${whole} event${whole === 1 ? '' : 's'} of the run, each whole, and no run-end`,
    );
  }
}
