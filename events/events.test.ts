import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../test/cli.ts';
import { cell, runEnd, runStart, targetStart } from '../test/events-fixture.ts';
import { repoRoot, tempDir } from '../test/helpers.ts';
import { EventLog } from '../run/event-log.ts';
import { eventText, lacksSamples, readEventLog, readEventLogLines, sampleCount, type CellEndEvent } from './events.ts';

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

  it('leaves the samples out of the cell-ends of plain lines when asked, and counts them; a line with blanks keeps them', () => {
    const file = path.join(tempDir(), 'events.jsonl');
    const samples = [1, 2, 3].map((i) => ({
      schema: 'cudaprobe/1' as const,
      probe: 'p',
      type: 'sample' as const,
      phase: `ph${i}`,
      readings: { x: i },
    }));
    const metric = { schema: 'cudaprobe/1' as const, probe: 'p', type: 'metric' as const, name: 'm', value: 1, unit: 'ms' };
    const end = JSON.stringify(cell('a', 'p', 'passed', [samples[0]!, metric, ...samples.slice(1)]));
    writeFileSync(file, [JSON.stringify(runStart()), end, ` ${end}`, ''].join('\n'));
    const [, plain, blanks] = readEventLogLines(file, { leaveOutSamples: true }).events as [unknown, CellEndEvent, CellEndEvent];
    expect(plain.records).toEqual([metric]);
    expect(blanks.records).toHaveLength(4);
    expect([sampleCount(plain), sampleCount(blanks)]).toEqual([3, 3]);
    expect([lacksSamples(plain), lacksSamples(blanks)]).toEqual([true, false]);
    // Not asked: every record, as readEventLog gives them.
    expect((readEventLogLines(file).events[1] as CellEndEvent).records).toHaveLength(4);
  });

  it("writes a cell's samples on a line before its cell-end; reads them back into it, or leaves them unread and counted", () => {
    const file = path.join(tempDir(), 'events.jsonl');
    const sample = (phase: string) => ({ schema: 'cudaprobe/1' as const, probe: 'p', type: 'sample' as const, phase, readings: { x: 1 } });
    const metric = { schema: 'cudaprobe/1' as const, probe: 'p', type: 'metric' as const, name: 'm', value: 1, unit: 'ms' };
    const log = new EventLog(file);
    const events = [
      runStart(),
      targetStart('a'),
      cell('a', 'p', 'passed', [sample('x'), metric, sample('y')]),
      cell('a', 'q', 'passed', [metric]),
      runEnd,
    ];
    for (const e of events) log.write(e);
    log.close();
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines[2]).toMatch(/^\{"type":"cell-samples","count":2,"cell":"a\/p","samples":\[\{[^\n]*"phase":"x"[^\n]*"phase":"y"/);
    expect(JSON.parse(lines[3]!)).toMatchObject({ type: 'cell-end', cell: 'a/p', records: [metric] });
    // Read back: the run's own events (their records put in the log's order when written: samples last).
    expect((events[2] as CellEndEvent).records).toEqual([metric, sample('x'), sample('y')]);
    expect(readEventLog(file)).toEqual(events);
    // Without samples: the samples line is not parsed, the cell counts them, its span covers both lines.
    const lean = readEventLogLines(file, { leaveOutSamples: true });
    const cellEnd = lean.events[2] as CellEndEvent;
    expect([cellEnd.records, sampleCount(cellEnd), lacksSamples(cellEnd)]).toEqual([[metric], 2, true]);
    const text = readFileSync(file);
    expect(text.toString('utf8', lean.spans[2]!.start, lean.spans[2]!.end)).toBe(`${lines[2]}\n${lines[3]}`);
  });

  it('keeps the samples, read after all, of a cell whose two lines cannot be copied as they are (blanks, CRLF)', () => {
    const file = path.join(tempDir(), 'events.jsonl');
    const sample = { schema: 'cudaprobe/1' as const, probe: 'p', type: 'sample' as const, phase: 'x', readings: { x: 1 } };
    const [samplesLine, endLine] = eventText(cell('a', 'p', 'passed', [sample]))
      .trimEnd()
      .split('\n') as [string, string];
    for (const [first, second] of [
      [`${samplesLine}\n`, ` ${endLine}\n`],
      [`${samplesLine}\r\n`, `${endLine}\n`],
    ]) {
      writeFileSync(file, `${JSON.stringify(runStart())}\n${first}${second}`);
      const e = readEventLogLines(file, { leaveOutSamples: true }).events[1] as CellEndEvent;
      expect([e.records, lacksSamples(e)]).toEqual([[sample], false]);
    }
  });

  it('drops a samples line without its cell-end at the end (killed between the two), refuses one followed by another event', () => {
    const file = path.join(tempDir(), 'events.jsonl');
    const head = [JSON.stringify(runStart()), JSON.stringify(targetStart('a'))];
    const samples = JSON.stringify({ type: 'cell-samples', count: 1, cell: 'a/p', samples: [{ type: 'sample' }] });
    writeFileSync(file, [...head, samples, ''].join('\n'));
    for (const leaveOutSamples of [false, true])
      expect(readEventLogLines(file, { leaveOutSamples }).events.map((e) => e.type)).toEqual(['run-start', 'target-start']);
    writeFileSync(file, [...head, samples, JSON.stringify(runEnd), ''].join('\n'));
    for (const leaveOutSamples of [false, true])
      expect(() => readEventLogLines(file, { leaveOutSamples })).toThrow(
        expect.objectContaining({
          code: 'EVENTS_INVALID',
          message: `${file}:3: the samples of cell a/p are not followed by its cell-end (line 4 is a run-end)`,
        }),
      );
  });

  it('refuses a newer schema with a clear message', () => {
    const file = path.join(tempDir(), 'events.jsonl');
    writeFileSync(file, `${JSON.stringify({ ...runStart(), schemaVersion: 3, version: '9.0.0' })}\n`);
    expect(() => readEventLog(file)).toThrow(/schema 3 by cudamatrix 9\.0\.0; this cudamatrix reads schema 2 and older: upgrade/);
  });

  describe('a log whose first line is cut is said to be truncated or damaged at line 1, not "not an event log" (issue 33)', () => {
    // A real log: the committed H200 run's.
    const real = readFileSync(path.join(repoRoot, 'records', 'driver-580.159.04', 'h200-linux', 'events.jsonl'), 'utf8');
    const [first, ...rest] = real.split('\n');
    const truncated =
      /:1: the first line, the run's run-start event, is cut short or damaged: the log is truncated or damaged at line 1\b.*take events\.jsonl again/;
    it.each([
      ['its start cut off', `${first!.slice(37)}\n${rest.join('\n')}`],
      ['its end cut off, the other lines whole', `${first!.slice(0, 120)}\n${rest.join('\n')}`],
      ['the file cut within its first line', first!.slice(0, 200)],
    ])('line 1 with %s', (_what, text) => {
      const file = path.join(tempDir(), 'events.jsonl');
      writeFileSync(file, text);
      expect(() => readEventLog(file)).toThrow(
        expect.objectContaining({ code: 'EVENTS_INVALID', message: expect.stringMatching(truncated) }),
      );
      expect(() => readEventLog(file)).not.toThrow(/not a cudamatrix event log/);
    });

    it('record and merge, given a log with its first line cut, say the same (record read it as a record)', async () => {
      const dir = tempDir();
      const file = path.join(dir, 'events.jsonl');
      writeFileSync(file, `${first!.slice(37)}\n${rest.join('\n')}`);
      for (const args of [
        ['record', file, '--records-dir', path.join(dir, 'records')],
        ['merge', file, '--results-dir', path.join(dir, 'runs')],
      ]) {
        const result = await runCli(args);
        expect(result.stderr, args[0]).toMatch(
          new RegExp(`^error \\[EVENTS_INVALID\\]: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}${truncated.source}`),
        );
        expect(result.code, args[0]).toBe(2);
      }
    }, 60_000);

    it('a log without its first line: its beginning is missing', () => {
      const file = path.join(tempDir(), 'events.jsonl');
      writeFileSync(file, rest.join('\n'));
      expect(() => readEventLog(file)).toThrow(
        /:1: the log starts with a target-start event, not with the run's run-start: its beginning is missing \(truncated or damaged\)/,
      );
    });

    it.each([
      ['JSON of another kind', '{"hello":1}\n'],
      ['a YAML file', 'version: 1\ntargets:\n  - name: here\n'],
      ['an empty file', ''],
    ])('%s is not a cudamatrix event log', (_what, text) => {
      const file = path.join(tempDir(), 'events.jsonl');
      writeFileSync(file, text);
      expect(() => readEventLog(file)).toThrow(
        expect.objectContaining({ code: 'EVENTS_INVALID', message: expect.stringContaining(`${file} is not a cudamatrix event log`) }),
      );
    });
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
