/**
 * The report's verdicts by diff's engine: "Changed between drivers" (each driver's column against
 * the previous driver's of the same environment and GPU) and "Metrics drifted" decided per metric
 * series over all the records of a column, from the committed H200 record doctored.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { formatValue } from '../core/units.ts';
import { tempDir } from '../test/helpers.ts';
import { loaded, writeRecords } from '../test/report-fixture.ts';
import { seriesText } from '../behaviour/diff.ts';
import { doctored, h200Records, metricOf } from '../test/record-fixture.ts';
import { recordPath, type BehaviourRecord } from '../behaviour/behaviour-record.ts';
import { loadRecords } from './load.ts';
import { mdText, renderMarkdown } from './markdown.ts';
import { pageData } from './page-data.ts';
import { buildTable } from './behaviour-table.ts';
import { KEPT_KEY_METRICS } from './key-metrics.ts';

const paths = { recordsLink: 'records', recordsDirName: 'records' };
const BW = 'transfer-bandwidth.bandwidth_gbps';
const MIB_256 = 256 * 1024 * 1024;

let first: BehaviourRecord;
beforeAll(async () => {
  first = (await h200Records())[0]!;
});

/** The pinned copies of at least 256 MiB: the series the newer driver slows. */
const slowed = (record: BehaviourRecord) =>
  record.metrics.filter(
    (metric) =>
      metric.name === BW && metric.attrs?.memory === 'pinned' && Number(metric.attrs.size_bytes) >= MIB_256 && metric.value !== null,
  );

/** The first H200 record as driver 590.10, a day later, edited. */
const newerDriver = (record: BehaviourRecord, id: string, edit: (copy: BehaviourRecord) => void = () => {}) =>
  doctored(record, id, (copy) => {
    copy.key = { ...copy.key, driver: '590.10' };
    copy.observed.date = '2026-11-30T17:00:00.000Z';
    copy.observed.runId = `run-${id}`;
    edit(copy);
  });

/** The lines of a Markdown section, from its heading to the next. */
const section = (md: string, heading: string) => {
  const from = md.indexOf(`## ${heading}\n`);
  if (from < 0) throw new Error(`no section ${heading} in\n${md}`);
  const to = md.indexOf('\n## ', from + 3);
  return md.slice(from, to < 0 ? undefined : to);
};

/** The Markdown table row whose first cell starts with `start`. */
function row(md: string, start: string): string {
  const line = md.split('\n').find((candidate) => candidate.startsWith(`| ${start}`));
  if (!line) throw new Error(`no row ${start}`);
  return line;
}
const cells = (line: string) => line.slice(2, -2).split(/(?<!\\) \| /);

describe('Changed between drivers', () => {
  it('a newer driver with every pinned copy of 256 MiB or more 12 % slower: each series listed with its noise, and the key metric marked ⚠ changed', () => {
    const newer = newerDriver(first, 'c3c3c3c3c3c3c3c3', (record) => {
      for (const metric of slowed(record)) metric.value = metric.value! * 0.88;
    });
    const series = slowed(first);
    expect(series.length).toBeGreaterThanOrEqual(4);
    const md = renderMarkdown(loaded([first, newer]), paths);
    const part = section(md, 'Changed between drivers');
    expect(part).toContain(
      `- **linux · NVIDIA H200 · Ubuntu 24.04.3 LTS · in docker**: driver 580.159.04 → 590.10: 0 facts changed, ${series.length} metric series beyond their noise`,
    );
    expect(part).not.toContain('None:');
    for (const metric of series) {
      const newerValue = metricOf(newer, metric.name, metric.attrs!).value!;
      expect(part).toContain(
        `  - ${mdText(seriesText(metric.name, metric.attrs))}: ${mdText(`${formatValue(metric.value, metric.unit)} → ${formatValue(newerValue, metric.unit)}`)} (moved 12 %, noise ±3 %: `,
      );
    }
    // Only those: the smaller copies and the pageable ones did not change.
    expect(part.split('\n').filter((sectionLine) => sectionLine.startsWith('  - '))).toHaveLength(series.length);
    // The key metric (H2D pinned at 1 GiB) in the newer driver's column: marked with the older driver's value; the older column is not.
    const h2d = metricOf(first, BW, { direction: 'h2d', memory: 'pinned', size_bytes: 1073741824 });
    const line = cells(row(md, 'transfer-bandwidth.bandwidth_gbps: H2D pinned'));
    expect(line[3]).toBe(
      `[${formatValue(h2d.value! * 0.88, 'GB/s')} at 1 GiB](records/${recordPath(newer)}) ⚠ changed from ${formatValue(h2d.value, 'GB/s')} (driver 580.159.04)`,
    );
    expect(line[2]).not.toContain('⚠');
    expect(formatValue(h2d.value, 'GB/s')).toBe('55.4 GB/s');
    // Nothing drifted within a column: each has one record.
    expect(section(md, 'Metrics drifted')).toContain('None:');

    // The page says the same: the section's series, and the key metric's column with the value before.
    const data = pageData(loaded([first, newer]), 'records');
    const strs = data.strs;
    expect(data.changes).toHaveLength(1);
    const change = data.changes[0]!;
    expect([change.from, change.to, change.facts, change.cells]).toEqual([0, 1, [], []]);
    expect(change.series.map((pageSeries) => strs[pageSeries[0]])).toEqual(series.map((metric) => seriesText(metric.name, metric.attrs)));
    const keyRow = data.metrics.find((metricRow) => strs[metricRow.metric] === BW && strs[metricRow.label] === 'H2D pinned')!;
    expect(keyRow.changed).toEqual([[1, h2d.value]]);
  });

  it('a fact changed and nothing else moved: the fact listed; the same records with no change say None', () => {
    const same = newerDriver(first, 'c4c4c4c4c4c4c4c4');
    const md = renderMarkdown(loaded([first, same]), paths);
    const part = section(md, 'Changed between drivers');
    expect(part).toContain('None: every driver has the facts, cell outcomes and metrics (within their noise) of the driver before it.');
    expect(part).toMatch(
      /driver 580\.159\.04 → 590\.10: 0 facts changed, 0 metric series beyond their noise \(of \d+ facts and \d+ series compared\)/,
    );
    expect(md).not.toContain('⚠ changed from');

    const released = newerDriver(first, 'c5c5c5c5c5c5c5c5', (record) => {
      record.facts['pinned-release.released'] = { value: 'on-exit' };
    });
    const changed = section(renderMarkdown(loaded([first, released]), paths), 'Changed between drivers');
    expect(changed).not.toContain('None:');
    expect(changed).toContain('driver 580.159.04 → 590.10: 1 fact changed, 0 metric series beyond their noise');
    expect(changed).toContain(`  - pinned-release.released: ${String(first.facts['pinned-release.released']!.value)} → on-exit`);
  });

  it('one driver per environment and GPU: None, nothing to compare', () => {
    const table = buildTable(loaded([first]));
    expect(table.betweenDrivers).toEqual([]);
    expect(section(renderMarkdown(loaded([first]), paths), 'Changed between drivers')).toContain(
      'None: no environment and GPU (with the same OS and container) has records of two driver versions.',
    );
  });

  it('three drivers: each adjacent pair (575 → 580 → 590, by version), the change where it happened', () => {
    const older = doctored(first, 'b1b1b1b1b1b1b1b1', (record) => {
      record.key = { ...record.key, driver: '575.9' };
      record.observed.date = '2026-11-20T00:00:00.000Z';
    });
    const newer = newerDriver(first, 'c3c3c3c3c3c3c3c3', (record) => {
      for (const metric of slowed(record)) metric.value = metric.value! * 0.88;
    });
    const steps = buildTable(loaded([newer, first, older])).betweenDrivers;
    expect(steps.map((step) => [step.from.key.driver, step.to.key.driver, step.metrics.length])).toEqual([
      ['575.9', '580.159.04', 0],
      ['580.159.04', '590.10', slowed(first).length],
    ]);
  });
});

describe('Metrics drifted, per series over all records of a column', () => {
  it('a newer opt-in run (a few probes, no bandwidth) does not hide the drift of the full run before it', () => {
    // Three runs of one observation: the full one, a full one with every pinned bandwidth halved
    // (recorded as a drift), and an opt-in run of pinned-ceiling alone, the newest.
    const halved = doctored(first, 'd4d4d4d4d4d4d4d4', (record) => {
      record.observed.date = '2026-12-01T10:00:00.000Z';
      record.observed.runId = 'run-halved';
      record.driftedFrom = first.id;
      for (const metric of record.metrics)
        if (metric.name === BW && metric.attrs?.memory === 'pinned' && metric.value !== null) metric.value /= 2;
    });
    const optIn = doctored(first, 'e5e5e5e5e5e5e5e5', (record) => {
      record.observed.date = '2026-12-02T10:00:00.000Z';
      record.observed.runId = 'run-opt-in';
      const only = (name: string) => name.startsWith('pinned-ceiling.');
      record.facts = Object.fromEntries(Object.entries(record.facts).filter(([name]) => only(name)));
      record.metrics = record.metrics.filter((metric) => only(metric.name));
      record.samples = record.samples.filter((sample) => sample.probe === 'pinned-ceiling');
      record.cells = record.cells.filter((cell) => cell.probe === 'pinned-ceiling');
    });
    const pinned = first.metrics.filter((metric) => metric.name === BW && metric.attrs?.memory === 'pinned' && metric.value !== null);
    // As loaded from a folder through the records index (the full run before the drift a digest of its key metrics), and given whole.
    const dir = tempDir('cm-report-drift-');
    writeRecords(dir, [first, halved, optIn]);
    for (const records of [loaded([first, halved, optIn]), loadRecords(dir, KEPT_KEY_METRICS)]) {
      const table = buildTable(records);
      const [column] = table.columns;
      expect(column!.chosen.record.id).toBe(optIn.id);
      expect(column!.drifts.map((drift) => [drift.to.record.id, drift.from.record.id, drift.earlier])).toEqual([[halved.id, first.id, 1]]);
      expect(column!.drifts[0]!.metrics.map((comparison) => seriesText(comparison.name, comparison.attrs))).toEqual(
        pinned.map((metric) => seriesText(metric.name, metric.attrs)),
      );
      const md = renderMarkdown(records, paths);
      const part = section(md, 'Metrics drifted');
      expect(part).not.toContain('None:');
      expect(part).toContain(
        `- **linux · NVIDIA H200 · 580.159.04 · Ubuntu 24.04.3 LTS · in docker**: [2026-12-01 d4d4d4d4](records/${recordPath(halved)}) against [2026-11-29 ${first.id.slice(0, 8)}](records/${recordPath(first)}): ${pinned.length} metric series beyond their noise`,
      );
      const h2d = metricOf(first, BW, { direction: 'h2d', memory: 'pinned', size_bytes: 1073741824 }).value!;
      expect(cells(row(md, 'transfer-bandwidth.bandwidth_gbps: H2D pinned'))[2]).toContain(
        `](records/${recordPath(halved)}) ⚠ drifted from ${formatValue(h2d, 'GB/s')}`,
      );
      const data = pageData(records, 'records');
      expect(data.columns[0]!.drift.map((drift) => [data.strs[drift.to], drift.earlier, drift.series.length + drift.more])).toEqual([
        [`2026-12-01 d4d4d4d4`, 1, pinned.length],
      ]);
    }
  });

  it('against every earlier record of the segment: a run back within the noise of the runs before it is no drift; one past it is', () => {
    // Eight runs with a run-to-run noise of about 0.3 %: enough degrees of freedom to measure it.
    const noise = [0, 0.004, -0.004, 0.002, -0.002, 0.003, -0.003, 0.001];
    const runs = noise.map((deviation, i) =>
      doctored(first, `a${i}a${i}a${i}a${i}a${i}a${i}a${i}a${i}`, (record) => {
        record.observed.date = `2026-11-${String(10 + i).padStart(2, '0')}T00:00:00.000Z`;
        record.observed.runId = `run-${i}`;
        for (const metric of record.metrics) if (metric.name === BW && metric.value !== null) metric.value *= 1 + deviation;
      }),
    );
    expect(buildTable(loaded(runs)).columns[0]!.drifts).toEqual([]);
    const slower = doctored(runs[7]!, 'a9a9a9a9a9a9a9a9', (record) => {
      record.observed.date = '2026-11-30T00:00:00.000Z';
      for (const metric of slowed(record)) metric.value = metric.value! * 0.88;
    });
    const [drift] = buildTable(loaded([...runs, slower])).columns[0]!.drifts;
    expect([drift!.to.record.id, drift!.from.record.id, drift!.earlier]).toEqual([slower.id, runs[7]!.id, 8]);
    expect(drift!.metrics.map((comparison) => [seriesText(comparison.name, comparison.attrs), comparison.noiseFrom])).toEqual(
      slowed(first).map((metric) => [seriesText(metric.name, metric.attrs), 'runs']),
    );
  });
});
