import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatValue } from '../core/units.ts';
import { probeSpec } from '../probes/catalogue.ts';
import { loaded, h200Records, variant, writeRecords } from '../test/report-fixture.ts';
import { repoRoot, tempDir } from '../test/helpers.ts';
import { keyText, recordPath, type BehaviourRecord } from '../behaviour/behaviour-record.ts';
import { HTML_FILE, MARKDOWN_FILE, renderReport, reportPaths } from './write-report.ts';
import { loadRecords } from './load.ts';
import { mdText, renderMarkdown } from './markdown.ts';
import { pageData } from './page-data.ts';
import { columnsOf, compareVersions } from './behaviour-table.ts';
import { KEPT_KEY_METRICS, KEY_METRICS, pickMetric } from './key-metrics.ts';

const paths = { recordsLink: 'records', recordsDirName: 'records' };
let first: BehaviourRecord;
let second: BehaviourRecord;
beforeAll(async () => {
  [first, second] = await h200Records();
});

/** The Markdown table row whose first cell starts with `start`. */
function row(md: string, start: string): string {
  const line = md.split('\n').find((candidate) => candidate.startsWith(`| ${start}`));
  if (!line) throw new Error(`no row ${start} in\n${md}`);
  return line;
}

/** The cells of a Markdown table row (split at pipes that are not escaped). */
const cells = (line: string) => line.slice(2, -2).split(/(?<!\\) \| /);

describe('BEHAVIOUR.md', () => {
  it('has a row per fact of the record, grouped by probe, with its claims, description and the value linking to the record', () => {
    const md = renderMarkdown(loaded([first]), paths);
    const href = `records/${recordPath(first)}`;
    const facts = Object.entries(first.facts);
    expect(facts.length).toBeGreaterThan(10);
    for (const [name, fact] of facts) {
      const [probe, factName] = name.split('.') as [string, string];
      const spec = probeSpec(probe)!;
      const line = row(md, mdText(factName));
      expect(cells(line)).toEqual([
        `${mdText(factName)}: ${mdText(spec.facts.find((factSpec) => factSpec.name === factName)!.description)}`,
        spec.claims.join(', '),
        `[${String(fact.value)}${fact.value === null ? '\\*' : ''}](${href})`,
      ]);
      // under its probe's heading row
      const lines = md.split('\n');
      const heading = lines
        .slice(0, lines.indexOf(line))
        .reverse()
        .find((above) => above.startsWith('| **'));
      expect(heading).toContain(`**${probe}**`);
    }
    // The column is the record's key.
    expect(md).toContain(`| fact | claims | ${mdText(keyText(first.key))} |`);
    // A fact without a value says why.
    const nulls = facts.filter(([, fact]) => fact.value === null);
    for (const [name, nullFact] of nulls) expect(md).toContain(`**${mdText(name)}**: ${mdText(nullFact.reason!)}`);
  });

  it('every link points at a record file that exists, relative to the Markdown file', () => {
    const dir = tempDir('cm-report-');
    writeRecords(path.join(dir, 'records'), [first, second]);
    const md = renderMarkdown(loadRecords(path.join(dir, 'records')), reportPaths(path.join(dir, 'records'), dir));
    const targets = [...md.matchAll(/\]\(([^)]+)\)/g)].map((match) => decodeURI(match[1]!));
    expect(targets.length).toBeGreaterThan(40);
    for (const target of new Set(targets)) expect(existsSync(path.join(dir, target)), target).toBe(true);
  });

  it('is deterministic: the same records in any order give the same bytes', () => {
    const inOrder = renderMarkdown(loaded([first, second]), paths);
    const reversed = renderMarkdown(loaded([second, first]), paths);
    expect(reversed).toBe(inOrder);
    expect(inOrder).not.toMatch(/generated (on|at) \d/i);
  });

  it('charts a column from its newest record with facts: an empty newer record (an older cudamatrix wrote those) does not hide a full one', () => {
    const empty = variant(second, 'e0e0e0e0e0e0e0e0', (record) => {
      record.observed.date = '2099-01-01T00:00:00.000Z';
      record.facts = {};
      record.metrics = [];
      record.samples = [];
    });
    const [column] = columnsOf(loaded([first, empty]));
    expect(column!.records).toHaveLength(2);
    expect(column!.chosen.record.id).toBe(first.id);
  });

  it('two agreeing records of one key: one column, the value linking to the newest, with the count; both listed under Records; no conflict', () => {
    const md = renderMarkdown(loaded([first, second]), paths);
    expect(columnsOf(loaded([first, second]))).toHaveLength(1);
    expect(second.observed.date > first.observed.date).toBe(true);
    const line = row(md, 'counts_as_vram:');
    expect(cells(line)[2]).toBe(`[${second.facts['pinned-vram.counts_as_vram']!.value}](records/${recordPath(second)}) (2 records)`);
    expect(md).toContain('None: the records of each column agree on every fact.');
    const records = md.slice(md.indexOf('## Records'));
    for (const record of [first, second]) expect(records).toContain(`](records/${recordPath(record)}) (run ${record.observed.runId}`);
    // a key metric: the newest value, with how many records and their range
    const p50 = [first, second].map((record) => record.metrics.find((metric) => metric.name === 'sync-latency.p50_us')!.value!);
    expect(cells(row(md, 'sync-latency.p50_us'))[2]).toBe(
      `[${formatValue(p50[1]!, 'us')}](records/${recordPath(second)}) (2 records: ${formatValue(Math.min(...p50), 'us')} to ${formatValue(Math.max(...p50), 'us')})`,
    );
  });

  it("lists a column's newest ten records under Records and counts the older ones, with the first date and their folder", () => {
    const runs = Array.from({ length: 12 }, (_, i) =>
      variant(second, `${String(i).padStart(2, '0')}00000000000000`, (record) => {
        record.observed.date = `2026-12-${String(i + 10).padStart(2, '0')}T00:00:00.000Z`;
        record.observed.runId = `run-${i}`;
      }),
    );
    const records = renderMarkdown(loaded(runs), paths).split('## Records')[1]!;
    for (const run of runs.slice(2)) expect(records).toContain(`(run ${run.observed.runId},`);
    for (const run of runs.slice(0, 2)) expect(records).not.toContain(`(run ${run.observed.runId},`);
    const folder = recordPath(runs[0]!).slice(0, recordPath(runs[0]!).lastIndexOf('/') + 1);
    expect(records).toContain(`: 2 older records (from 2026-12-10) in \`records/${folder}\`; [2026-12-12`);
  });

  it('the same key with a different fact is a conflict, shown in the cell and listed', () => {
    const other = variant(second, 'c0ffee00c0ffee00', (record) => {
      record.facts['pinned-release.released'] = { value: 'on-exit' };
    });
    const md = renderMarkdown(loaded([first, other]), paths);
    const was = String(first.facts['pinned-release.released']!.value);
    expect(cells(row(md, 'released:'))[2]).toBe(
      `⚠ conflict: [${was}](records/${recordPath(first)}) ≠ [on-exit](records/${recordPath(other)})`,
    );
    expect(cells(row(md, 'released_runtime:'))[2]).not.toContain('conflict');
    expect(md).toMatch(
      new RegExp(
        `^- ${escapeRe(mdText(keyText(first.key)))}: \\*\\*pinned-release.released\\*\\* is ${was} in .*; on-exit in .*c0ffee00`,
        'm',
      ),
    );
  });

  it('a fact one record left undecided (null) and another decided is no conflict: the decided value, the undecided counted', () => {
    const open = variant(first, 'aa00aa00aa00aa00', (record) => {
      record.facts['pinned-release.released'] = { value: null, reason: 'the probe could not tell' };
    });
    const records = loaded([open, second]);
    const md = renderMarkdown(records, paths);
    const was = String(second.facts['pinned-release.released']!.value);
    expect(cells(row(md, 'released:'))[2]).toBe(`[${was}](records/${recordPath(second)}); undecided in 1 record`);
    expect(md).toContain('None: the records of each column agree on every fact.');
    const data = pageData(records, 'records');
    const strs = data.strs;
    const released = data.facts
      .find((group) => strs[group.probe] === 'pinned-release')!
      .rows.find((factRow) => strs[factRow.fact] === 'released')!;
    expect(released.cells[0]).toBe(strs.indexOf(was));
    expect(data.columns[0]!.conflicts).toBe(0);
  });

  it('columns are sorted: environment (linux, wsl2, wddm, ...), then driver version as numbers; a fact a column lacks is –', () => {
    const wsl = variant(first, 'aaaaaaaaaaaaaaaa', (record) => {
      record.key = { ...record.key, environment: 'wsl2', driver: '575.51', container: null };
      delete record.facts['cuda-log.logs_errors'];
    });
    const older = variant(first, 'bbbbbbbbbbbbbbbb', (record) => {
      record.key = { ...record.key, driver: '575.9' };
    });
    const md = renderMarkdown(loaded([wsl, first, older]), paths);
    const header = cells(row(md, 'fact | claims'));
    expect(header.slice(2)).toEqual([older, first, wsl].map((record) => mdText(keyText(record.key))));
    expect(cells(row(md, 'logs_errors:'))[4]).toBe('–');
    expect(compareVersions('575.9', '575.51')).toBeLessThan(0);
    expect(compareVersions('580.159.04', '580.65.06')).toBeGreaterThan(0);
  });

  it('reads the HAGS setting of a record written before its rename (sysinfo hags) into the hags_setting row', () => {
    const old = variant(first, 'eeeeeeeeeeeeeeee', (record) => {
      record.key = { ...record.key, environment: 'wddm' };
      record.sysinfo = { ...record.sysinfo, hags: true };
    });
    const now = variant(first, 'ffffffffffffffff', (record) => {
      record.key = { ...record.key, environment: 'wddm', driver: '581.1' };
      record.sysinfo = { ...record.sysinfo, hags_setting: false, hags_enabled: true };
    });
    const md = renderMarkdown(loaded([old, now]), paths);
    expect(cells(row(md, 'hags_setting:')).slice(2)).toEqual([expect.stringContaining('true'), expect.stringContaining('false')]);
    expect(cells(row(md, 'hags_enabled:')).slice(2)).toEqual(['–', expect.stringContaining('true')]);
  });

  it('text from a record cannot break the table or open a link', () => {
    const odd = variant(first, 'dddddddddddddddd', (record) => {
      record.key = { ...record.key, os: 'Evil | OS [x](http://e) <b>' };
      record.facts['cuda-graph.supported'] = { value: 'a|b' };
    });
    const md = renderMarkdown(loaded([odd]), paths);
    const header = row(md, 'fact | claims');
    expect(cells(header)).toHaveLength(3);
    expect(cells(row(md, 'supported:'))).toHaveLength(3);
    expect(md).not.toMatch(/(?<!\\)\]\(http:\/\/e\)/);
    expect(md).not.toMatch(/(?<!\\)<b>/);
    expect(md).toContain('Evil \\| OS \\[x\\](http://e) \\<b\\>');
  });

  it('writes byte counts and times as the page does (formatValue): memory_total_bytes as 140 GiB, not 150109880320', () => {
    const md = renderMarkdown(loaded([second]), paths);
    const bytes = Number(second.sysinfo.memory_total_bytes);
    expect(bytes).toBeGreaterThan(1024 ** 3);
    const cell = cells(row(md, 'memory_total_bytes:'))[2]!;
    expect(cell).toMatch(new RegExp(`^\\[${formatValue(bytes, 'bytes')}\\]\\(`));
    expect(md).not.toContain(String(bytes));
    // The page writes the same text for the same fact.
    const data = pageData(loaded([second]), 'records');
    const fact = data.facts.flatMap((group) => group.rows).find((factRow) => data.strs[factRow.fact] === 'memory_total_bytes')!;
    expect(data.strs[fact.cells[0] as number]).toBe(formatValue(bytes, 'bytes'));
    // A fact named for seconds, where it has a value: with its unit, as the console writes it.
    const tdr = variant(second, 'eeeeeeeeeeeeeeee', (record) => {
      record.facts['watchdog.tdr_delay_s'] = { value: 2 };
    });
    expect(cells(row(renderMarkdown(loaded([tdr]), paths), 'tdr_delay_s:'))[2]).toMatch(/^\[2 s\]\(/);
  });

  it('a negative "allocated past free VRAM" (the bound stopped the fill first) says it stayed under free VRAM, not "-135 GiB" past it', () => {
    const stopped = variant(second, 'ffffffffffffffff', (record) => {
      record.metrics.push({ name: 'sysmem-fallback.past_free_vram_bytes', value: -145262510080, unit: 'bytes', attrs: { api: 'runtime' } });
    });
    const line = row(renderMarkdown(loaded([stopped]), paths), mdText('sysmem-fallback.past_free_vram_bytes'));
    expect(cells(line)[2]).toMatch(/^\[none: stopped 135 GiB under free VRAM\]\(/);
    expect(line).not.toContain('-135');
    // A positive one is the amount past.
    const spilled = variant(stopped, 'abababababababab', (record) => {
      record.metrics.at(-1)!.value = 2 * 1024 ** 3;
    });
    expect(cells(row(renderMarkdown(loaded([spilled]), paths), mdText('sysmem-fallback.past_free_vram_bytes')))[2]).toMatch(/^\[2 GiB\]\(/);
    // The page is told how a negative value reads.
    const data = pageData(loaded([stopped]), 'records');
    const metricRow = data.metrics.find((candidate) => data.strs[candidate.metric] === 'sysmem-fallback.past_free_vram_bytes')!;
    expect(data.strs[metricRow.negative!]).toBe('none: stopped {} under free VRAM');
  });

  it('no records: says so and how to make some', () => {
    expect(renderMarkdown([], paths)).toContain('No behaviour records yet under `records`');
  });
});

describe('the page data', () => {
  it('shows each probe from the newest record that measured it: a newer record of a few probes (an opt-in run) hides nothing of an older full one', async () => {
    // Newer than `second`, of its key, with only pinned-ceiling measured (as an opt-in run's record).
    const few = variant(second, 'f0f0f0f0f0f0f0f0', (record) => {
      record.observed.date = '2099-01-01T00:00:00.000Z';
      const only = (name: string) => name.startsWith('pinned-ceiling.');
      record.facts = Object.fromEntries(Object.entries(record.facts).filter(([name]) => only(name)));
      record.metrics = record.metrics
        .filter((measured) => only(measured.name))
        .map((measured) => ({ ...measured, value: typeof measured.value === 'number' ? measured.value + 1 : measured.value }));
      record.samples = record.samples.filter((sample) => sample.probe === 'pinned-ceiling');
      record.cells = record.cells.filter((cell) => cell.probe === 'pinned-ceiling');
    });
    const records = loaded([first, second, few]);
    const [column] = columnsOf(records);
    expect(column!.chosen.record.id).toBe(few.id);
    expect(column!.byProbe.get('pinned-ceiling')!.record.id).toBe(few.id);
    expect(column!.byProbe.get('pinned-vram')!.record.id).toBe(second.id);
    const data = pageData(records, 'records');
    const strs = data.strs;
    const metric = (name: string) => data.metrics.find((metricRow) => strs[metricRow.metric] === name)!.cells[0];
    // Each key metric from the newest record that has it: the full record's bandwidth, the few-probe record's ceiling.
    const bw = KEY_METRICS.find((k) => k.metric === 'transfer-bandwidth.bandwidth_gbps')!;
    expect(metric(bw.metric)?.[0]).toBe(pickMetric(second, bw)!.value);
    const ceiling = KEY_METRICS.find((k) => k.metric === 'pinned-ceiling.ceiling_bytes')!;
    expect(metric(ceiling.metric)?.[0]).toBe(pickMetric(few, ceiling)!.value);
    // The charts: pinned-vram's from the full record, with its samples; the ceiling's from the newer one.
    const detail = data.details[0]!;
    expect(detail.mem.map((chart) => strs[chart.probe])).toEqual(['pinned-vram', 'pinned-release', 'multi-process-pinned']);
    expect(detail.bw.flatMap((series) => series.points)).toHaveLength(
      second.metrics.filter((measured) => measured.name === 'transfer-bandwidth.bandwidth_gbps').length,
    );
    const fewCeilings = few.metrics.filter(
      (measured) => measured.name === 'pinned-ceiling.ceiling_bytes' && measured.attrs?.prefill_percent !== undefined,
    );
    expect(detail.ceil!.levels.map((level) => level[2]).sort()).toEqual(fewCeilings.map((measured) => measured.value).sort());
    // A fact only the full record measured is shown as its plain value, as the newest record's would be.
    const vram = data.facts
      .find((group) => strs[group.probe] === 'pinned-vram')!
      .rows.find((factRow) => strs[factRow.fact] === 'counts_as_vram')!;
    expect(typeof vram.cells[0]).toBe('number');
    expect(strs[vram.cells[0] as number]).toBe(String(second.facts['pinned-vram.counts_as_vram']!.value));
    // Read from a folder through the index, the same records give the same page, both shown records in full.
    const dir = tempDir('cm-report-few-');
    writeRecords(dir, [first, second, few]);
    const slim = loadRecords(dir, KEPT_KEY_METRICS);
    expect(pageData(slim, 'records')).toEqual(data);
  });

  it('charts the newest record of a column: memory per phase per source, bandwidth by size, latencies, the ceiling', () => {
    const data = pageData(loaded([first, second]), 'records');
    const strs = data.strs;
    expect(data.columns).toHaveLength(1);
    expect(strs[data.columns[0]!.link]).toBe(`records/${recordPath(second)}`);
    const detail = data.details[0]!;
    // pinned-vram: the largest size pinned, its control and the registered series; every phase and non-null source
    const vram = detail.mem.find((chart) => strs[chart.probe] === 'pinned-vram')!;
    const largest = Math.max(
      ...second.samples
        .filter((sample) => sample.probe === 'pinned-vram' && sample.attrs?.kind === 'pinned')
        .map((sample) => Number(sample.attrs!.size_bytes)),
    );
    const labels = vram.series.map((memorySeries) => strs[memorySeries.label]);
    expect(labels).toContain(`pinned · driver API · ${largest / 1024 ** 3} GiB`);
    expect(labels).toContain(`device · driver API · ${largest / 1024 ** 3} GiB`);
    expect(labels.some((label) => label!.startsWith('registered'))).toBe(true);
    const series = vram.series[labels.indexOf(`pinned · driver API · ${largest / 1024 ** 3} GiB`)]!;
    const samples = second.samples.filter(
      (sample) =>
        sample.probe === 'pinned-vram' &&
        sample.attrs?.kind === 'pinned' &&
        sample.attrs.api === 'driver' &&
        sample.attrs.size_bytes === largest,
    );
    expect(series.phases.map((phase) => strs[phase])).toEqual(samples.map((sample) => sample.phase));
    const rss = series.sources.map((source) => strs[source]).indexOf('subject_rss_bytes');
    expect(series.values[rss]).toEqual(samples.map((sample) => sample.readings.subject_rss_bytes ?? null));
    expect(detail.mem.map((chart) => strs[chart.probe])).toEqual(['pinned-vram', 'pinned-release', 'multi-process-pinned']);
    // bandwidth: one series per direction and memory, sizes ascending, values exact
    const bw = second.metrics.filter((metric) => metric.name === 'transfer-bandwidth.bandwidth_gbps');
    expect(detail.bw.flatMap((bwSeries) => bwSeries.points)).toHaveLength(bw.length);
    for (const bwSeries of detail.bw)
      expect(bwSeries.points.map((point) => point[0])).toEqual(
        [...bwSeries.points.map((point) => point[0])].sort((left, right) => left - right),
      );
    const h2d = bw.find(
      (metric) => metric.attrs?.direction === 'h2d' && metric.attrs.memory === 'pinned' && metric.attrs.size_bytes === 1048576,
    )!;
    expect(detail.bw.find((bwSeries) => strs[bwSeries.name] === 'H2D pinned')!.points[0]).toEqual([1048576, h2d.value]);
    expect(detail.sync.map(([name, value]) => [strs[name], value])).toEqual(
      ['min', 'p50', 'mean', 'p99'].map((name) => [
        name,
        second.metrics.find((metric) => metric.name === `sync-latency.${name}_us`)!.value,
      ]),
    );
    expect(detail.ev!.points.length).toBe(second.metrics.filter((metric) => metric.name === 'event-timing.elapsed_us').length);
    expect(detail.ceil!.levels.map((level) => level[0])).toEqual([0, 50, 90]);
  });

  it("sysmem-fallback's after-fill is a phase of its subject's series, not a series of one point (the committed 2026-12-02 record)", () => {
    const file = 'driver-580.159.04/linux-h200-docker-2026-12-02-5e9f09d1.json';
    const record = JSON.parse(readFileSync(path.join(repoRoot, 'records', file), 'utf8')) as BehaviourRecord;
    const data = pageData([{ file, record }], 'records');
    const mem = data.details[0]!.mem.find((chart) => data.strs[chart.probe] === 'sysmem-fallback')!;
    expect(mem.series.map((series) => series.phases.map((phase) => data.strs[phase]))).toEqual([
      ['baseline', 'after-fill', 'after-free', 'after-exit'],
    ]);
    // The fill shows: the subject's device memory grew by what it allocated.
    const subjectSeries = mem.series[0]!;
    const used = subjectSeries.values[subjectSeries.sources.map((source) => data.strs[source]).indexOf('subject_cu_used_bytes')]!;
    const allocated = record.metrics.find((metric) => metric.name === 'sysmem-fallback.allocated_bytes')!.value!;
    expect(used[1]! - used[0]!).toBeGreaterThanOrEqual(allocated);
  });

  it('memory charts name the deciding source; the ceiling rows say what each is (API, pre-fill or variant and round); a fact that changed from the previous driver is marked', () => {
    const newer = variant(first, 'c3c3c3c3c3c3c3c3', (record) => {
      record.key = { ...record.key, driver: '590.10' };
      record.facts['pinned-release.released'] = { value: 'on-exit' };
    });
    const data = pageData(loaded([first, newer]), 'records');
    const strs = data.strs;
    expect(data.details[0]!.mem.map((chart) => [strs[chart.probe], strs[chart.deciding as number]])).toEqual([
      ['pinned-vram', 'nvml_process_used_bytes'],
      ['pinned-release', 'subject_rss_bytes'],
      ['multi-process-pinned', 'nvml_process_used_bytes'],
    ]);
    const variants = data.details[0]!.ceil!.variants.map((variantRow) => [strs[variantRow[0]], variantRow[1]]);
    expect(variants).toEqual([
      ['no-reset', 1],
      ['reset', 1],
      ['no-reset', 2],
      ['reset', 2],
    ]);
    expect(data.columns.map((column) => column.prev)).toEqual([-1, 0]);
    const rows = data.facts.flatMap((group) =>
      group.rows.map((factRow) => [`${strs[group.probe]}.${strs[factRow.fact]}`, factRow.changed?.map(([i, was]) => [i, strs[was]])]),
    );
    expect(rows.filter(([, changed]) => changed)).toEqual([['pinned-release.released', [[1, 'on-free']]]]);
  });

  it('record text cannot end the page script: the embedded JSON escapes every <', () => {
    const odd = variant(first, 'ffffffffffffffff', (record) => {
      record.key = { ...record.key, os: '</script><script>alert(1)</script><!--' };
    });
    const html = renderReport(loaded([odd]), paths).html;
    expect(html).not.toContain('<script>alert(1)');
    expect(html.match(/<\/script>/g)).toHaveLength(2);
    const json = html.slice(html.indexOf('id="report-data">') + 'id="report-data">'.length, html.indexOf('</script>'));
    expect(JSON.parse(json).strs).toContain(keyText(odd.key));
  });

  it('the page stays small: the data of one record per column, strings kept once', () => {
    const records = Array.from({ length: 40 }, (_, i) =>
      variant(first, `${i}`.padStart(16, 'e'), (record) => {
        record.observed.date = `2026-12-${String((i % 28) + 1).padStart(2, '0')}T00:00:00.000Z`;
      }),
    );
    const one = renderReport(loaded([first]), paths).html.length;
    const forty = renderReport(loaded(records), paths).html.length;
    // forty records of one key: one column, so hardly bigger than one record's page
    expect(forty).toBeLessThan(one * 1.05);
  });
});

describe('loadRecords', () => {
  let dir: string;
  const write = (name: string, text: string) => {
    mkdirSync(path.join(dir, 'driver-1.0'), { recursive: true });
    writeFileSync(path.join(dir, 'driver-1.0', name), text);
    return path.join(dir, 'driver-1.0', name);
  };
  beforeAll(() => {
    dir = tempDir('cm-records-');
  });

  it('reads driver-*/*.json, sorted, and leaves the run folders one level deeper alone', () => {
    const folder = tempDir('cm-records-');
    writeRecords(folder, [second, first]);
    mkdirSync(path.join(folder, 'driver-580.159.04', 'h200-linux'));
    writeFileSync(path.join(folder, 'driver-580.159.04', 'h200-linux', 'summary.json'), '{"not":"a record"}');
    expect(loadRecords(folder).map((loadedRecord) => loadedRecord.file)).toEqual([recordPath(first), recordPath(second)].sort());
  });

  it.each([
    ['not JSON', '{"recordSchema": 1,', /: not JSON \(/],
    ['not a record', '{"targets": []}', /: no recordSchema \(is this a behaviour record\?\)/],
    [
      'a newer schema',
      JSON.stringify({ recordSchema: 99 }),
      /record schema 99; this cudamatrix reads schema 1 and older: upgrade cudamatrix/,
    ],
    [
      'a key without a GPU',
      JSON.stringify({ recordSchema: 1, id: 'x', key: { environment: 'linux', driver: '1', os: 'x', osBuild: null, container: null } }),
      /key\.gpu: expected a string, got undefined/,
    ],
    ['a fact without a value', null, /facts\["pinned-vram\.counts_as_vram"\]: expected \{value/],
    ['a metric with a text value', null, /metrics\[0\]: expected \{name, value: a number or null/],
    ['a sample without readings', null, /samples\[3\]: expected \{probe, phase, attrs\?, readings\}/],
  ])('%s: RECORD_INVALID naming the file and the place', (what, text, message) => {
    let body = text;
    if (body === null) {
      const record = structuredClone(first) as unknown as { facts: Record<string, unknown>; metrics: { value: unknown }[] };
      if (what.startsWith('a fact')) record.facts['pinned-vram.counts_as_vram'] = { reason: 'x' };
      else if (what.startsWith('a sample')) delete (record as unknown as { samples: { readings?: unknown }[] }).samples[3]!.readings;
      else record.metrics[0]!.value = 'fast';
      body = JSON.stringify(record);
    }
    const folder = tempDir('cm-records-');
    mkdirSync(path.join(folder, 'driver-1.0'));
    const file = path.join(folder, 'driver-1.0', 'x.json');
    writeFileSync(file, body);
    expect(() => loadRecords(folder)).toThrow(expect.objectContaining({ code: 'RECORD_INVALID', message: expect.stringMatching(message) }));
    expect(() => loadRecords(folder)).toThrow(file);
  });

  it('a records folder that is not there: USAGE, naming it', () => {
    write('ok.txt', '');
    expect(() => loadRecords(path.join(dir, 'nope'))).toThrow(
      expect.objectContaining({ code: 'USAGE', message: expect.stringContaining(path.join(dir, 'nope')) }),
    );
  });
});

describe('the committed report', () => {
  it('records/BEHAVIOUR.md and records/behaviour.html are what the committed records give', () => {
    const recordsDir = path.join(repoRoot, 'records');
    const out = recordsDir;
    const outputs = renderReport(loadRecords(recordsDir), reportPaths(recordsDir, out));
    expect(readFileSync(path.join(out, MARKDOWN_FILE), 'utf8'), 'run `pnpm cudamatrix report` and commit records/BEHAVIOUR.md').toBe(
      outputs.markdown,
    );
    expect(
      readFileSync(path.join(out, HTML_FILE), 'utf8') === outputs.html,
      'run `pnpm cudamatrix report` and commit records/behaviour.html',
    ).toBe(true);
  });
});

describe('the committed BEHAVIOUR.md', () => {
  it('links only to files that exist: the records (the newest ten of each column) and their event logs', () => {
    const md = readFileSync(path.join(repoRoot, 'records', MARKDOWN_FILE), 'utf8');
    const targets = [...new Set([...md.matchAll(/\]\(([^)]+)\)/g)].map((match) => decodeURI(match[1]!)))];
    const all = loadRecords(path.join(repoRoot, 'records'));
    const byColumn = new Map<string, typeof all>();
    for (const loadedRecord of all)
      byColumn.set(keyText(loadedRecord.record.key), [...(byColumn.get(keyText(loadedRecord.record.key)) ?? []), loadedRecord]);
    // BEHAVIOUR.md lists each column's newest ten records.
    const records = [...byColumn.values()].flatMap((list) =>
      [...list].sort((left, right) => (left.record.observed.date < right.record.observed.date ? 1 : -1)).slice(0, 10),
    );
    expect(targets.length).toBeGreaterThanOrEqual(records.length);
    for (const target of targets) expect(existsSync(path.join(repoRoot, 'records', target)), target).toBe(true);
    for (const loadedRecord of records) {
      expect(targets).toContain(`./${loadedRecord.file}`);
      if (loadedRecord.record.evidence) expect(targets).toContain(`./${path.relative('records', loadedRecord.record.evidence)}`);
    }
  });
});

function escapeRe(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
