/**
 * bench/verdict: how far the verdict on change can be trusted, on the committed records. Every
 * pair of committed records of one key and driver (the H200's, by default) is diffed as
 * `cudamatrix diff` does, with the other committed records as the key's history: a pair called
 * "changed" is a false change (one driver, one card). Then each pair again with the newer record
 * doctored by one known change, which must be caught:
 *   - pinned bandwidth 10 % lower at 256 MiB and more (every direction and fill),
 *   - sync latency 50 % higher (p50, p99, mean and min),
 *   - one fact with another value (pinned-release.released).
 * The peer, for the same pairs: the verdict before issue 32 (the catalogue's tolerance alone
 * decides), which is what the records' own calibration table predicted. And as `gate` judges: each
 * run (not one that shared the GPU) against all the others of its key and driver.
 *
 *   pnpm bench:verdict [--records DIR] [--out FILE]
 *
 * Prints a table; writes JSON (default results/runs/bench-verdict.json).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { formatTable } from '../core/text-table.ts';
import { diffRecords, type PairDiff } from '../behaviour/diff.ts';
import { keyText, type BehaviourRecord, type RecordedMetric } from '../behaviour/behaviour-record.ts';
import { readInput } from '../behaviour/read.ts';

const { values } = parseArgs({
  options: { records: { type: 'string' }, out: { type: 'string' } },
});
const dir = values.records ?? path.join('records', 'driver-580.159.04');
const out = values.out ?? path.join('results', 'runs', 'bench-verdict.json');

const all = readInput(dir, {}).records.map((loaded) => loaded.record);
// The largest group of one key and driver with metrics: the pairs of one driver on one card.
const groups = new Map<string, BehaviourRecord[]>();
for (const record of all) {
  if (record.metrics.length === 0) continue;
  const k = keyText(record.key);
  groups.set(k, [...(groups.get(k) ?? []), record]);
}
const [key, records] = [...groups].sort((left, right) => right[1].length - left[1].length)[0] ?? ['', []];
if (records.length < 3) {
  console.error(`bench/verdict: ${dir} has no key with three records or more`);
  process.exit(2);
}
records.sort((left, right) => (left.observed.date < right.observed.date ? -1 : 1));

type Injection = { name: string; edit: (record: BehaviourRecord) => number };
const MiB = 1024 * 1024;

/** Scales the series `which` picks, value and repetitions alike; returns how many it scaled. */
function scale(record: BehaviourRecord, which: (metric: RecordedMetric) => boolean, factor: number): number {
  let scaled = 0;
  for (const metric of record.metrics)
    if (metric.value !== null && which(metric)) {
      metric.value *= factor;
      if (metric.repeats) metric.repeats = metric.repeats.map((repetition) => repetition * factor);
      scaled++;
    }
  return scaled;
}

const injections: Injection[] = [
  {
    name: 'pinned bandwidth -10 % at >= 256 MiB',
    edit: (record) =>
      scale(
        record,
        (metric) =>
          metric.name === 'transfer-bandwidth.bandwidth_gbps' &&
          metric.attrs?.memory === 'pinned' &&
          Number(metric.attrs.size_bytes) >= 256 * MiB,
        0.9,
      ),
  },
  {
    name: 'sync latency +50 %',
    edit: (record) => scale(record, (metric) => metric.name.startsWith('sync-latency.') && metric.unit === 'us', 1.5),
  },
  {
    name: 'a fact changed',
    edit: (record) => {
      const released = record.facts['pinned-release.released'];
      if (!released) return 0;
      released.value = released.value === 'on-free' ? 'on-exit' : 'on-free';
      return 1;
    },
  },
];

/** The record with one known change, or null where it has nothing to change or `baseline` nothing to compare it with. */
function doctor(baseline: BehaviourRecord, record: BehaviourRecord, inj: Injection): BehaviourRecord | null {
  const copy = structuredClone(record);
  copy.id = `${record.id.slice(0, 12)}d0c7`;
  if (!inj.edit(copy)) return null;
  // Comparable only where the baseline has what was changed (an opt-in run's record has no copies).
  const touched = new Set([
    ...copy.metrics.filter((metric, i) => metric.value !== record.metrics[i]!.value).map((metric) => metric.name),
    ...Object.keys(copy.facts).filter((factName) => copy.facts[factName]!.value !== record.facts[factName]!.value),
  ]);
  const has = [...touched].some((name) => name in baseline.facts || baseline.metrics.some((metric) => metric.name === name));
  return has ? copy : null;
}

/** The verdict before issue 32: the catalogue's tolerance alone (no history, no repetitions). */
function oldVerdict(older: BehaviourRecord, newer: BehaviourRecord): boolean {
  const strip = (record: BehaviourRecord) => ({ ...record, metrics: record.metrics.map(({ repeats: _, ...metric }) => metric) });
  const pair = diffRecords(strip(older), strip(newer)).pairs[0]!;
  return pair.facts.length > 0 || pair.cells.length > 0 || pair.metricTally.flagged + pair.metricTally.undecided > 0;
}

const changes = (pairDiff: PairDiff) => [
  ...pairDiff.facts.map((fact) => `${fact.name}: ${String(fact.a)} -> ${String(fact.b)}`),
  ...pairDiff.cells.map((cell) => `${cell.probe}: ${cell.a} -> ${cell.b}`),
  ...pairDiff.metrics
    .filter((metric) => metric.flagged)
    .map(
      (metric) =>
        `${metric.name} ${JSON.stringify(metric.attrs)} moved ${((metric.move ?? 0) * 100).toFixed(1)} % (noise ±${(metric.noise * 100).toFixed(1)} %)`,
    ),
];

interface PairResult {
  a: string;
  b: string;
  /** b shared the GPU with another process (the neighbour run). */
  shared: boolean;
  changed: boolean;
  oldChanged: boolean;
  undecided: number;
  falseChanges: string[];
  caught: Record<string, boolean>;
}
const pairs: PairResult[] = [];
for (let i = 0; i < records.length; i++) {
  for (let j = i + 1; j < records.length; j++) {
    const [earlier, later] = [records[i]!, records[j]!];
    const history = records.filter((record) => record !== earlier && record !== later);
    const diff = diffRecords(earlier, later, { history });
    const pair = diff.pairs[0]!;
    const caught: Record<string, boolean> = {};
    // A run that shared the GPU is not judged (its moves are said, not called the driver's): injected there, nothing is caught, as it should be.
    const shared = (later.shared ?? []).some((cell) => cell.processes > 0);
    for (const inj of injections) {
      const bad = shared ? null : doctor(earlier, later, inj);
      if (!bad) continue;
      caught[inj.name] = diffRecords(earlier, bad, { history }).changed;
    }
    pairs.push({
      a: earlier.id.slice(0, 8),
      b: later.id.slice(0, 8),
      shared,
      changed: diff.changed,
      oldChanged: oldVerdict(earlier, later),
      undecided: pair.metricTally.undecided,
      falseChanges: diff.changed ? changes(pair) : [],
      caught,
    });
  }
}

// As `cudamatrix gate` judges a run: against every other run of its key and driver (their mean,
// their noise), each record in turn, the unchanged one and each injected change.
const gate: { id: string; changed: boolean; caught: Record<string, boolean> }[] = [];
for (const record of records) {
  if ((record.shared ?? []).some((cell) => cell.processes > 0)) continue;
  const others = records.filter((other) => other !== record);
  const caught: Record<string, boolean> = {};
  for (const inj of injections) {
    const bad = doctor(
      others.find((other) => other.metrics.length > 100)!,
      record,
      inj,
    );
    if (bad) caught[inj.name] = diffRecords(others, bad, { history: others }).changed;
  }
  gate.push({ id: record.id.slice(0, 8), changed: diffRecords(others, record, { history: others }).changed, caught });
}
const gateCount = (matches: (gateRun: (typeof gate)[number]) => boolean) => gate.filter(matches).length;

const count = (matches: (pair: PairResult) => boolean) => pairs.filter(matches).length;
const rows: string[][] = [
  [
    'one driver called changed (false changes)',
    `${count((pair) => pair.changed)} of ${pairs.length}`,
    `${count((pair) => pair.oldChanged)} of ${pairs.length}`,
    `${gateCount((gateRun) => gateRun.changed)} of ${gate.length}`,
  ],
  ...injections.map((inj) => [
    `caught: ${inj.name}`,
    `${count((pair) => pair.caught[inj.name] === true)} of ${count((pair) => inj.name in pair.caught)}`,
    '',
    `${gateCount((gateRun) => gateRun.caught[inj.name] === true)} of ${gateCount((gateRun) => inj.name in gateRun.caught)}`,
  ]),
  [
    'the newer run shared the GPU (said, not judged)',
    `${count((pair) => pair.shared)} of ${pairs.length}`,
    `${count((pair) => pair.shared && pair.oldChanged)} called changed`,
    '',
  ],
  [
    'series too noisy to tell, per pair (median)',
    String(pairs.map((pair) => pair.undecided).sort((left, right) => left - right)[pairs.length >> 1] ?? 0),
    '',
    '',
  ],
];
console.log(`bench/verdict: ${records.length} records of ${key} (${dir}), ${pairs.length} pairs\n`);
console.log(formatTable(['', 'pairs (diff)', 'pairs, catalogue tolerance alone (before)', 'each run against the others (gate)'], rows));
for (const pair of pairs.filter((candidate) => candidate.changed))
  console.log(`\nfalse change ${pair.a} -> ${pair.b}:\n  ${pair.falseChanges.join('\n  ')}`);
for (const inj of injections)
  for (const pair of pairs.filter((candidate) => candidate.caught[inj.name] === false))
    console.log(`missed ${inj.name}: ${pair.a} -> ${pair.b}`);
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify({ bench: 'verdict', records: dir, key, pairs, gate }, null, 2)}\n`);
console.log(`\nwrote ${out}`);
