/** loadRecords keeps in full only what the report shows in full: the same page, in bounded memory. */
import { existsSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { INDEX_FORMAT, indexFileOf } from '../behaviour/records-index.ts';
import { readInput } from '../behaviour/read.ts';
import { h200Records, loaded, variant, writeRecords } from '../test/report-fixture.ts';
import { tempDir } from '../test/helpers.ts';
import { renderReport } from './write-report.ts';
import { loadRecords } from './load.ts';
import { columnsOf } from './behaviour-table.ts';
import { KEPT_KEY_METRICS } from './key-metrics.ts';

describe('loadRecords', () => {
  it('gives the same BEHAVIOUR.md and behaviour.html as the records in full, keeping samples and every metric only for the record each column shows', async () => {
    const [first, second] = await h200Records();
    const day = (record: typeof first, date: string) => (record.observed = { ...record.observed, date });
    const records = [
      first,
      second,
      // Newer, of first's key: shown instead of first.
      variant(first, 'aaaa0001aaaaaaaa', (record) => day(record, '2026-12-05T00:00:00.000Z')),
      // Newest of all, but without facts: not shown, its column keeps the one with facts.
      variant(first, 'aaaa0002aaaaaaaa', (record) => (day(record, '2026-12-09T00:00:00.000Z'), (record.facts = {}))),
      // Older, of another key (another driver): shown only if it is the newest of its key.
      variant(
        second,
        'bbbb0001bbbbbbbb',
        (record) => (day(record, '2026-10-01T00:00:00.000Z'), (record.key = { ...record.key, driver: '575.64.05' })),
      ),
    ];
    const dir = tempDir('cm-load-');
    writeRecords(dir, records);
    const paths = { recordsLink: 'records', recordsDirName: 'records' };
    const slim = loadRecords(dir, KEPT_KEY_METRICS);
    expect(renderReport(slim, paths)).toEqual(renderReport(loaded(records.map((record) => structuredClone(record))), paths));
    const chosen = new Set(columnsOf(slim).map((column) => column.chosen.record.id));
    expect(chosen).toEqual(new Set(columnsOf(loaded(records)).map((column) => column.chosen.record.id)));
    for (const kept of slim) {
      if (chosen.has(kept.record.id)) expect(kept.record.samples.length).toBeGreaterThan(0);
      else {
        expect(kept.record.samples).toEqual([]);
        expect(kept.record.metrics.length).toBeLessThan(first.metrics.length);
      }
    }
  });
});

describe('the records folder', () => {
  it('refuses a driver folder given for it (record files, no driver-<version>/), naming the folder above: an empty report would replace the committed one', async () => {
    const [record] = await h200Records();
    const dir = tempDir('cm-records-');
    const [file] = writeRecords(dir, [record]);
    const driverFolder = path.dirname(file!);
    expect(() => loadRecords(driverFolder, KEPT_KEY_METRICS)).toThrow(
      `${driverFolder} holds record files itself, not driver-<version>/ folders: pass the records folder above it (--records-dir ${dir})`,
    );
    // An empty folder is a project with no records yet: no error (a README and hidden files aside).
    const empty = tempDir('cm-records-empty-');
    writeFileSync(path.join(empty, 'README.md'), '# records\n');
    writeFileSync(path.join(empty, '.gitkeep'), '');
    expect(loadRecords(empty, KEPT_KEY_METRICS)).toEqual([]);
    // A folder of other things (the results folder, docs/) is no records folder.
    const other = tempDir('cm-records-other-');
    for (const name of ['BEHAVIOUR.md', 'matrix.yaml', 'runs']) writeFileSync(path.join(other, name), '');
    expect(() => loadRecords(other, KEPT_KEY_METRICS)).toThrow(
      `${other} is not a records folder: it holds no driver-<version>/ folders, but 3 other entries (BEHAVIOUR.md, matrix.yaml, runs); pass the folder that holds driver-<version>/*.json`,
    );
  });
});

describe('the records index', () => {
  const keep = KEPT_KEY_METRICS;
  const paths = { recordsLink: 'records', recordsDirName: 'records' };

  async function folder() {
    const [first, second] = await h200Records();
    const records = [
      first,
      second,
      variant(first, 'aaaa0001aaaaaaaa', (record) => (record.observed = { ...record.observed, date: '2026-12-05T00:00:00.000Z' })),
      variant(second, 'bbbb0001bbbbbbbb', (record) => (record.key = { ...record.key, driver: '575.64.05' })),
    ];
    const dir = tempDir('cm-index-');
    writeRecords(dir, records);
    return { dir, records, expected: renderReport(loaded(records.map((record) => structuredClone(record))), paths) };
  }

  it('a folder without one (as every folder before it) is read in full and gets one; then only the shown records are read', async () => {
    const { dir, records, expected } = await folder();
    const driverDirs = readdirSync(dir).map((name) => path.join(dir, name));
    for (const driverDir of driverDirs) expect(existsSync(indexFileOf(driverDir))).toBe(false);
    // Whole seconds, which utimes sets back exactly below.
    for (const driverDir of driverDirs)
      for (const name of readdirSync(driverDir)) utimesSync(path.join(driverDir, name), 1_700_000_000, 1_700_000_000);
    const cold = loadRecords(dir, keep);
    expect(renderReport(cold, paths)).toEqual(expected);
    for (const driverDir of driverDirs) expect(existsSync(indexFileOf(driverDir))).toBe(true);
    // A record no column shows, overwritten in place with the same size and times: the index
    // still holds it, so it is not read (garbage in it would stop a read).
    const shown = new Set(columnsOf(cold).map((column) => column.chosen.file));
    const hidden = cold.find((candidate) => !shown.has(candidate.file))!;
    const file = path.join(dir, hidden.file);
    const st = statSync(file);
    writeFileSync(file, 'x'.repeat(st.size));
    utimesSync(file, 1_700_000_000, 1_700_000_000);
    expect([statSync(file, { bigint: true }).mtimeNs, statSync(file).size]).toEqual([1_700_000_000_000_000_000n, st.size]);
    expect(renderReport(loadRecords(dir, keep), paths)).toEqual(expected);
    expect(records).toHaveLength(4);
  });

  it('a record changed since (its size, time or inode) is read again; an index that is not JSON is rebuilt', async () => {
    const { dir, records } = await folder();
    loadRecords(dir, keep);
    const changed = records.map((record) => structuredClone(record));
    changed[0]!.facts['pinned-vram.counts_as_vram']!.value = true;
    writeRecords(dir, [changed[0]!]);
    const expected = renderReport(loaded(changed.map((record) => structuredClone(record))), paths);
    expect(renderReport(loadRecords(dir, keep), paths)).toEqual(expected);
    for (const name of readdirSync(dir)) writeFileSync(indexFileOf(path.join(dir, name)), '{not json');
    expect(renderReport(loadRecords(dir, keep), paths)).toEqual(expected);
    expect(JSON.parse(readFileSync(indexFileOf(path.join(dir, readdirSync(dir)[0]!)), 'utf8')).format).toBe(INDEX_FORMAT);
  });

  it('diff and report share it: a diff that rewrites it (a record changed) keeps what report reads of the others', async () => {
    const { dir, records } = await folder();
    const driver = path.join(dir, 'driver-580.159.04');
    readInput(driver, {}, { forDiff: true, keepMetrics: keep });
    const changed = records.map((record) => structuredClone(record));
    changed[2]!.facts['pinned-vram.counts_as_vram']!.value = true;
    writeRecords(dir, [changed[2]!]);
    const before = readFileSync(indexFileOf(driver), 'utf8');
    readInput(driver, {}, { forDiff: true, keepMetrics: keep });
    expect(readFileSync(indexFileOf(driver), 'utf8')).not.toBe(before);
    expect(renderReport(loadRecords(dir, keep), paths)).toEqual(
      renderReport(loaded(changed.map((record) => structuredClone(record))), paths),
    );
  });
});
