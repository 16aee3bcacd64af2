/**
 * Issue 32 adds two things to what cudaprobe prints: `neighbours` records (who else used the GPU
 * during a cell) and metrics' `repeats`. Every consumer of a cell's records must take them
 * without error; those that do not show them (verdicts, the console, JUnit) render exactly what
 * they rendered without them, and a behaviour record keeps them (its `shared` cells, its
 * metrics' repeats) and nothing else changes.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventText, readEventLog, type CellEndEvent, type RunEvent } from '../../events/events.ts';
import { parseProbeOutput, type ProbeRecord } from '../../probes/protocol.ts';
import { tempDir } from '../helpers.ts';
import { H200_LOGS } from '../report-fixture.ts';
import { consoleReporter } from '../../reporters/console.ts';
import { summaryJson } from '../../reporters/json.ts';
import { junitXml } from '../../reporters/junit.ts';
import { recordsFromEvents } from '../../behaviour/behaviour-record.ts';
import { summarize } from '../../verdicts/verdicts.ts';

const neighbours = (probe: string, phase: 'start' | 'end'): ProbeRecord =>
  phase === 'start'
    ? { schema: 'cudaprobe/1', type: 'neighbours', probe, phase, processes: 1, used_bytes: 1048576, pids: [4242] }
    : {
        schema: 'cudaprobe/1',
        type: 'neighbours',
        probe,
        phase,
        processes: null,
        used_bytes: null,
        pids: [],
        reason: 'NVML: Not Supported (3)',
      };

let plain: RunEvent[];
let withNeighbours: RunEvent[];

beforeAll(() => {
  plain = readEventLog(H200_LOGS[0]!);
  // The same run with a neighbours record before and after each passed cell's records, and
  // repeats on every metric, written as an event log and read back.
  const added = plain.map((e): RunEvent => {
    if (e.type !== 'cell-end' || e.status !== 'passed') return e;
    const records = e.records.map((record) =>
      record.type === 'metric' && record.value !== null ? { ...record, repeats: [record.value, record.value * 1.01] } : record,
    );
    return { ...e, records: [neighbours(e.probe, 'start'), ...records, neighbours(e.probe, 'end')] };
  });
  const file = path.join(tempDir('cm-neighbours-'), 'events.jsonl');
  writeFileSync(file, added.map(eventText).join(''));
  withNeighbours = readEventLog(file);
});

async function consoleText(events: RunEvent[]): Promise<string> {
  let text = '';
  const reporter = consoleReporter({ out: { write: (chunk: string) => (text += chunk) }, color: false, env: {} });
  for (const e of events) reporter.onEvent!(e);
  await reporter.onEnd!(summarize(events), { runDir: 'r', eventsFile: 'r/events.jsonl', strict: false });
  return text;
}

describe('neighbours records and repeats in a run', () => {
  it('are kept by the event log: a cell-end carrying them is written and read back', () => {
    const cells = withNeighbours.filter((e): e is CellEndEvent => e.type === 'cell-end' && e.status === 'passed');
    expect(cells.length).toBeGreaterThan(3);
    for (const cell of cells) {
      expect(cell.records[0]).toMatchObject({ type: 'neighbours', phase: 'start', processes: 1, pids: [4242] });
      expect(cell.records.filter((record) => record.type === 'neighbours')).toHaveLength(2);
    }
    const metric = cells.flatMap((cell) => cell.records).find((record) => record.type === 'metric' && record.value !== null);
    expect(metric).toHaveProperty('repeats');
    // And each record, printed as cudaprobe prints it, parses.
    const lines = cells.flatMap((cell) =>
      cell.records.filter((record) => record.type !== 'sample').map((record) => JSON.stringify(record)),
    );
    expect(parseProbeOutput(`${lines.join('\n')}\n`).problems).toEqual([]);
  });

  it('leave the verdicts, the console and JUnit as they were; the behaviour record keeps them and changes nothing else', async () => {
    const verdicts = (events: RunEvent[]) => summarize(events).targets.flatMap((target) => target.verdicts);
    expect(verdicts(plain).length).toBeGreaterThan(10);
    expect(verdicts(withNeighbours)).toEqual(verdicts(plain));
    expect(await consoleText(withNeighbours)).toBe(await consoleText(plain));
    expect(junitXml(summarize(withNeighbours))).toBe(junitXml(summarize(plain)));
    const [kept] = recordsFromEvents(withNeighbours, {});
    const passed = plain.filter((e): e is CellEndEvent => e.type === 'cell-end' && e.status === 'passed');
    expect(kept!.shared?.map((sharedCell) => sharedCell.probe).sort()).toEqual(passed.map((cell) => cell.probe).sort());
    expect(kept!.shared?.[0]).toMatchObject({ processes: 1, usedBytes: 1048576, pids: [4242] });
    expect(kept!.metrics.some((metric) => metric.repeats?.length === 2)).toBe(true);
    const { shared: _, ...rest } = kept!;
    expect({ ...rest, metrics: rest.metrics.map(({ repeats: __, ...metric }) => metric) }).toEqual(recordsFromEvents(plain, {})[0]);
  });

  it('are in the JSON summary, which carries the cells’ records', () => {
    const json = JSON.parse(summaryJson(summarize(withNeighbours))) as { targets: { cells: { records?: ProbeRecord[] }[] }[] };
    const records = json.targets.flatMap((target) => target.cells.flatMap((cell) => cell.records ?? []));
    expect(records.filter((record) => record.type === 'neighbours').length).toBeGreaterThan(0);
  });
});
