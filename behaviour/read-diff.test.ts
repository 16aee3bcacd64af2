/** readInput for diff keeps in full only the record diff compares of each key: the same diff, in bounded memory. */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { KEPT_KEY_METRICS } from '../report/key-metrics.ts';
import { indexFileOf } from './records-index.ts';
import { tempDir } from '../test/helpers.ts';
import { writeRecords } from '../test/report-fixture.ts';
import { comparedRecords, diffRecords } from './diff.ts';
import { doctored, h200Records } from '../test/record-fixture.ts';
import { readInput } from './read.ts';

describe('readInput(folder, { forDiff })', () => {
  it('gives the same diff as the records in full; only the records diff needs (compared, and the runs that measure the noise) keep their metrics', async () => {
    const [r0, r1, r2, r3] = await h200Records();
    const dirA = tempDir('cm-read-diff-a-');
    const dirB = tempDir('cm-read-diff-b-');
    // Side a: three observations of one key, the newest without facts (not compared), one older.
    writeRecords(dirA, [
      r0!,
      r1!,
      doctored(
        r1!,
        'ffff0000ffffffff',
        (record) => ((record.facts = {}), (record.observed = { ...record.observed, date: '2027-01-01T00:00:00.000Z' })),
      ),
    ]);
    writeRecords(dirB, [r2!, r3!]);
    const full = diffRecords(
      readInput(dirA, {}).records.map((inputRecord) => inputRecord.record),
      readInput(dirB, {}).records.map((inputRecord) => inputRecord.record),
      { all: true },
    );
    const sideA = readInput(dirA, {}, { forDiff: true }).records.map((inputRecord) => inputRecord.record);
    const sideB = readInput(dirB, {}, { forDiff: true }).records.map((inputRecord) => inputRecord.record);
    expect(diffRecords(sideA, sideB, { all: true })).toEqual(full);
    const compared = new Set(full.pairs.flatMap((pair) => [pair.a.id, pair.b.id]));
    const needed = new Set(
      [readInput(dirA, {}), readInput(dirB, {})].flatMap((input) =>
        [...comparedRecords(input.records.map((inputRecord) => inputRecord.record))].map((record) => record.id),
      ),
    );
    for (const id of compared) expect(needed.has(id)).toBe(true);
    // The record without facts is not compared, but it is one of the newest runs of its driver and kernel: read whole for the noise.
    expect(needed.has('ffff0000ffffffff')).toBe(true);
    for (const record of [...sideA, ...sideB]) expect(record.metrics.length > 0, record.id).toBe(needed.has(record.id));
    // Through the records index (as `cudamatrix diff` reads): the same, without an index (made
    // then) and with it, the compared records whole.
    const keepMetrics = KEPT_KEY_METRICS;
    for (const round of ['no index yet', 'with the index']) {
      expect(existsSync(indexFileOf(path.join(dirA, 'driver-580.159.04'))), round).toBe(round === 'with the index');
      const ia = readInput(dirA, {}, { forDiff: true, keepMetrics }).records;
      const ib = readInput(dirB, {}, { forDiff: true, keepMetrics }).records;
      expect(
        diffRecords(
          ia.map((inputRecord) => inputRecord.record),
          ib.map((inputRecord) => inputRecord.record),
          { all: true },
        ),
        round,
      ).toEqual(full);
      expect(
        ia.map((inputRecord) => inputRecord.file),
        round,
      ).toEqual(readInput(dirA, {}).records.map((inputRecord) => inputRecord.file));
      for (const inputRecord of [...ia, ...ib])
        if (compared.has(inputRecord.record.id))
          expect(inputRecord.record, round).toEqual(JSON.parse(readFileSync(inputRecord.file!, 'utf8')));
    }
  });
});
