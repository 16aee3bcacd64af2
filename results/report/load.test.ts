/** loadRecords keeps in full only what the report shows in full: the same page, in bounded memory. */
import { describe, expect, it } from 'vitest';
import { h200Records, loaded, variant, writeRecords } from '../../test/report-fixture.ts';
import { tempDir } from '../../test/helpers.ts';
import { renderReport } from './index.ts';
import { loadRecords } from './load.ts';
import { columnsOf, KEY_METRICS } from './table.ts';

describe('loadRecords', () => {
  it('gives the same BEHAVIOUR.md and behaviour.html as the records in full, keeping samples and every metric only for the record each column shows', async () => {
    const [a, b] = await h200Records();
    const day = (r: typeof a, date: string) => (r.observed = { ...r.observed, date });
    const records = [
      a,
      b,
      // Newer, of a's key: shown instead of a.
      variant(a, 'aaaa0001aaaaaaaa', (r) => day(r, '2026-12-05T00:00:00.000Z')),
      // Newest of all, but without facts: not shown, its column keeps the one with facts.
      variant(a, 'aaaa0002aaaaaaaa', (r) => (day(r, '2026-12-09T00:00:00.000Z'), (r.facts = {}))),
      // Older, of another key (another driver): shown only if it is the newest of its key.
      variant(b, 'bbbb0001bbbbbbbb', (r) => (day(r, '2026-10-01T00:00:00.000Z'), (r.key = { ...r.key, driver: '575.64.05' }))),
    ];
    const dir = tempDir('cm-load-');
    writeRecords(dir, records);
    const paths = { recordsLink: 'records', recordsDirName: 'results/records' };
    const slim = loadRecords(dir, new Set(KEY_METRICS.map((m) => m.metric)));
    expect(renderReport(slim, paths)).toEqual(renderReport(loaded(records.map((r) => structuredClone(r))), paths));
    const chosen = new Set(columnsOf(slim).map((c) => c.chosen.record.id));
    expect(chosen).toEqual(new Set(columnsOf(loaded(records)).map((c) => c.chosen.record.id)));
    for (const r of slim) {
      if (chosen.has(r.record.id)) expect(r.record.samples.length).toBeGreaterThan(0);
      else {
        expect(r.record.samples).toEqual([]);
        expect(r.record.metrics.length).toBeLessThan(a.metrics.length);
      }
    }
  });
});
