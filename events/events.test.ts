import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cell, runEnd, runStart, targetStart } from '../test/events-fixture.ts';
import { tempDir } from '../test/helpers.ts';
import { EventLog } from '../run/event-log.ts';
import { readEventLog } from './events.ts';

describe('event log', () => {
  it('writes one event a line, readable back, header first', () => {
    const file = path.join(tempDir(), 'events.jsonl');
    const log = new EventLog(file);
    const events = [runStart(), targetStart('a'), cell('a', 'sysinfo', 'passed'), runEnd];
    for (const e of events) log.write(e);
    log.close();
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(4);
    expect(readEventLog(file)).toEqual(events);
  });

  it('keeps everything before a line cut off by a crash', () => {
    const file = path.join(tempDir(), 'events.jsonl');
    writeFileSync(file, `${JSON.stringify(runStart())}\n${JSON.stringify(targetStart('a'))}\n{"type":"cell-e`);
    expect(readEventLog(file).map((e) => e.type)).toEqual(['run-start', 'target-start']);
  });

  it('refuses a newer schema with a clear message', () => {
    const file = path.join(tempDir(), 'events.jsonl');
    writeFileSync(file, `${JSON.stringify({ ...runStart(), schemaVersion: 2, version: '9.0.0' })}\n`);
    expect(() => readEventLog(file)).toThrow(/schema 2 by cudamatrix 9\.0\.0; this cudamatrix reads schema 1 and older: upgrade/);
  });

  it.each([
    ['not a log', '{"hello":1}\n', 'EVENTS_INVALID'],
    ['garbage in the middle', `${JSON.stringify(runStart())}\nnot json\n${JSON.stringify(runEnd)}\n`, 'EVENTS_INVALID'],
  ])('refuses %s', (_what, text, code) => {
    const file = path.join(tempDir(), 'events.jsonl');
    writeFileSync(file, text);
    expect(() => readEventLog(file)).toThrow(expect.objectContaining({ code }));
  });
});
