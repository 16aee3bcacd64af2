/**
 * cudamatrix merge: shards merged into one run render as the live run of the same cells; what is
 * refused (newer schema, duplicates, overlaps, other versions or matrices) names both files; an
 * interrupted shard makes the merged run interrupted; and the CLI writes the run folder and exits
 * with the merged run's status.
 */
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { EVENTS_SCHEMA_VERSION, eventText, readEventLog, sampleCount, type RunEvent, type RunStartEvent } from './events.ts';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../test/events-fixture.ts';
import { runCli } from '../test/cli.ts';
import { h200Events } from '../test/h200-fixture.ts';
import { repoRoot, tempDir, validateJunit } from '../test/helpers.ts';
import { asShards, noDriverHere, normalise, REAL_RUNS_MATRIX, realRuns, type RunSource } from '../test/live-and-merged.ts';
import { mergeEventLogs, mergedRunId, readLogs, writeMergedRun, type LogInput, type MergedRunStart } from './merge.ts';
import { recordsFromEvents } from '../behaviour/behaviour-record.ts';
import { exitCodeOf, summarize } from '../verdicts/verdicts.ts';

const expectations = { linux: [{ fact: 'sysinfo.os_family', equals: 'linux' }] };

/** A shard log: its run-start (run id, shard, start), one passed sysinfo cell per target, and a run-end. */
function shardLog(
  file: string,
  targets: string[],
  options: {
    runId?: string;
    shard?: [number, number] | null;
    started?: string;
    finished?: string;
    interrupted?: boolean | null;
    version?: string;
    start?: Partial<RunStartEvent>;
  } = {},
): LogInput {
  const start: RunStartEvent = {
    ...runStart(
      expectations,
      targets.map((target) => `${target}/sysinfo`),
    ),
    runId: options.runId ?? `run-${file}`,
    shard: options.shard === null || options.shard === undefined ? null : { index: options.shard[0], total: options.shard[1] },
    started: options.started ?? '2026-11-29T12:00:00.000Z',
    version: options.version ?? '0.1.0',
    ...options.start,
  };
  const events: RunEvent[] = [start];
  for (const target of targets)
    events.push(targetStart(target), cell(target, 'sysinfo', 'passed', sysinfo({ environment: 'linux', os_family: 'linux' })));
  if (options.interrupted !== null)
    events.push({
      ...runEnd,
      finished: options.finished ?? '2026-11-29T12:00:02.000Z',
      interrupted: options.interrupted ?? false,
    } as RunEvent);
  return { file, events };
}

const targetsIn = (events: RunEvent[]) => [...new Set(events.flatMap((e) => ('target' in e ? [e.target] : [])))];

describe('merging event logs', () => {
  const firstShard = shardLog('a/events.jsonl', ['gpu-b', 'gpu-d'], {
    shard: [1, 2],
    started: '2026-11-29T12:00:05.000Z',
    finished: '2026-11-29T12:01:00.000Z',
  });
  const secondShard = shardLog('b/events.jsonl', ['gpu-a', 'gpu-c'], {
    shard: [2, 2],
    started: '2026-11-29T12:00:01.000Z',
    finished: '2026-11-29T12:00:30.000Z',
  });

  it('makes one run: shard null, the earliest start, the latest end, every cell, and where it came from', () => {
    const merged = mergeEventLogs([firstShard, secondShard]);
    const start = merged.events[0] as MergedRunStart;
    expect(start).toMatchObject({
      type: 'run-start',
      schemaVersion: 2,
      version: '0.1.0',
      shard: null,
      started: '2026-11-29T12:00:01.000Z',
      matrix: { file: 'test.yaml', expectations },
    });
    expect(start.runId).toBe(mergedRunId([firstShard, secondShard], '2026-11-29T12:00:01.000Z'));
    expect(start.runId).toMatch(/^2026-11-29T12-00-01-000Z-merged-[0-9a-f]{6}$/);
    expect(start.mergedFrom.map((source) => [source.file, source.shard?.index])).toEqual([
      ['a/events.jsonl', 1],
      ['b/events.jsonl', 2],
    ]);
    expect(merged.events.at(-1)).toEqual({ type: 'run-end', finished: '2026-11-29T12:01:00.000Z', durationMs: 59_000, interrupted: false });
    expect(merged.warnings).toEqual([]);
    const summary = summarize(merged.events);
    expect(summary.counts).toEqual({ cells: { passed: 4 }, verdicts: { passed: 4, failed: 0, skipped: 0, error: 0 } });
    expect(exitCodeOf(summary, { strict: false })).toBe(0);
  });

  it("keeps each log's order of targets, puts targets of different logs in name order, and does not depend on the order of the arguments", () => {
    const merged = mergeEventLogs([firstShard, secondShard]);
    // gpu-b before gpu-d (shard 1's order), the rest by name: no log says where gpu-a stood.
    expect(targetsIn(merged.events)).toEqual(['gpu-a', 'gpu-b', 'gpu-c', 'gpu-d']);
    expect((merged.events[0] as RunStartEvent).cells).toEqual(['gpu-a/sysinfo', 'gpu-b/sysinfo', 'gpu-c/sysinfo', 'gpu-d/sysinfo']);
    const backwards = shardLog('z/events.jsonl', ['zeta', 'alpha'], { shard: [1, 2] });
    const other = shardLog('y/events.jsonl', ['beta'], { shard: [2, 2] });
    // A log's own order wins over names: zeta before alpha, as that run wrote them.
    expect(targetsIn(mergeEventLogs([backwards, other]).events)).toEqual(['beta', 'zeta', 'alpha']);
    expect(mergeEventLogs([secondShard, firstShard]).events).toEqual(merged.events);
    // Each target's events stay together, in its log's order.
    const types = merged.events.filter((e) => 'target' in e && e.target === 'gpu-c').map((e) => e.type);
    expect(types).toEqual(['target-start', 'cell-end']);
  });

  it('places, round by round, the least of the targets each log names next, for many logs whose own orders differ', () => {
    // The order as described (the least of the chains' heads, then again), computed plainly.
    const expected = (chains: string[][]) => {
      const left = chains.map((chain) => [...chain]);
      const placed: string[] = [];
      while (left.some((chain) => chain.length)) {
        const next = left.flatMap((chain) => chain.slice(0, 1)).sort()[0]!;
        placed.push(next);
        for (const chain of left) if (chain[0] === next) chain.shift();
      }
      return placed;
    };
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const names = Array.from({ length: 120 }, (_, i) => `gpu-${Math.floor(random() * 1e6).toString(36)}-${i}`);
    const chains = Array.from({ length: 12 }, (_, chainIndex) => names.filter((_, i) => i % 12 === chainIndex).sort(() => random() - 0.5));
    const logs = chains.map((chain, chainIndex) => shardLog(`log-${chainIndex}/events.jsonl`, chain));
    const order = targetsIn(mergeEventLogs(logs).events);
    expect(order).toEqual(expected(chains));
    expect(order).not.toEqual([...names].sort());
    expect(targetsIn(mergeEventLogs([...logs].reverse()).events)).toEqual(order);
  });

  it('refuses, of several logs given twice, the first that has a copy, with its first copy', () => {
    const one = shardLog('one/events.jsonl', ['gpu-a'], { runId: 'run-1' });
    const two = shardLog('two/events.jsonl', ['gpu-b'], { runId: 'run-2', started: '2026-11-29T11:00:00.000Z' });
    const copy = (log: LogInput, file: string) => ({ file, events: log.events });
    // Ordered by start, then file: two-again, two-copy, two, then one and one-copy.
    expect(() =>
      mergeEventLogs([
        one,
        copy(one, 'one-copy/events.jsonl'),
        two,
        copy(two, 'two-copy/events.jsonl'),
        copy(two, 'two-again/events.jsonl'),
      ]),
    ).toThrow(/^two-again\/events\.jsonl and two-copy\/events\.jsonl are the same run \(run run-2, no shard\)/);
  });

  it('gives the same records as the single run (the H200 log, merged from shard 1/2 holding its one host and an empty 2/2)', () => {
    const merged = mergeEventLogs(asShards(h200Events)).events;
    const defaults = (h200Events[0] as RunStartEvent).matrix.expectations;
    const live = recordsFromEvents(h200Events, defaults);
    const fromMerged = recordsFromEvents(merged, defaults);
    expect(live).toHaveLength(1);
    // What differs is the run: its id (and the record id made from it).
    const strip = (record: (typeof live)[number]) => ({ ...record, id: '', observed: { ...record.observed, runId: '' } });
    expect(fromMerged.map(strip)).toEqual(live.map(strip));
    expect(fromMerged[0]!.observed.runId).toBe((merged[0] as RunStartEvent).runId);
    expect(summarize(merged).counts).toEqual(summarize(h200Events).counts);
  });

  it('marks the merged run interrupted when a shard was; a shard without a run-end (killed) leaves the merged log without one', () => {
    const stopped = shardLog('b/events.jsonl', ['gpu-a'], { shard: [2, 2], interrupted: true });
    const merged = mergeEventLogs([firstShard, stopped]);
    expect(merged.events.at(-1)).toMatchObject({ type: 'run-end', interrupted: true });
    expect(exitCodeOf(summarize(merged.events), { strict: false })).toBe(130);
    const killed = shardLog('k/events.jsonl', ['gpu-a'], { shard: [2, 2], interrupted: null });
    const k = mergeEventLogs([firstShard, killed]);
    expect(k.events.filter((e) => e.type === 'run-end')).toEqual([]);
    expect(targetsIn(k.events)).toEqual(['gpu-a', 'gpu-b', 'gpu-d']);
    expect(summarize(k.events).interrupted).toBe(true);
    expect(k.warnings).toEqual([
      'k/events.jsonl has no run-end (the run was killed, or the file cut short): what it did not finish is missing, and the merged log has no run-end either, so it counts as interrupted and is as incomplete as that log (record refuses it)',
    ]);
  });

  it('refuses the same log twice, and two logs of one run id and shard, naming both files', () => {
    const copy = { ...firstShard, file: 'copy/events.jsonl' };
    expect(() => mergeEventLogs([firstShard, copy])).toThrow(
      expect.objectContaining({
        code: 'MERGE_DUPLICATE',
        message:
          'a/events.jsonl and copy/events.jsonl are the same run (run run-a/events.jsonl, shard 1/2): one log and a copy of it; pass one of them',
      }),
    );
    const dir = tempDir();
    const file = path.join(dir, 'events.jsonl');
    writeFileSync(file, firstShard.events.map((e) => JSON.stringify(e)).join('\n'));
    expect(() => mergeEventLogs(readLogs([dir, file]))).toThrow(
      expect.objectContaining({
        code: 'MERGE_DUPLICATE',
        message: `${file} and ${file} are the same event log (run run-a/events.jsonl, shard 1/2), given twice; pass each log once`,
      }),
    );
  });

  it('refuses logs that planned the same cell, naming both files and the cells', () => {
    const again = shardLog('rerun/events.jsonl', ['gpu-c', 'gpu-e'], { shard: [2, 2], runId: 'rerun' });
    expect(() => mergeEventLogs([firstShard, secondShard, again])).toThrow(
      expect.objectContaining({
        code: 'MERGE_OVERLAP',
        message: expect.stringContaining(
          'rerun/events.jsonl (run rerun, shard 2/2) and b/events.jsonl (run run-b/events.jsonl, shard 2/2) both hold 1 cell: gpu-c/sysinfo.',
        ),
      }),
    );
  });

  it("refuses a newer event schema with readEventLog's message, which names the file", () => {
    const dir = tempDir();
    const file = path.join(dir, 'events.jsonl');
    writeFileSync(file, `${JSON.stringify({ ...firstShard.events[0], schemaVersion: 3, version: '9.0.0' })}\n`);
    expect(() => readLogs([dir])).toThrow(
      expect.objectContaining({
        code: 'EVENTS_TOO_NEW',
        message: `${file} was written with event schema 3 by cudamatrix 9.0.0; this cudamatrix reads schema 2 and older: upgrade cudamatrix to read it`,
      }),
    );
    expect(() => readLogs([path.join(dir, 'nowhere')])).toThrow(
      expect.objectContaining({ code: 'USAGE', message: expect.stringContaining('nowhere does not exist') }),
    );
    expect(() => readLogs([tempDir()])).toThrow(
      expect.objectContaining({ code: 'USAGE', message: expect.stringContaining('is a folder without an events.jsonl') }),
    );
  });

  it('refuses logs of different cudamatrix versions, and of matrices that disagree', () => {
    const newer = shardLog('b/events.jsonl', ['gpu-a'], { shard: [2, 2], version: '0.2.0' });
    expect(() => mergeEventLogs([firstShard, newer])).toThrow(
      expect.objectContaining({
        code: 'MERGE_MISMATCH',
        message: expect.stringMatching(
          /^a\/events\.jsonl was written by cudamatrix 0\.1\.0 and b\/events\.jsonl by cudamatrix 0\.2\.0; a merged run has one version/,
        ),
      }),
    );
    const other = shardLog('b/events.jsonl', ['gpu-a'], {
      shard: [2, 2],
      start: { matrix: { file: 'test.yaml', expectations: { linux: [{ fact: 'sysinfo.os_family', equals: 'windows' }] } } },
    });
    expect(() => mergeEventLogs([firstShard, other])).toThrow(
      expect.objectContaining({
        code: 'MERGE_MISMATCH',
        message: expect.stringContaining(
          'a/events.jsonl and b/events.jsonl come from different matrices: their expectations for linux differ',
        ),
      }),
    );
    // The same target defined otherwise (its probes split between the logs by --probe).
    const split = shardLog('b/events.jsonl', [], { shard: null, runId: 'other' });
    split.events.splice(1, 0, targetStart('gpu-b', [], 'wsl2', ['cuda-graph']), cell('gpu-b', 'cuda-graph', 'skipped'));
    (split.events[0] as RunStartEvent).cells = ['gpu-b/cuda-graph'];
    expect(() => mergeEventLogs([firstShard, split])).toThrow(
      expect.objectContaining({
        code: 'MERGE_MISMATCH',
        message:
          'target "gpu-b" is defined differently in b/events.jsonl and a/events.jsonl (environment): the logs come from different matrices; merge the logs of runs of one matrix',
      }),
    );
  });

  it('joins a target whose probes two logs split between them: one start with every probe, one sysinfo', () => {
    const first = shardLog('one/events.jsonl', ['box'], { runId: 'one' });
    const second = shardLog('two/events.jsonl', [], { runId: 'two' });
    second.events.splice(
      1,
      0,
      targetStart('box', [], 'auto', ['cuda-graph']),
      { ...cell('box', 'sysinfo', 'passed', sysinfo({ environment: 'linux' })), planned: false },
      cell('box', 'cuda-graph', 'skipped'),
    );
    (second.events[0] as RunStartEvent).cells = ['box/cuda-graph'];
    const merged = mergeEventLogs([first, second]);
    const starts = merged.events.filter((e) => e.type === 'target-start');
    expect(starts).toEqual([expect.objectContaining({ target: 'box', probes: ['sysinfo', 'cuda-graph'] })]);
    expect(summarize(merged.events).targets[0]!.cells.map((cellEnd) => [cellEnd.probe, cellEnd.planned])).toEqual([
      ['sysinfo', true],
      ['cuda-graph', true],
    ]);
  });

  it('warns of different matrix file names, a mix of --quick, and shards missing from a split', () => {
    const thirdShard = shardLog('c/events.jsonl', ['gpu-x'], {
      shard: [3, 4],
      start: { matrix: { file: '/ci/job-3/matrix.yaml', expectations }, options: { strict: true, quick: true } },
    });
    const merged = mergeEventLogs([firstShard, thirdShard]);
    expect(merged.warnings).toEqual([
      'the logs name different matrix files (test.yaml, /ci/job-3/matrix.yaml); their expectations agree, so they are taken as one matrix, named test.yaml',
      'c/events.jsonl ran with --quick (small parameters) and the others did not: each cell keeps the parameters it ran with',
      'shard 2/2 of the split into 2 is not among the logs: the merged run lacks its cells',
      'shards 1/4, 2/4, 4/4 of the split into 4 are not among the logs: the merged run lacks their cells',
    ]);
    expect((merged.events[0] as RunStartEvent).options).toEqual({ strict: false, quick: true });
    expect((mergeEventLogs([firstShard, thirdShard], { strict: true }).events[0] as RunStartEvent).options.strict).toBe(true);
  });
});

describe('the merged events.jsonl', () => {
  const committed = readdirSync(path.join(repoRoot, 'records'), { recursive: true })
    .map(String)
    .filter((file) => file.endsWith('.jsonl'))
    .map((file) => path.join(repoRoot, 'records', file));
  /** The merged log as it was written before lines were copied: JSON.stringify of each event. */
  const stringified = (events: RunEvent[]) => events.map((e) => `${JSON.stringify(e)}\n`).join('');
  /**
   * A log's text with each cell's samples line (cell-samples, as newer writers put a cell's
   * samples on a line of their own) folded into its cell-end, as a reader gives it: so that it
   * compares with `stringified`.
   */
  const oneLineEach = (text: string) => {
    let samples: unknown[] = [];
    return text
      .split('\n')
      .filter(Boolean)
      .flatMap((line) => {
        const e = JSON.parse(line) as { type: string; samples?: unknown[]; records?: unknown[] };
        if (e.type === 'cell-samples') {
          samples = e.samples ?? [];
          return [];
        }
        if (e.type === 'cell-end' && samples.length) [e.records, samples] = [[...(e.records ?? []), ...samples], []];
        return [`${JSON.stringify(e)}\n`];
      })
      .join('');
  };
  /** The logs merged as cudamatrix merge reads them (the samples left out), and merged whole. */
  const merge = (files: string[]) => {
    const lean = mergeEventLogs(readLogs(files, { leaveOutSamples: true }));
    const { eventsFile } = writeMergedRun(lean, tempDir());
    return { text: readFileSync(eventsFile, 'utf8'), merged: mergeEventLogs(readLogs(files)), lean };
  };
  const samplesIn = (events: RunEvent[]) =>
    events.flatMap((e) => (e.type === 'cell-end' ? e.records : [])).filter((record) => record.type === 'sample').length;
  const counted = (events: RunEvent[]) => events.reduce((total, e) => total + (e.type === 'cell-end' ? sampleCount(e) : 0), 0);
  /** The H200 log as `copies` machines wrote it, each with its own run id and target (as bench/scale makes them). */
  const copies = (log: string, count: number, eol = '\n') => {
    const dir = tempDir();
    const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    const runId = (JSON.parse(lines[0]!) as RunStartEvent).runId;
    const target = (JSON.parse(lines[1]!) as { target: string }).target;
    return Array.from({ length: count }, (_, i) => {
      const file = path.join(dir, `gpu-${i}.jsonl`);
      const text = lines.map((line) => line.replaceAll(`"${runId}"`, `"${runId}-${i}"`).replaceAll(`"${target}`, `"gpu-${i}`)).join(eol);
      writeFileSync(file, `${text}${eol}`);
      return file;
    });
  };

  it("is, for every committed log, byte for byte JSON.stringify of each merged event, a line each (a cell's samples line folded in)", () => {
    expect(committed.length).toBeGreaterThanOrEqual(9);
    let samples = 0;
    for (const log of committed) {
      const { text, merged, lean } = merge([log]);
      expect(oneLineEach(text), log).toBe(stringified(merged.events));
      // Read without its samples, each cell still counts them; the log has them all.
      expect(samplesIn(lean.events), log).toBe(0);
      expect(counted(lean.events), log).toBe(samplesIn(merged.events));
      samples += samplesIn(merged.events);
    }
    expect(samples).toBeGreaterThan(0);
  });

  it('refuses, naming it, a log read without its samples that changed before its lines were copied, and writes nothing', () => {
    const dir = tempDir();
    const log = path.join(dir, 'events.jsonl');
    cpSync(path.join(repoRoot, 'records', 'driver-580.159.04', 'h200-linux', 'events.jsonl'), log);
    const merged = mergeEventLogs(readLogs([log], { leaveOutSamples: true }));
    writeFileSync(log, `\n${readFileSync(log, 'utf8')}`);
    const out = tempDir();
    expect(() => writeMergedRun(merged, out)).toThrow(
      expect.objectContaining({ code: 'EVENTS_INVALID', message: expect.stringContaining(`${log} changed while it was being merged`) }),
    );
    expect(readdirSync(path.join(out, merged.start.runId))).toEqual([]);
  });

  it('is the same for many logs, their targets interleaved in name order, and for lines ended by CRLF', () => {
    for (const eol of ['\n', '\r\n']) {
      const files = copies(path.join(repoRoot, 'records', 'driver-580.159.04', 'h200-linux', 'events.jsonl'), 12, eol);
      const { text, merged } = merge(files);
      expect(merged.start.cells).toHaveLength(12 * 13);
      // Name order: gpu-0, gpu-1, gpu-10, gpu-11, gpu-2...: not the order the logs were given in.
      expect(targetsIn(merged.events).slice(0, 4)).toEqual(['gpu-0', 'gpu-1', 'gpu-10', 'gpu-11']);
      expect(text).toBe(stringified(merged.events));
      expect(text).not.toContain('\r');
    }
  });

  it("copies a log this cudamatrix wrote (each cell's samples on a line before it) byte for byte, the samples counted unread", () => {
    const h200 = path.join(repoRoot, 'records', 'driver-580.159.04', 'h200-linux', 'events.jsonl');
    // The H200 log as the event writer writes it now (schema 2), in 3 copies.
    const files = copies(h200, 3).map((file) => {
      const events = readEventLog(file);
      (events[0] as RunStartEvent).schemaVersion = EVENTS_SCHEMA_VERSION;
      writeFileSync(file, events.map(eventText).join(''));
      return file;
    });
    expect(readFileSync(files[0]!, 'utf8')).toMatch(/^\{"type":"cell-samples","count":\d+,"cell":"gpu-0\/pinned-vram","samples":\[/m);
    const { text, merged, lean } = merge(files);
    expect(text).toBe(merged.events.map(eventText).join(''));
    expect(samplesIn(lean.events)).toBe(0);
    expect(counted(lean.events)).toBe(samplesIn(merged.events));
    expect(samplesIn(merged.events)).toBeGreaterThan(0);
  });

  it('writes anew, as JSON.stringify does, a line with blanks around it, one not in UTF-8, and a log changed since it was read', () => {
    const dir = tempDir();
    const [fileA, fileB, fileC] = ['a', 'b', 'c'].map((letter) => path.join(dir, `${letter}.jsonl`)) as [string, string, string];
    const log = (name: string, target: string) => shardLog(name, [target], { runId: `run-${target}` }).events.map((e) => JSON.stringify(e));
    // Blanks around the target-start; a byte that is not UTF-8 (read as U+FFFD) in a cell's reason.
    const [aStart, ...aRest] = log(fileA, 'gpu-a');
    writeFileSync(fileA, [aStart, `  ${aRest[0]} \t`, ...aRest.slice(1), ''].join('\n'));
    const bLines = log(fileB, 'gpu-b').map((line) => line.replace('"status":"passed"', '"status":"passed","reason":"x@y"'));
    const bBytes = Buffer.from(`${bLines.join('\n')}\n`);
    bBytes[bBytes.indexOf('x@y') + 1] = 0xff;
    writeFileSync(fileB, bBytes);
    writeFileSync(fileC, `${log(fileC, 'gpu-c').join('\n')}\n`);
    const logs = readLogs([fileA, fileB, fileC]);
    // c changes after it was read (a blank line first: every line one byte further on): its events are written as read.
    writeFileSync(fileC, `\n${readFileSync(fileC, 'utf8')}`);
    const merged = mergeEventLogs(logs);
    const text = readFileSync(writeMergedRun(merged, tempDir()).eventsFile, 'utf8');
    expect(text).toBe(stringified(merged.events));
    expect(text).toContain('"reason":"x\uFFFDy"');
  });
});

describe.runIf(noDriverHere)('merged shards of a real run (this machine, no driver)', () => {
  let live: RunSource;
  let merged: RunSource;
  let shards: RunSource[];
  beforeAll(async () => {
    ({ live, merged, shards } = await realRuns());
  });

  it("split the matrix into shards of whole hosts: this machine's targets in one, the SSH target in the other", () => {
    expect(shards.map((shard) => targetsIn(shard.events))).toEqual([['alpha', 'charlie'], ['bravo']]);
    expect(shards.map((shard) => (shard.events[0] as RunStartEvent).shard)).toEqual([
      { index: 1, total: 2 },
      { index: 2, total: 2 },
    ]);
  });

  it('summarise as the live run: targets, cells, verdicts, counts and exit status', () => {
    const [liveSummary, mergedSummary] = [summarize(live.events), summarize(merged.events)];
    expect(mergedSummary.targets.map((target) => target.name)).toEqual(['alpha', 'bravo', 'charlie']);
    const shape = (summary: typeof liveSummary) => ({
      targets: summary.targets.map((target) => ({
        name: target.name,
        env: target.environmentClass,
        error: target.error?.code,
        cells: target.cells.map((cellEnd) => [cellEnd.cell, cellEnd.planned, cellEnd.status, cellEnd.reason]),
        verdicts: target.verdicts,
      })),
      counts: summary.counts,
      nothingMeasured: summary.nothingMeasured,
      interrupted: summary.interrupted,
      exit: exitCodeOf(summary, { strict: false }),
    });
    expect(shape(mergedSummary)).toEqual(shape(liveSummary));
    // The run has a failed expectation (alpha), skipped probes (no driver), and an unreachable
    // target (bravo), whose expectation from "all" is an error: its probe could not run.
    expect(liveSummary.counts.verdicts).toEqual({ passed: 1, failed: 1, skipped: 4, error: 1 });
    expect(liveSummary.targets[1]!.error?.code).toMatch(/^(AUTH_FAILED|TARGET_UNREACHABLE)$/);
    expect(exitCodeOf(mergedSummary, { strict: false })).toBe(3);
    expect((merged.events[0] as RunStartEvent).cells).toEqual((live.events[0] as RunStartEvent).cells);
  });
});

describe.runIf(noDriverHere)('cudamatrix merge (the CLI)', () => {
  const dir = tempDir();
  const matrix = path.join(dir, 'matrix.yaml');
  writeFileSync(matrix, REAL_RUNS_MATRIX);
  const runs = (sub: string) => path.join(dir, sub);
  const only = (folder: string) => {
    const names = readdirSync(folder);
    expect(names).toHaveLength(1);
    return path.join(folder, names[0]!);
  };
  let live: Awaited<ReturnType<typeof runCli>>;
  let shardDirs: string[];
  beforeAll(async () => {
    live = await runCli(['run', '-m', matrix, '--results-dir', runs('live')]);
    for (const shard of ['1/2', '2/2']) await runCli(['run', '-m', matrix, '--shard', shard, '--results-dir', runs(`shard-${shard[0]}`)]);
    shardDirs = [only(runs('shard-1')), only(runs('shard-2'))];
  });

  it('writes the merged run folder, prints what run printed, and exits as the live run did', async () => {
    const result = await runCli([
      'merge',
      shardDirs[1]!,
      shardDirs[0]!,
      '--results-dir',
      runs('merged'),
      '--junit',
      path.join(dir, 'merged-junit.xml'),
    ]);
    expect(live.code).toBe(3);
    expect(result.code).toBe(live.code);
    const runDir = only(runs('merged'));
    for (const file of ['events.jsonl', 'junit.xml', 'summary.json']) expect(existsSync(path.join(runDir, file)), file).toBe(true);
    const liveDir = only(runs('live'));
    const [liveId, mergedId] = [path.basename(liveDir), path.basename(runDir)];
    expect(mergedId).toMatch(/-merged-[0-9a-f]{6}$/);
    // The console, run's and merge's, the same once run ids, times, durations and folders are set aside.
    expect(normalise(result.stdout, { runId: mergedId, runDir: runs('merged') })).toBe(
      normalise(live.stdout, { runId: liveId, runDir: runs('live') }),
    );
    expect(result.stderr).toBe(
      `merged 2 logs into ${path.join(runDir, 'events.jsonl')}: ${path.join(shardDirs[0]!, 'events.jsonl')} (shard 1/2), ${path.join(shardDirs[1]!, 'events.jsonl')} (shard 2/2)\n`,
    );
    const liveJunit = readFileSync(path.join(liveDir, 'junit.xml'), 'utf8');
    const mergedJunit = readFileSync(path.join(dir, 'merged-junit.xml'), 'utf8');
    await validateJunit(mergedJunit);
    expect(readFileSync(path.join(runDir, 'junit.xml'), 'utf8')).toBe(mergedJunit);
    expect(normalise(mergedJunit, { runId: mergedId, runDir: runs('merged') })).toBe(
      normalise(liveJunit, { runId: liveId, runDir: runs('live') }),
    );
    const summary = (runFolder: string, id: string, root: string) =>
      normalise(readFileSync(path.join(runFolder, 'summary.json'), 'utf8'), { runId: id, runDir: root });
    expect(summary(runDir, mergedId, runs('merged'))).toBe(summary(liveDir, liveId, runs('live')));
    expect(readEventLog(path.join(runDir, 'events.jsonl'))[0]).toMatchObject({ runId: mergedId, shard: null });

    // Merging the same logs again gives the same run: the same folder, the same log.
    const before = readFileSync(path.join(runDir, 'events.jsonl'), 'utf8');
    const again = await runCli(['merge', shardDirs[0]!, shardDirs[1]!, '--results-dir', runs('merged'), '--json', '-q']);
    expect(again.code).toBe(3);
    expect(readdirSync(runs('merged'))).toEqual([mergedId]);
    expect(readFileSync(path.join(runDir, 'events.jsonl'), 'utf8')).toBe(before);
    expect(JSON.parse(again.stdout)).toMatchObject({ runId: mergedId, shard: null, counts: { verdicts: { passed: 1, failed: 1 } } });
  });

  it('exits 130 when a shard was killed before its run-end, and says so', async () => {
    const killed = runs('killed');
    const text = readFileSync(path.join(shardDirs[1]!, 'events.jsonl'), 'utf8').trimEnd().split('\n').slice(0, -1).join('\n');
    const file = path.join(dir, 'killed-events.jsonl');
    writeFileSync(file, `${text}\n`);
    const result = await runCli(['merge', shardDirs[0]!, file, '--results-dir', killed, '-q']);
    expect(result.code).toBe(130);
    expect(result.stderr).toContain(`warning: ${file} has no run-end (the run was killed, or the file cut short)`);
    expect(result.stdout).toContain('The run was interrupted; the results above cover what finished.');
    expect(result.stdout).toContain('Exit status: 130');
    // The merged log is as incomplete as the killed shard's: no record is made of it.
    const record = await runCli(['record', only(killed), '--records-dir', runs('records')]);
    expect(record.code).toBe(2);
    expect(record.stderr).toContain('is an incomplete event log (it has no run-end event)');
  });

  it('exits 2 and writes nothing for a duplicate, an overlap or a newer schema, naming the files', async () => {
    const out = runs('refused');
    const dup = await runCli(['merge', shardDirs[0]!, path.join(shardDirs[0]!, 'events.jsonl'), '--results-dir', out]);
    expect(dup.code).toBe(2);
    expect(dup.stderr).toMatch(/^error \[MERGE_DUPLICATE\]: .*shard-1.*events\.jsonl and .*shard-1.*events\.jsonl are the same event log/);
    const overlap = await runCli(['merge', only(runs('live')), shardDirs[1]!, '--results-dir', out]);
    expect(overlap.code).toBe(2);
    expect(overlap.stderr).toContain(
      `error [MERGE_OVERLAP]: the logs overlap: ${path.join(only(runs('live')), 'events.jsonl')} (run ${path.basename(only(runs('live')))}, no shard) and ${path.join(shardDirs[1]!, 'events.jsonl')}`,
    );
    expect(overlap.stderr).toContain('both hold 3 cells: bravo/sysinfo, bravo/sync-latency, bravo/cuda-graph');
    const newer = path.join(dir, 'newer.jsonl');
    writeFileSync(newer, `${JSON.stringify({ ...readEventLog(path.join(shardDirs[0]!, 'events.jsonl'))[0], schemaVersion: 99 })}\n`);
    const tooNew = await runCli(['merge', shardDirs[0]!, newer, '--results-dir', out]);
    expect(tooNew.code).toBe(2);
    expect(tooNew.stderr).toBe(
      `error [EVENTS_TOO_NEW]: ${newer} was written with event schema 99 by cudamatrix 0.1.0; this cudamatrix reads schema 2 and older: upgrade cudamatrix to read it\n`,
    );
    expect(existsSync(out)).toBe(false);
  });

  it('explains itself in --help: inputs, what is refused, and the exit statuses', async () => {
    const result = await runCli(['merge', '--help']);
    expect(result.code).toBe(0);
    for (const text of [
      '<logs...>',
      '--results-dir <dir>',
      '--junit <file>',
      '--json',
      'Refused (exit 2, naming both files)',
      'two logs that planned the same cell',
      'Exit status',
      '130  a log was interrupted or killed',
    ]) {
      expect(result.stdout).toContain(text);
    }
  });
});
