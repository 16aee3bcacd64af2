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

const all = readInput(dir, {}).records.map((r) => r.record);
// The largest group of one key and driver with metrics: the pairs of one driver on one card.
const groups = new Map<string, BehaviourRecord[]>();
for (const r of all) {
  if (r.metrics.length === 0) continue;
  const k = keyText(r.key);
  groups.set(k, [...(groups.get(k) ?? []), r]);
}
const [key, records] = [...groups].sort((x, y) => y[1].length - x[1].length)[0] ?? ['', []];
if (records.length < 3) {
  console.error(`bench/verdict: ${dir} has no key with three records or more`);
  process.exit(2);
}
records.sort((x, y) => (x.observed.date < y.observed.date ? -1 : 1));

type Injection = { name: string; edit: (r: BehaviourRecord) => number };
const MiB = 1024 * 1024;

/** Scales the series `which` picks, value and repetitions alike; returns how many it scaled. */
function scale(r: BehaviourRecord, which: (m: RecordedMetric) => boolean, factor: number): number {
  let n = 0;
  for (const m of r.metrics)
    if (m.value !== null && which(m)) {
      m.value *= factor;
      if (m.repeats) m.repeats = m.repeats.map((v) => v * factor);
      n++;
    }
  return n;
}

const injections: Injection[] = [
  {
    name: 'pinned bandwidth -10 % at >= 256 MiB',
    edit: (r) =>
      scale(
        r,
        (m) => m.name === 'transfer-bandwidth.bandwidth_gbps' && m.attrs?.memory === 'pinned' && Number(m.attrs.size_bytes) >= 256 * MiB,
        0.9,
      ),
  },
  {
    name: 'sync latency +50 %',
    edit: (r) => scale(r, (m) => m.name.startsWith('sync-latency.') && m.unit === 'us', 1.5),
  },
  {
    name: 'a fact changed',
    edit: (r) => {
      const f = r.facts['pinned-release.released'];
      if (!f) return 0;
      f.value = f.value === 'on-free' ? 'on-exit' : 'on-free';
      return 1;
    },
  },
];

/** The record with one known change, or null where it has nothing to change or `a` nothing to compare it with. */
function doctor(a: BehaviourRecord, r: BehaviourRecord, inj: Injection): BehaviourRecord | null {
  const copy = structuredClone(r);
  copy.id = `${r.id.slice(0, 12)}d0c7`;
  if (!inj.edit(copy)) return null;
  // Comparable only where a has what was changed (an opt-in run's record has no copies).
  const touched = new Set([
    ...copy.metrics.filter((m, i) => m.value !== r.metrics[i]!.value).map((m) => m.name),
    ...Object.keys(copy.facts).filter((n) => copy.facts[n]!.value !== r.facts[n]!.value),
  ]);
  const has = [...touched].some((n) => n in a.facts || a.metrics.some((m) => m.name === n));
  return has ? copy : null;
}

/** The verdict before issue 32: the catalogue's tolerance alone (no history, no repetitions). */
function oldVerdict(a: BehaviourRecord, b: BehaviourRecord): boolean {
  const strip = (r: BehaviourRecord) => ({ ...r, metrics: r.metrics.map(({ repeats: _, ...m }) => m) });
  const p = diffRecords(strip(a), strip(b)).pairs[0]!;
  return p.facts.length > 0 || p.cells.length > 0 || p.metricTally.flagged + p.metricTally.undecided > 0;
}

const changes = (p: PairDiff) => [
  ...p.facts.map((f) => `${f.name}: ${String(f.a)} -> ${String(f.b)}`),
  ...p.cells.map((c) => `${c.probe}: ${c.a} -> ${c.b}`),
  ...p.metrics
    .filter((m) => m.flagged)
    .map(
      (m) => `${m.name} ${JSON.stringify(m.attrs)} moved ${((m.move ?? 0) * 100).toFixed(1)} % (noise ±${(m.noise * 100).toFixed(1)} %)`,
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
    const [a, b] = [records[i]!, records[j]!];
    const history = records.filter((r) => r !== a && r !== b);
    const d = diffRecords(a, b, { history });
    const p = d.pairs[0]!;
    const caught: Record<string, boolean> = {};
    // A run that shared the GPU is not judged (its moves are said, not called the driver's): injected there, nothing is caught, as it should be.
    const shared = (b.shared ?? []).some((c) => c.processes > 0);
    for (const inj of injections) {
      const bad = shared ? null : doctor(a, b, inj);
      if (!bad) continue;
      caught[inj.name] = diffRecords(a, bad, { history }).changed;
    }
    pairs.push({
      a: a.id.slice(0, 8),
      b: b.id.slice(0, 8),
      shared,
      changed: d.changed,
      oldChanged: oldVerdict(a, b),
      undecided: p.metricTally.undecided,
      falseChanges: d.changed ? changes(p) : [],
      caught,
    });
  }
}

// As `cudamatrix gate` judges a run: against every other run of its key and driver (their mean,
// their noise), each record in turn, the unchanged one and each injected change.
const gate: { id: string; changed: boolean; caught: Record<string, boolean> }[] = [];
for (const b of records) {
  if ((b.shared ?? []).some((c) => c.processes > 0)) continue;
  const others = records.filter((r) => r !== b);
  const caught: Record<string, boolean> = {};
  for (const inj of injections) {
    const bad = doctor(
      others.find((r) => r.metrics.length > 100)!,
      b,
      inj,
    );
    if (bad) caught[inj.name] = diffRecords(others, bad, { history: others }).changed;
  }
  gate.push({ id: b.id.slice(0, 8), changed: diffRecords(others, b, { history: others }).changed, caught });
}
const gateCount = (f: (g: (typeof gate)[number]) => boolean) => gate.filter(f).length;

const count = (f: (p: PairResult) => boolean) => pairs.filter(f).length;
const rows: string[][] = [
  [
    'one driver called changed (false changes)',
    `${count((p) => p.changed)} of ${pairs.length}`,
    `${count((p) => p.oldChanged)} of ${pairs.length}`,
    `${gateCount((g) => g.changed)} of ${gate.length}`,
  ],
  ...injections.map((inj) => [
    `caught: ${inj.name}`,
    `${count((p) => p.caught[inj.name] === true)} of ${count((p) => inj.name in p.caught)}`,
    '',
    `${gateCount((g) => g.caught[inj.name] === true)} of ${gateCount((g) => inj.name in g.caught)}`,
  ]),
  [
    'the newer run shared the GPU (said, not judged)',
    `${count((p) => p.shared)} of ${pairs.length}`,
    `${count((p) => p.shared && p.oldChanged)} called changed`,
    '',
  ],
  [
    'series too noisy to tell, per pair (median)',
    String(pairs.map((p) => p.undecided).sort((x, y) => x - y)[pairs.length >> 1] ?? 0),
    '',
    '',
  ],
];
console.log(`bench/verdict: ${records.length} records of ${key} (${dir}), ${pairs.length} pairs\n`);
console.log(formatTable(['', 'pairs (diff)', 'pairs, catalogue tolerance alone (before)', 'each run against the others (gate)'], rows));
for (const p of pairs.filter((x) => x.changed)) console.log(`\nfalse change ${p.a} -> ${p.b}:\n  ${p.falseChanges.join('\n  ')}`);
for (const inj of injections)
  for (const p of pairs.filter((x) => x.caught[inj.name] === false)) console.log(`missed ${inj.name}: ${p.a} -> ${p.b}`);
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify({ bench: 'verdict', records: dir, key, pairs, gate }, null, 2)}\n`);
console.log(`\nwrote ${out}`);
