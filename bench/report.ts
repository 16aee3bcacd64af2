/**
 * bench/report: `cudamatrix report` and `cudamatrix diff` over many behaviour records.
 *
 * The records: --records synthetic ones (default 10,000), each a full copy of the real H200
 * record of 2026-11-29 (made from its event log with recordsFromEvents, as `cudamatrix record`
 * does) with another key and other values: environment (5: linux, wsl2, wddm, tcc, mcdm), GPU
 * (5), driver version (8), so --keys observation keys (default 200) with the rest of the
 * records as further observations of them; every metric value and memory reading scaled by up
 * to ±10 %, its own run id, id and date; about 1 in 10 records with pinned-release.released
 * flipped (a conflict with the other records of its key). Seeded: the same every run.
 *
 * Timed in this process, alternated rounds after a warm-up (medians):
 * - peer: JSON.parse(JSON.stringify(record)) of every record: what merely copying the records
 *   through JSON once costs, the least any tool reading them does.
 * - report: renderReport of the loaded records, both outputs (BEHAVIOUR.md and behaviour.html):
 *   everything `cudamatrix report` does after reading the files. Budget 1 s.
 * - diff A B: diffRecords (behaviour/diff.ts) of the records split in two halves
 *   (alternate observations of each key), as `cudamatrix diff` over two folders of them: it
 *   pairs the newest record of each key without the driver on each side. Budget 1 s.
 * - diff, every pair: diffRecords of each record against the next observation of its key
 *   (record i and i + keys: the same key, so every pair is compared in full): records - keys
 *   pairs. Budget 1 s.
 * Both cold: every record's series keyed afresh, as for records just read from their files.
 * - load: loadRecords of the records written to a temp folder (compact JSON, as files), against
 *   readFileSync + JSON.parse of the same files; reported, not budgeted: reading the files is
 *   bound by JSON.parse, which the peer measures.
 * And the page's size against 2 MB.
 *
 *   pnpm bench:report [--records 10000] [--keys 200] [--rounds 5] [--no-load] [--page FILE] [--out FILE] [--tiny]
 *
 * --page FILE: also write the page of the synthetic records there (to look at it in a browser).
 *
 * --tiny: 50 records over 10 keys, 1 round, budgets not enforced (for the tests).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { diffRecords } from '../behaviour/diff.ts';
import { recordPath, type BehaviourRecord } from '../behaviour/behaviour-record.ts';
import { renderReport } from '../report/write-report.ts';
import { loadRecords, recordFiles, type LoadedRecord } from '../report/load.ts';
import { columnsOf } from '../report/behaviour-table.ts';
import { formatTable } from '../core/text-table.ts';
import { tempDir } from '../test/helpers.ts';
import { h200Records } from '../test/report-fixture.ts';
import { median, roundOrder } from './stats.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string' },
    keys: { type: 'string' },
    rounds: { type: 'string' },
    page: { type: 'string' },
    'no-load': { type: 'boolean', default: false },
    out: { type: 'string' },
    tiny: { type: 'boolean', default: false },
  },
});
const tiny = values.tiny!;
const count = Number(values.records ?? (tiny ? 50 : 10_000));
const keys = Number(values.keys ?? (tiny ? 10 : 200));
const rounds = Number(values.rounds ?? (tiny ? 1 : 5));
if (![count, keys, rounds].every((setting) => Number.isInteger(setting) && setting >= 1) || keys > 200) {
  console.error(
    'bench/report: --records, --keys and --rounds take whole numbers >= 1 (--keys at most 200: 5 environments x 5 GPUs x 8 drivers)',
  );
  process.exit(2);
}
const BUDGET_MS = 1000;
const BUDGET_PAGE_BYTES = 2 * 1024 * 1024;

const base = (await h200Records())[0]!;

/** A small seeded generator (mulberry32): the same records every run. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

const ENVIRONMENTS = ['linux', 'wsl2', 'wddm', 'tcc', 'mcdm'];
const GPUS = ['NVIDIA H200', 'NVIDIA GeForce RTX 4090', 'NVIDIA RTX A6000', 'NVIDIA GeForce RTX 3060', 'NVIDIA L40S'];
const DRIVERS = ['550.163.01', '560.94', '566.36', '570.172.08', '572.83', '575.64.05', '576.88', '580.159.04'];

function synthetic(i: number): BehaviourRecord {
  const rnd = random(i + 1);
  const k = i % keys;
  const environment = ENVIRONMENTS[k % 5]!;
  const windows = ['wddm', 'tcc', 'mcdm'].includes(environment);
  const scale = () => 1 + (rnd() - 0.5) * 0.2;
  const record = structuredClone(base);
  // As recordsFromEvents makes them: a hash (recordPath names a file by the id's first 8 digits).
  record.id = createHash('sha256').update(`synthetic ${i}`).digest('hex').slice(0, 16);
  const day = new Date(Date.UTC(2026, 0, 1) + (i % 700) * 86_400_000).toISOString();
  record.observed = { ...record.observed, date: day, runId: `${day.replace(/[:.]/g, '-')}-${i.toString(16)}` };
  record.key = {
    environment,
    gpu: GPUS[Math.floor(k / 5) % 5]!,
    driver: DRIVERS[Math.floor(k / 25) % 8]!,
    os: windows ? 'Windows 11 Pro' : 'Ubuntu 24.04.3 LTS',
    osBuild: windows ? '26100' : null,
    container: environment === 'linux' ? 'docker' : null,
  };
  // Nine significant digits, as cudaprobe prints them.
  for (const metric of record.metrics) if (metric.value !== null) metric.value = Number((metric.value * scale()).toPrecision(9));
  for (const sample of record.samples) {
    const factor = scale();
    for (const src of Object.keys(sample.readings)) {
      const reading = sample.readings[src];
      if (typeof reading === 'number') sample.readings[src] = Math.round(reading * factor);
    }
  }
  if (rnd() < 0.1) record.facts['pinned-release.released'] = { value: 'on-exit' };
  return record;
}

const made0 = performance.now();
const records: LoadedRecord[] = Array.from({ length: count }, (_, i) => {
  const record = synthetic(i);
  return { file: recordPath(record), record };
});
const makeMs = performance.now() - made0;
const recordBytes = Buffer.byteLength(JSON.stringify(records[0]!.record));
const columns = columnsOf(records).length;
const paths = { recordsLink: 'records', recordsDirName: 'records' };

// diff, two ways. As `cudamatrix diff A B` over two folders: the records split in two halves
// (alternate observations of each key), one diffRecords call, which pairs the newest record of
// each key (without the driver) on each side. And every pair in full: each record against the
// next observation of its key (record i + keys), the most comparing these records allow.
const halves: [BehaviourRecord[], BehaviourRecord[]] = [[], []];
records.forEach((loaded, i) => halves[Math.floor(i / keys) % 2]!.push(loaded.record));
let setPairs = 0;
const diffPairs = Math.max(0, count - keys);
let lastOutputs = { markdown: '', html: '' };
const sides: Record<string, () => void> = {
  peer: () => {
    for (const loaded of records) JSON.parse(JSON.stringify(loaded.record));
  },
  report: () => {
    lastOutputs = renderReport(records, paths);
  },
  diffSets: () => {
    setPairs = diffRecords(halves[0], halves[1]).pairs.length;
  },
  diff: () => {
    for (let i = 0; i < diffPairs; i++) diffRecords(records[i]!.record, records[i + keys]!.record);
  },
};
/**
 * Untimed, before each timed run of a side. diffRecords keys each record's series once per
 * metrics array (a WeakMap): a fresh array makes every diff cold, as records just read from
 * their files are.
 */
const cold = () => {
  for (const loaded of records) loaded.record.metrics = loaded.record.metrics.slice();
};
const before: Record<string, () => void> = { diffSets: cold, diff: cold };
const samples: Record<string, number[]> = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
if (!tiny) for (const fn of Object.values(sides)) fn();
for (let round = 0; round < rounds; round++) {
  for (const side of roundOrder(round, Object.keys(sides))) {
    before[side]?.();
    const t0 = performance.now();
    sides[side]!();
    samples[side]!.push(performance.now() - t0);
  }
}

// Reading the files: loadRecords against readFileSync + JSON.parse of the same files.
const load: { files: number; bytes: number; samplesMs: { loadRecords: number[]; peer: number[] } } | null = values['no-load']
  ? null
  : (() => {
      const dir = tempDir('cm-bench-records-');
      let bytes = 0;
      for (const loaded of records) {
        const file = path.join(dir, loaded.file);
        mkdirSync(path.dirname(file), { recursive: true });
        const text = JSON.stringify(loaded.record);
        bytes += Buffer.byteLength(text);
        writeFileSync(file, text);
      }
      const files = recordFiles(dir);
      const loadSides = {
        loadRecords: () => loadRecords(dir),
        peer: () => files.map((file) => JSON.parse(readFileSync(path.join(dir, file), 'utf8'))),
      };
      const loadSamples = { loadRecords: [] as number[], peer: [] as number[] };
      if (!tiny) for (const fn of Object.values(loadSides)) fn();
      for (let round = 0; round < rounds; round++) {
        for (const side of roundOrder(round, ['loadRecords', 'peer'] as const)) {
          const t0 = performance.now();
          loadSides[side]();
          loadSamples[side].push(performance.now() - t0);
        }
      }
      return { files: files.length, bytes, samplesMs: loadSamples };
    })();

if (values.page) writeFileSync(values.page, lastOutputs.html);
const peer = median(samples.peer!);
// The page's fixed part (style, script, headings) against what each column adds.
const emptyPageBytes = Buffer.byteLength(renderReport([], paths).html);
const pageBytes = Buffer.byteLength(lastOutputs.html);
const markdownBytes = Buffer.byteLength(lastOutputs.markdown);
const reportMs = median(samples.report!);
const diffMs = median(samples.diff!);
const diffSetsMs = median(samples.diffSets!);
const within = {
  report: reportMs <= BUDGET_MS,
  diffSets: diffSetsMs <= BUDGET_MS,
  diff: diffMs <= BUDGET_MS,
  page: pageBytes <= BUDGET_PAGE_BYTES,
};
const ok = (withinBudget: boolean) => (withinBudget ? 'within' : 'OVER BUDGET');
const kib = (byteCount: number) => `${(byteCount / 1024).toFixed(0)} KiB`;
const perColumn = (pageBytes - emptyPageBytes) / Math.max(columns, 1);

console.log(
  `\n${count} synthetic records over ${columns} observation keys (columns); each a full copy of the H200 record of 2026-11-29 (${(recordBytes / 1024).toFixed(1)} KiB as compact JSON: ${base.metrics.length} metrics, ${base.samples.length} memory samples, ${Object.keys(base.facts).length} facts) with its own key, run, date and values (±10 %), about 1 in 10 (seeded) with a fact flipped; made in ${makeMs.toFixed(0)} ms`,
);
console.log(`median of ${rounds} alternated round(s) in this process (${process.version}, ${process.platform}/${process.arch})\n`);
const rows: [string, number, string, string][] = [
  ['peer: JSON.parse(JSON.stringify(record)) of every record', peer, '', ''],
  ['report: renderReport, BEHAVIOUR.md + behaviour.html', reportMs, `${BUDGET_MS} ms`, ok(within.report)],
  [
    `diff A B: diffRecords(${halves[0].length} records, ${halves[1].length}), ${setPairs} keys paired, cold`,
    diffSetsMs,
    `${BUDGET_MS} ms`,
    ok(within.diffSets),
  ],
  [
    `diff, every pair: diffRecords of ${diffPairs} pairs (each record and the next of its key), cold`,
    diffMs,
    `${BUDGET_MS} ms`,
    ok(within.diff),
  ],
];
console.log(
  formatTable(
    ['what', 'ms', 'ratio to peer', 'budget', ''],
    rows.map(([what, ms, budget, verdict]) => [
      what,
      Number.isFinite(ms) ? ms.toFixed(0) : '—',
      Number.isFinite(ms) ? (ms / peer).toFixed(2) : '—',
      budget,
      verdict,
    ]),
  ),
);
console.log(
  `\nbehaviour.html: ${kib(pageBytes)} (budget ${kib(BUDGET_PAGE_BYTES)}): ${ok(within.page)}; ${kib(emptyPageBytes)} fixed + ${(perColumn / 1024).toFixed(1)} KiB per column, so 2 MiB holds about ${Math.floor((BUDGET_PAGE_BYTES - emptyPageBytes) / perColumn)} columns, whatever the records per column (the charts show one record per column). BEHAVIOUR.md: ${kib(markdownBytes)} (links to every record).`,
);
if (load) {
  const loadMs = median(load.samplesMs.loadRecords);
  const peerMs = median(load.samplesMs.peer);
  console.log(
    `\nreading the files (${load.files} files, ${(load.bytes / 1024 ** 2).toFixed(0)} MiB): loadRecords ${loadMs.toFixed(0)} ms, readFileSync + JSON.parse of the same files (peer) ${peerMs.toFixed(0)} ms, ratio ${(loadMs / peerMs).toFixed(2)}; not budgeted: JSON.parse of that much JSON alone takes that long`,
  );
}
if (tiny) console.log('\n(--tiny: budgets not enforced)');

const out = path.resolve(values.out ?? path.join(import.meta.dirname, 'out', 'report.json'));
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify(
    {
      bench: 'report',
      records: count,
      columns,
      rounds,
      tiny,
      node: process.version,
      synthetic: {
        base: 'the H200 record of 2026-11-29',
        recordBytes,
        metrics: base.metrics.length,
        samples: base.samples.length,
        facts: Object.keys(base.facts).length,
        varied:
          'key (environment, GPU, driver), id, run id, date; metrics and readings scaled by up to +-10 %; about 1 in 10 records (seeded) has pinned-release.released flipped',
      },
      samplesMs: samples,
      medianMs: { peer, report: reportMs, diffSets: diffSetsMs, diff: diffMs },
      ratioToPeer: { report: reportMs / peer, diffSets: diffSetsMs / peer, diff: diffMs / peer },
      diffSets: { sides: [halves[0].length, halves[1].length], pairs: setPairs },
      diffPairs,
      pageBytes,
      emptyPageBytes,
      pageBytesPerColumn: perColumn,
      markdownBytes,
      load,
      budget: { reportMs: BUDGET_MS, diffMs: BUDGET_MS, pageBytes: BUDGET_PAGE_BYTES },
      within,
      enforced: !tiny,
    },
    null,
    2,
  )}\n`,
);
process.exitCode = !tiny && !(within.report && within.diffSets && within.diff && within.page) ? 1 : 0;
