/**
 * bench/diff: `cudamatrix diff` over many pairs of records that all pair (the same key), so
 * that every one is compared in full: the record of 2026-11-29 against --pairs copies of the
 * other three H200 runs of that driver (171 metrics, 20 facts each), every metric value scaled
 * by up to ±10 % (seeded). bench/report times diffRecords over its synthetic records too, but
 * those have other keys (environment, GPU, driver), so that most of them pair with nothing.
 *
 * Per round, fresh copies (JSON round trip, not timed): first pass "cold" (nothing of the copies
 * seen yet), second pass "warm" (their series already keyed); median of the rounds. Budget 1 s.
 *
 *   pnpm exec tsx bench/diff.ts [--pairs 10000] [--rounds 5]
 */
import { parseArgs } from 'node:util';
import { diffRecords } from '../results/record/diff.ts';
import { h200Records } from '../results/record/fixture.ts';
import { median } from './stats.ts';

const { values } = parseArgs({ options: { pairs: { type: 'string', default: '10000' }, rounds: { type: 'string', default: '5' } } });
const pairs = Number(values.pairs);
const rounds = Number(values.rounds);
if (![pairs, rounds].every((n) => Number.isInteger(n) && n >= 1)) {
  console.error('bench/diff: --pairs and --rounds take whole numbers >= 1');
  process.exit(2);
}

const [base, ...others] = await h200Records();
let seed = 12345;
const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
const template = Array.from({ length: 16 }, (_, i) => {
  const r = structuredClone(others[i % others.length]!);
  for (const m of r.metrics) if (m.value !== null) m.value *= 1 + (random() - 0.5) / 5;
  return JSON.stringify(r);
});

const cold: number[] = [];
const warm: number[] = [];
let changed = 0;
for (let round = 0; round < rounds; round++) {
  const copies = Array.from({ length: pairs }, (_, i) => JSON.parse(template[i % template.length]!));
  for (const pass of [cold, warm]) {
    const t0 = performance.now();
    changed = 0;
    for (const c of copies) if (diffRecords(base!, c).changed) changed++;
    pass.push(performance.now() - t0);
  }
}
const ok = (ms: number) => (ms <= 1000 ? 'within' : 'OVER BUDGET');
console.log(`${pairs} pairs of full H200 records (171 metrics, 20 facts), the same key, values varied by up to ±10 %; median of ${rounds} rounds (${process.version}, ${process.platform}/${process.arch})`);
console.log(`cold (fresh records): ${median(cold).toFixed(0)} ms (${ok(median(cold))} the 1 s budget); warm: ${median(warm).toFixed(0)} ms; ${changed} of ${pairs} flagged as changed`);
