/**
 * bench/physics on a committed H200 log and doctored copies of it: the unavoidable time must move
 * with the log's own figures (a pin rate, a context time) and with nothing else, a figure missing
 * from the log must say "not modelled", and the command line must print the table and write the JSON.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEventLog, type CellEndEvent } from '../events/events.ts';
import { tempDir } from '../test/helpers.ts';
import { physicsOfRun, type CellPhysics } from './physics-model.ts';
import { DEFAULT_RUNS, logsOf, main, type PhysicsResult } from './physics.ts';

const LOG = logsOf(DEFAULT_RUNS)[0]!;

type Line = { type: string; probe?: string; records?: { type: string; name?: string; value?: unknown }[] } & Record<string, unknown>;

/** A copy of LOG with `edit` applied to each line (parsed), dropped where it returns null. */
function doctored(edit: (line: Line) => Line | null): string {
  const lines = readFileSync(LOG, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((text) => edit(JSON.parse(text) as Line))
    .filter((line): line is Line => line !== null);
  const file = path.join(tempDir('cm-physics-'), 'events.jsonl');
  writeFileSync(file, lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
  return file;
}

/** A copy of LOG with the metrics `name` of `probe`'s cell-end multiplied by `factor`. */
function scaled(probe: string, name: string, factor: number): string {
  return doctored((line) => {
    if (line.type === 'cell-end' && line.probe === probe)
      for (const record of line.records!)
        if (record.type === 'metric' && record.name === name && typeof record.value === 'number') record.value *= factor;
    return line;
  });
}

const cellsOf = (file: string) => new Map(physicsOfRun(readEventLog(file)).cells.map((cell) => [cell.probe, cell]));
const unavoidable = (cells: Map<string, CellPhysics>, probe: string) => cells.get(probe)!.unavoidableMs!;

const original = cellsOf(LOG);
const events = readEventLog(LOG);
const cellEnd = (probe: string) => events.find((e): e is CellEndEvent => e.type === 'cell-end' && e.probe === probe)!;
const metricValues = (probe: string, name: string) =>
  events.flatMap((e) =>
    e.type === 'cell-end' && e.probe === probe
      ? e.records.flatMap((record) => (record.type === 'metric' && record.name === name ? [record.value!] : []))
      : [],
  );

describe('bench/physics on the committed H200 log', () => {
  it('models every cell of the full suite, each at least its cell start, the cell time kept as logged', () => {
    for (const cell of original.values()) {
      expect(cell.notModelled, cell.probe).toBeUndefined();
      expect(cell.unavoidableMs!, cell.probe).toBeGreaterThan(0);
    }
    const ends = events.filter((e) => e.type === 'cell-end');
    expect([...original.values()].map((cell) => cell.cellMs)).toEqual(ends.map((e) => e.durationMs));
  });

  it("moves pinned-ceiling's unavoidable time by the chunks x the change in chunk_alloc_ms, and nothing else's", () => {
    const chunkMib = cellEnd('pinned-ceiling').params!.chunk_mib as number;
    const chunks = metricValues('pinned-ceiling', 'ceiling_bytes').map((bytes) => bytes / (chunkMib * 1024 * 1024));
    const chunkMs = metricValues('pinned-ceiling', 'chunk_alloc_ms');
    expect(chunks.length).toBe(chunkMs.length);
    const pinMs = chunks.reduce((sum, count, i) => sum + count * chunkMs[i]!, 0);

    const slower = cellsOf(scaled('pinned-ceiling', 'chunk_alloc_ms', 2));
    expect(unavoidable(slower, 'pinned-ceiling') - unavoidable(original, 'pinned-ceiling')).toBeCloseTo(pinMs, 6);
    expect(slower.get('pinned-ceiling')!.cellMs).toBe(original.get('pinned-ceiling')!.cellMs);
    for (const probe of original.keys())
      if (probe !== 'pinned-ceiling') expect(unavoidable(slower, probe)).toBe(unavoidable(original, probe));
  });

  it("moves every cell that makes a context or starts subjects by runtime-init's context time, times how many", () => {
    const contextMs = metricValues('runtime-init', 'runtime_context_ms')[0]!;
    const slower = cellsOf(scaled('runtime-init', 'runtime_context_ms', 3));
    const moved = (probe: string) => (unavoidable(slower, probe) - unavoidable(original, probe)) / (2 * contextMs);
    // pinned-ceiling: one subject a round; pinned-vram: one a series; transfer-bandwidth: its own context.
    expect(moved('pinned-ceiling')).toBeCloseTo(metricValues('pinned-ceiling', 'ceiling_bytes').length, 9);
    expect(moved('pinned-vram')).toBeCloseTo(metricValues('pinned-vram', 'alloc_ms').length, 9);
    expect(moved('transfer-bandwidth')).toBeCloseTo(1, 9);
    expect(moved('sysinfo')).toBe(0);
  });

  it("costs transfer-bandwidth's copies at the bandwidth the same cell measured", () => {
    const halved = cellsOf(scaled('transfer-bandwidth', 'bandwidth_gbps', 0.5));
    const copies = halved.get('transfer-bandwidth')!.parts.find((part) => part.what.includes('bandwidth_gbps'))!;
    const before = original.get('transfer-bandwidth')!.parts.find((part) => part.what.includes('bandwidth_gbps'))!;
    expect(copies.ms).toBeCloseTo(2 * before.ms, 6);
  });

  it('says "not modelled", naming what is missing, where the log lacks the pin rate, and keeps the rest', () => {
    const cells = cellsOf(doctored((line) => (line.probe === 'pinned-vram' || line.cell === 'local/pinned-vram' ? null : line)));
    for (const probe of ['pinned-release', 'multi-process-pinned', 'pinned-ceiling', 'transfer-bandwidth']) {
      expect(cells.get(probe)!.unavoidableMs, probe).toBeNull();
      expect(cells.get(probe)!.notModelled, probe).toMatch(/pinned-vram's .* series/);
    }
    expect(unavoidable(cells, 'sync-latency')).toBe(unavoidable(original, 'sync-latency'));
  });
});

describe('bench/physics as a command', () => {
  it('prints the table with a total against the goal and writes the JSON; medians and spreads across runs', () => {
    const slowerCell = doctored((line) =>
      line.type === 'cell-end' && line.probe === 'sync-latency' ? { ...line, durationMs: 4000 } : line,
    );
    const out = path.join(tempDir('cm-physics-out-'), 'physics.json');
    let printed = '';
    expect(main([LOG, slowerCell, LOG, '--goal-s', '30', '--out', out], (text) => (printed += `${text}\n`))).toBe(0);
    const result = JSON.parse(readFileSync(out, 'utf8')) as PhysicsResult;
    expect(result).toMatchObject({ bench: 'physics', goalS: 30, logs: [LOG, slowerCell, LOG] });
    const sync = result.probes.find((row) => row.probe === 'sync-latency')!;
    const loggedMs = cellEnd('sync-latency').durationMs;
    expect(sync.cellMs).toMatchObject({ median: loggedMs, min: loggedMs, max: 4000 });
    expect(sync.ratio!.max).toBeCloseTo(4000 / sync.unavoidableMs!.median, 9);
    const cellSum = [...original.values()].reduce((sum, cell) => sum + cell.cellMs, 0);
    expect(result.total.cellMs.median).toBe(cellSum);
    expect(result.total.goalRatio).toBeCloseTo(cellSum / 1000 / 30, 9);
    expect(printed).toMatch(/^probe\s+status\s+cell s\s+unavoidable s\s+ratio/m);
    expect(printed).toMatch(/^pinned-ceiling\s+passed\s/m);
    expect(printed).toMatch(/^total\s.*goal 30 s/m);
  });

  it('--help prints the usage and writes nothing', () => {
    let printed = '';
    expect(main(['--help'], (text) => (printed += text))).toBe(0);
    expect(printed).toMatch(/^usage: pnpm bench:physics/);
  });
});
