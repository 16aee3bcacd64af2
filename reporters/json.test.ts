/**
 * The JSON summary. Every test of a rendered log runs twice (test/live-and-merged.ts): on the log
 * as a run wrote it, and on the same log cut into shard logs and merged by cudamatrix merge; and
 * a real run on this machine, live and as two shards merged. Both must give the same JSON, run
 * ids, times, durations and folders aside.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { readEventLog, readEventLogLines, type RunEvent } from '../events/events.ts';
import { cell, runEnd, runStart, targetStart } from '../test/events-fixture.ts';
import { factIn, h200EventsFile, h200WithLinuxExpectations, metricsIn, pinnedH2dAtLeast40 } from '../test/h200-fixture.ts';
import { tempDir } from '../test/helpers.ts';
import { normalise, runIdOf, twice } from '../test/live-and-merged.ts';
import { summarize } from '../verdicts/verdicts.ts';
import { jsonReporter, summaryJson, summaryJsonParts } from './json.ts';

const why = 'WSL distribution "Legacy" runs under WSL 1, which has no GPU: "wsl.exe --set-version Legacy 2"';
const skippedAndDown: RunEvent[] = [
  runStart(),
  targetStart('wsl1'),
  { type: 'target-error' as const, target: 'wsl1', time: '', code: 'WSL_VERSION_1', message: why },
  cell('wsl1', 'sysinfo', 'skipped', [], { reason: why, errorCode: 'WSL_VERSION_1', durationMs: 0 }),
  targetStart('down'),
  { type: 'target-error' as const, target: 'down', time: '', code: 'TARGET_UNREACHABLE', message: 'connect ECONNREFUSED' },
  cell('down', 'sysinfo', 'error', [], { reason: 'connect ECONNREFUSED', errorCode: 'TARGET_UNREACHABLE' }),
  runEnd,
];
const h200Failing = h200WithLinuxExpectations([
  pinnedH2dAtLeast40,
  { fact: 'pinned-vram.counts_as_vram', equals: true, why: 'the design card says so (C1)' },
]);

describe.each(twice(skippedAndDown))('JSON summary (%s)', (_source, events) => {
  it('gives a target that cannot run probes by its nature as skipped, with the reason, and not as an error', () => {
    const json = JSON.parse(summaryJson(summarize(events))) as {
      counts: { cells: Record<string, number> };
      targets: Record<string, unknown>[];
    };
    expect(json.counts.cells).toEqual({ skipped: 1, error: 1 });
    expect(json.targets[0]).toMatchObject({
      name: 'wsl1',
      error: null,
      skipped: { code: 'WSL_VERSION_1', reason: why },
      cells: [{ status: 'skipped', reason: why }],
    });
    expect(json.targets[1]).toMatchObject({ name: 'down', error: { code: 'TARGET_UNREACHABLE' }, skipped: null });
  });
});

describe.each(twice(h200Failing))('JSON summary: known-bad drivers (%s)', (_source, events) => {
  it("lists per target the known-bad registry's entries its driver matches, as {id, source}; [] for a target without a driver", () => {
    const json = JSON.parse(summaryJson(summarize(events))) as { targets: { knownBad: { id: string; source: string }[] }[] };
    // The H200 record: Linux, driver 580.159.04, in the range of the r580 host-register entry.
    expect(json.targets[0]!.knownBad).toContainEqual({
      id: 'r580-host-register-512gib',
      source: 'https://github.com/xcena-dev/maru/pull/64',
    });
    const none = JSON.parse(summaryJson(summarize(skippedAndDown))) as { targets: { knownBad: unknown[] }[] };
    expect(none.targets.map((target) => target.knownBad)).toEqual([[], []]);
  });
});

describe('JSON summary text', () => {
  it("is JSON.stringify's text on one line and a newline, for several targets as for none (written target by target)", () => {
    for (const events of [skippedAndDown, h200Failing, [runStart(), runEnd]]) {
      const text = summaryJson(summarize(events));
      expect(text).toBe(`${JSON.stringify(JSON.parse(text))}\n`);
      expect(text).toBe([...summaryJsonParts(summarize(events))].join(''));
    }
    expect(
      (JSON.parse(summaryJson(summarize(skippedAndDown))) as { targets: { name: string }[] }).targets.map((target) => target.name),
    ).toEqual(['wsl1', 'down']);
  });
});

describe.each(twice(h200Failing))('JSON summary: the cells (%s)', (_source, events) => {
  it('gives each planned cell its records but the samples, which it counts (every one is in the event log)', () => {
    type C = { cell: string; records: { type: string }[]; samples: number };
    const json = JSON.parse(summaryJson(summarize(events))) as { targets: { cells: C[] }[] };
    const ends = events.flatMap((e) => (e.type === 'cell-end' && e.planned ? [e] : []));
    const cells = json.targets[0]!.cells;
    expect(cells.map((summaryCell) => summaryCell.cell)).toEqual(ends.map((e) => e.cell));
    let samples = 0;
    for (const [i, summaryCell] of cells.entries()) {
      const { type: _type, ...end } = ends[i]!;
      const kept = end.records.filter((record) => record.type !== 'sample');
      expect(summaryCell, summaryCell.cell).toEqual({ ...end, records: kept, samples: end.records.length - kept.length });
      // Where the records were, the samples' count right after them.
      expect(Object.keys(summaryCell)).toEqual(Object.keys(end).flatMap((k) => (k === 'records' ? ['records', 'samples'] : [k])));
      samples += summaryCell.samples;
    }
    // The H200 log has samples (of pinned-vram's phases, say): what the summary leaves out.
    expect(samples).toBeGreaterThan(0);
    expect(samples).toBe(ends.flatMap((e) => e.records).filter((record) => record.type === 'sample').length);
  });
});

describe('JSON summary of a log read without its samples (as cudamatrix merge reads them)', () => {
  it('is the summary of the whole log: each cell counts the samples left out', () => {
    const lean = readEventLogLines(h200EventsFile, { leaveOutSamples: true }).events;
    expect(lean.some((e) => e.type === 'cell-end' && e.records.some((record) => record.type === 'sample'))).toBe(false);
    expect(summaryJson(summarize(lean))).toBe(summaryJson(summarize(readEventLog(h200EventsFile))));
  });
});

describe.each(twice(h200Failing))('JSON summary: the evidence per verdict (%s)', (_source, events) => {
  it("gives each verdict its samples within and outside the bounds, or the fact's evidence, its why and the event log", () => {
    const dir = tempDir();
    const eventsFile = path.join(dir, 'events.jsonl');
    jsonReporter((runDir) => path.join(runDir, 'summary.json')).onEnd(summarize(events), { runDir: dir, eventsFile, strict: false });
    type V = { title: string; status: string; why?: string; eventsFile?: string; evidence?: Record<string, unknown> };
    const json = JSON.parse(readFileSync(path.join(dir, 'summary.json'), 'utf8')) as { events: string; targets: { verdicts: V[] }[] };
    expect(json.events).toBe(eventsFile);
    const verdicts = json.targets[0]!.verdicts;
    const bandwidth = verdicts.find((verdict) => verdict.title.startsWith('transfer-bandwidth.bandwidth_gbps'))!;
    const [small, ...large] = metricsIn(events, 'transfer-bandwidth.bandwidth_gbps', { direction: 'h2d', memory: 'pinned' });
    expect(bandwidth).toMatchObject({
      status: 'failed',
      why: pinnedH2dAtLeast40.why,
      eventsFile,
      evidence: {
        kind: 'metric',
        bounds: { low: 40, high: null, unit: 'GB/s' },
        outside: [{ attrs: { direction: 'h2d', memory: 'pinned', size_bytes: 1048576 }, value: small!.value, unit: 'GB/s' }],
        within: large.map((sample) => ({ attrs: sample.attrs, value: sample.value, unit: 'GB/s' })),
      },
    });
    const fact = verdicts.find((verdict) => verdict.title === 'pinned-vram.counts_as_vram == true')!;
    expect(fact.evidence).toMatchObject({
      kind: 'fact',
      value: false,
      evidence: factIn(events, 'pinned-vram.counts_as_vram').evidence,
      summary: expect.stringMatching(/^NVML process memory \+0 B for 4 GiB \(the deciding source\)/),
    });
    // Every judged verdict carries evidence and the log; the passed ones too.
    for (const verdict of verdicts) expect(verdict, verdict.title).toMatchObject({ eventsFile, evidence: expect.any(Object) });
  });
});

describe('JSON summary: the same from the live log and from merged shards', () => {
  it.each([
    ['a skipped and an unreachable target', skippedAndDown],
    ['the H200 run with failing expectations', h200Failing],
  ])('%s', (_what, events) => {
    const [[, live], [, merged]] = twice(events);
    const json = (e: RunEvent[]) => normalise(summaryJson(summarize(e, { eventsFile: 'runs/x/events.jsonl' })), { runId: runIdOf(e) });
    expect(json(merged)).toBe(json(live));
    expect(JSON.parse(summaryJson(summarize(merged)))).toMatchObject({ runId: runIdOf(merged), shard: null });
  });
});
