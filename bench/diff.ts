/**
 * bench/diff: `cudamatrix diff` over many pairs of records that all pair (the same key), so
 * that every one is compared in full: the record of 2026-11-29 against --pairs copies of the
 * other three H200 runs of that driver (171 metrics, 20 facts each), every metric value scaled
 * by up to ±10 % (seeded). bench/report times diffRecords over its synthetic records too, but
 * those have other keys (environment, GPU, driver), so that most of them pair with nothing.
 *
 * Per round, fresh copies (JSON round trip, not timed): first pass "cold" (nothing of the copies
 * seen yet), second pass "warm" (their series already keyed); median of the rounds. Budget 1 s.
 * The peer, in the same rounds: JSON.parse(JSON.stringify()) of the same copies (what reading
 * them back costs at the least), for a ratio.
 *
 *   pnpm bench:diff [--pairs 10000] [--rounds 5] [--out FILE] [--tiny]
 *
 * --tiny: 20 pairs, 1 round, budget not enforced (for the tests).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { diffRecords } from '../behaviour/diff.ts';
import { h200Records } from '../test/record-fixture.ts';
import { formatTable } from '../core/text-table.ts';
import { median } from './stats.ts';

const { values } = parseArgs({
  options: { pairs: { type: 'string' }, rounds: { type: 'string' }, out: { type: 'string' }, tiny: { type: 'boolean', default: false } },
});
const tiny = values.tiny!;
const pairs = Number(values.pairs ?? (tiny ? 20 : 10000));
const rounds = Number(values.rounds ?? (tiny ? 1 : 5));
if (![pairs, rounds].every((count) => Number.isInteger(count) && count >= 1)) {
  console.error('bench/diff: --pairs and --rounds take whole numbers >= 1');
  process.exit(2);
}

const [base, ...others] = await h200Records();
let seed = 12345;
const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
const template = Array.from({ length: 16 }, (_, i) => {
  const record = structuredClone(others[i % others.length]!);
  for (const metric of record.metrics) if (metric.value !== null) metric.value *= 1 + (random() - 0.5) / 5;
  return JSON.stringify(record);
});

const cold: number[] = [];
const warm: number[] = [];
const peer: number[] = [];
let changed = 0;
for (let round = 0; round < rounds; round++) {
  const copies = Array.from({ length: pairs }, (_, i) => JSON.parse(template[i % template.length]!));
  const t0 = performance.now();
  for (const copy of copies) JSON.parse(JSON.stringify(copy));
  peer.push(performance.now() - t0);
  for (const pass of [cold, warm]) {
    const t0 = performance.now();
    changed = 0;
    for (const copy of copies) if (diffRecords(base!, copy).changed) changed++;
    pass.push(performance.now() - t0);
  }
}
const ok = (ms: number) => (ms <= 1000 ? 'within' : 'OVER BUDGET');
const medians = { peer: median(peer), cold: median(cold), warm: median(warm) };
console.log(
  `${pairs} pairs of full H200 records (171 metrics, 20 facts), the same key, values varied by up to ±10 %; median of ${rounds} rounds (${process.version}, ${process.platform}/${process.arch})\n`,
);
console.log(
  formatTable(
    ['what', 'ms', 'ratio to peer', 'budget'],
    [
      ['peer: JSON.parse(JSON.stringify()) of the same records', medians.peer.toFixed(0), '1.00', ''],
      [
        'diffRecords, cold (fresh records)',
        medians.cold.toFixed(0),
        (medians.cold / medians.peer).toFixed(2),
        `1000 ms: ${ok(medians.cold)}`,
      ],
      [
        'diffRecords, warm (series keyed)',
        medians.warm.toFixed(0),
        (medians.warm / medians.peer).toFixed(2),
        `1000 ms: ${ok(medians.warm)}`,
      ],
    ],
  ),
);
console.log(
  `\n${changed} of ${pairs} pairs flagged as changed (values varied by up to ±10 %, beyond several tolerances)${tiny ? '; budget not enforced (--tiny)' : ''}`,
);
const out = path.resolve(values.out ?? path.join(import.meta.dirname, 'out', 'diff.json'));
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify({ bench: 'diff', pairs, rounds, tiny, node: process.version, samplesMs: { peer, cold, warm }, medianMs: medians, changed, budgetMs: 1000, enforced: !tiny }, null, 2)}\n`,
);
process.exitCode = !tiny && medians.cold > 1000 ? 1 : 0;
