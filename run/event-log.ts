/**
 * The writer of the event log: one synchronous write per event, as it happens, so that a crash
 * loses nothing already measured.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import type { RunEvent } from '../events/events.ts';

/** Appends events to a file, one synchronous write each (a crash loses at most the event being written). */
export class EventLog {
  private fd: number | undefined;
  readonly events: RunEvent[] = [];

  constructor(readonly file: string) {
    this.fd = openSync(file, 'a');
  }

  write(event: RunEvent): void {
    this.events.push(event);
    if (this.fd === undefined) return;
    writeSync(this.fd, `${JSON.stringify(event)}\n`);
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
