/** readInput for diff keeps in full only the record diff compares of each key: the same diff, in bounded memory. */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { KEPT_KEY_METRICS } from '../report/behaviour-table.ts';
import { indexFileOf } from './records-index.ts';
import { tempDir } from '../test/helpers.ts';
import { writeRecords } from '../test/report-fixture.ts';
import { comparedRecords, diffRecords } from './diff.ts';
import { doctored, h200Records } from '../test/record-fixture.ts';
import { readInput } from './read.ts';

describe('readInput(folder, { forDiff })', () => {
  it('gives the same diff as the records in full; only the records diff needs (compared, and the runs that measure the noise) keep their metrics', async () => {
    const [r0, r1, r2, r3] = await h200Records();
    const a = tempDir('cm-read-diff-a-');
    const b = tempDir('cm-read-diff-b-');
    // Side a: three observations of one key, the newest without facts (not compared), one older.
    writeRecords(a, [
      r0!,
      r1!,
      doctored(r1!, 'ffff0000ffffffff', (c) => ((c.facts = {}), (c.observed = { ...c.observed, date: '2027-01-01T00:00:00.000Z' }))),
    ]);
    writeRecords(b, [r2!, r3!]);
    const full = diffRecords(
      readInput(a, {}).records.map((x) => x.record),
      readInput(b, {}).records.map((x) => x.record),
      { all: true },
    );
    const sideA = readInput(a, {}, { forDiff: true }).records.map((x) => x.record);
    const sideB = readInput(b, {}, { forDiff: true }).records.map((x) => x.record);
    expect(diffRecords(sideA, sideB, { all: true })).toEqual(full);
    const compared = new Set(full.pairs.flatMap((p) => [p.a.id, p.b.id]));
    const needed = new Set(
      [readInput(a, {}), readInput(b, {})].flatMap((i) => [...comparedRecords(i.records.map((x) => x.record))].map((r) => r.id)),
    );
    for (const id of compared) expect(needed.has(id)).toBe(true);
    // The record without facts is not compared, but it is one of the newest runs of its driver and kernel: read whole for the noise.
    expect(needed.has('ffff0000ffffffff')).toBe(true);
    for (const r of [...sideA, ...sideB]) expect(r.metrics.length > 0, r.id).toBe(needed.has(r.id));
    // Through the records index (as `cudamatrix diff` reads): the same, without an index (made
    // then) and with it, the compared records whole.
    const keepMetrics = KEPT_KEY_METRICS;
    for (const round of ['no index yet', 'with the index']) {
      expect(existsSync(indexFileOf(path.join(a, 'driver-580.159.04'))), round).toBe(round === 'with the index');
      const ia = readInput(a, {}, { forDiff: true, keepMetrics }).records;
      const ib = readInput(b, {}, { forDiff: true, keepMetrics }).records;
      expect(
        diffRecords(
          ia.map((x) => x.record),
          ib.map((x) => x.record),
          { all: true },
        ),
        round,
      ).toEqual(full);
      expect(
        ia.map((x) => x.file),
        round,
      ).toEqual(readInput(a, {}).records.map((x) => x.file));
      for (const x of [...ia, ...ib])
        if (compared.has(x.record.id)) expect(x.record, round).toEqual(JSON.parse(readFileSync(x.file!, 'utf8')));
    }
  });
});
