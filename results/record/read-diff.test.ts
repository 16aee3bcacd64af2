/** readInput for diff keeps in full only the record diff compares of each key: the same diff, in bounded memory. */
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/helpers.ts';
import { writeRecords } from '../../test/report-fixture.ts';
import { diffRecords } from './diff.ts';
import { doctored, h200Records } from './fixture.ts';
import { readInput } from './read.ts';

describe('readInput(folder, { forDiff })', () => {
  it('gives the same diff as the records in full; only the compared record of each key keeps its metrics and samples', async () => {
    const [r0, r1, r2, r3] = await h200Records();
    const a = tempDir('cm-read-diff-a-');
    const b = tempDir('cm-read-diff-b-');
    // Side a: three observations of one key, the newest without facts (not compared), one older.
    writeRecords(a, [r0!, r1!, doctored(r1!, 'ffff0000ffffffff', (c) => ((c.facts = {}), (c.observed = { ...c.observed, date: '2027-01-01T00:00:00.000Z' })))]);
    writeRecords(b, [r2!, r3!]);
    const full = diffRecords(readInput(a, {}).records.map((x) => x.record), readInput(b, {}).records.map((x) => x.record), { all: true });
    const sideA = readInput(a, {}, { forDiff: true }).records.map((x) => x.record);
    const sideB = readInput(b, {}, { forDiff: true }).records.map((x) => x.record);
    expect(diffRecords(sideA, sideB, { all: true })).toEqual(full);
    const compared = new Set(full.pairs.flatMap((p) => [p.a.id, p.b.id]));
    for (const r of [...sideA, ...sideB]) expect(r.metrics.length > 0, r.id).toBe(compared.has(r.id));
  });
});
