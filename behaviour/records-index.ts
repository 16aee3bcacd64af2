/**
 * The records index: what `report` and `diff` read of each record file instead of the whole
 * file (10,000 records of 104 KiB are 1 GB of JSON: bench/scale). A cache, never committed: one
 * file per folder of records under the cudamatrix cache, each file's entry trusted only while
 * the file's size, mtime and inode are those it was made from; a missing, stale or unreadable
 * index is rebuilt from the records. docs/records.md ("The records index") says what it holds.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, realpathSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../core/fs.ts';
import { defaultCacheDir } from '../probes/build.ts';
import type { BehaviourRecord, RecordedMetric } from './behaviour-record.ts';

/** Bumped whenever what a digest holds changes: an index of another format is rebuilt. */
export const INDEX_FORMAT = 'cudamatrix-records-index/2';

/** At most this many folders' indexes are kept in the cache; past it, the least recently written go. */
export const MAX_INDEXES = 256;

/** The parts of a digest that records often share (one key's records, copies of one run): kept once in the index. */
const SHARED = ['key', 'tool', 'sysinfo', 'facts', 'cells', 'verdicts'] as const;

/**
 * A digest as stored: the shared parts by their place in `shared`; the metrics as the place of
 * their shape (each metric without its value: one record's metrics are like the next's) and
 * their values in order.
 */
type Stored = Omit<BehaviourRecord, (typeof SHARED)[number] | 'metrics'> &
  Record<(typeof SHARED)[number], number> & { metrics: [number, (number | null)[]] };

interface IndexFile {
  format: string;
  folder: string;
  keep: string[];
  shared: unknown[];
  entries: { name: string; stamp: string; records: Stored[] }[];
}

/** The metrics a digest keeps: `names` says which (an index made for others is rebuilt), `pick` picks them from a record's. */
export interface KeptMetrics {
  names: readonly string[];
  pick(metrics: readonly RecordedMetric[]): RecordedMetric[];
}

/**
 * A record as the index keeps it: no memory samples, of the metrics only those `keep` picks and
 * without their repetitions (a run's value is what its key's noise is measured on), facts
 * without their evidence (only the record shown in full, read from its file, needs it).
 */
export function digestOf(record: BehaviourRecord, keep: KeptMetrics): BehaviourRecord {
  const facts: BehaviourRecord['facts'] = {};
  for (const [factName, fact] of Object.entries(record.facts))
    facts[factName] = fact.reason === undefined ? { value: fact.value } : { value: fact.value, reason: fact.reason };
  return { ...record, facts, samples: [], metrics: keep.pick(record.metrics).map(({ repeats: _, ...metric }) => metric) };
}

/** Where the index of `folder` lies (CUDAMATRIX_CACHE, else the user's cache folder: see defaultCacheDir). */
export function indexFileOf(folder: string): string {
  let real: string;
  try {
    real = realpathSync(folder);
  } catch {
    real = path.resolve(folder);
  }
  return path.join(defaultCacheDir(), 'records-index', `${createHash('sha256').update(real).digest('hex').slice(0, 24)}.json`);
}

const INDEX_NAME = /^[0-9a-f]{24}\.json$/;
/** An index's temporary file (core/fs.ts tempName): left behind only by a writer killed mid-write. */
const INDEX_TEMP_NAME = /^[0-9a-f]{24}\.json\.\d+-[0-9a-f]{8}\.tmp$/;
/** A temporary file older than this has no live writer (an index is written in well under a second). */
export const STALE_TEMP_MS = 60 * 60 * 1000;
/** An index starts with its format and folder (JSON.stringify keeps the key order): this much of it names the folder. */
const HEAD_BYTES = 8192;

/** The folder an index file is of, from its first bytes; null when they are not an index's. */
function folderOfIndex(file: string): string | null {
  const fd = openSync(file, 'r');
  try {
    const head = Buffer.alloc(HEAD_BYTES);
    const text = head.toString('utf8', 0, readSync(fd, head, 0, HEAD_BYTES, 0));
    const match = /^\{"format":"[^"]*","folder":("(?:[^"\\]|\\.)*")/.exec(text);
    return match ? (JSON.parse(match[1]!) as string) : null;
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes from the cache the indexes of folders that are gone (or files that are not an index),
 * past MAX_INDEXES the least recently written, `written` (just made) aside, and temporary files
 * of killed writers (older than STALE_TEMP_MS). Run when an index
 * is made for a folder that had none, the only time the cache grows; it reads each file's first
 * bytes. A file that cannot be removed now (held open on Windows) waits for the next time.
 */
function pruneIndexes(written: string): void {
  const dir = path.dirname(written);
  let all: string[];
  try {
    all = readdirSync(dir);
  } catch {
    return;
  }
  const names = all.filter((fileName) => INDEX_NAME.test(fileName) && fileName !== path.basename(written));
  const remove = (file: string) => {
    try {
      rmSync(file, { force: true });
    } catch {
      // Left for the next time.
    }
  };
  for (const name of all.filter((fileName) => INDEX_TEMP_NAME.test(fileName))) {
    const file = path.join(dir, name);
    const mtimeMs = statSync(file, { throwIfNoEntry: false })?.mtimeMs;
    if (mtimeMs !== undefined && Date.now() - mtimeMs > STALE_TEMP_MS) remove(file);
  }
  const live: { file: string; mtimeMs: number }[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    try {
      const folder = folderOfIndex(file);
      if (folder === null || !existsSync(folder)) remove(file);
      else live.push({ file, mtimeMs: statSync(file).mtimeMs });
    } catch {
      // Gone meanwhile (another process pruned it).
    }
  }
  live.sort((left, right) => right.mtimeMs - left.mtimeMs);
  for (const { file } of live.slice(MAX_INDEXES - 1)) remove(file);
}

const stampOf = (file: string) => {
  const st = statSync(file, { bigint: true });
  return `${st.size}:${st.mtimeNs}:${st.ino}`;
};

function loadIndex(file: string, folder: string, keep: string[]): IndexFile | null {
  try {
    const data = JSON.parse(readFileSync(file, 'utf8')) as IndexFile;
    return data.format === INDEX_FORMAT && data.folder === folder && data.keep.join('\n') === keep.join('\n') && Array.isArray(data.entries)
      ? data
      : null;
  } catch {
    return null;
  }
}

/**
 * The digests of the record files `names` of `folder` (each file's records, as `read` gives
 * them from the file, in order): from the index where it is current, else read with `read`,
 * which checks them (a bad file stops it with its name, as before), and the index rewritten.
 * `metrics: false`: the digests' metrics are left empty (the index keeps them all the same).
 */
export function readDigests(
  folder: string,
  names: readonly string[],
  keep: KeptMetrics,
  read: (file: string) => BehaviourRecord[],
  options: { metrics?: boolean } = {},
): BehaviourRecord[][] {
  // Without metrics (diff, which reads the records it compares whole): none made from the index.
  const withMetrics = options.metrics ?? true;
  const keepList = [...keep.names].sort();
  const indexFile = indexFileOf(folder);
  const index = loadIndex(indexFile, path.resolve(folder), keepList);
  const known = new Map(index?.entries.map((e) => [e.name, e]) ?? []);
  const shared = index?.shared ?? [];
  const materialize = (storedDigest: Stored): BehaviourRecord => {
    const { metrics: stored, ...parts } = storedDigest as unknown as Record<string, unknown> & Pick<Stored, 'metrics'>;
    for (const k of SHARED) parts[k] = shared[storedDigest[k]];
    if (!withMetrics) return { ...parts, metrics: [] } as unknown as BehaviourRecord;
    return withLazyMetrics(parts, shared[stored[0]] as MetricShape[], stored[1]);
  };
  let dirty = index === null || known.size !== names.length;
  const out: BehaviourRecord[][] = [];
  // Per file, its entry's records as the index holds them (null: read again), to write back as they are.
  const kept: (Stored[] | null)[] = [];
  const stamps: string[] = [];
  for (const name of names) {
    const file = path.join(folder, name);
    const stamp = stampOf(file);
    stamps.push(stamp);
    const entry = known.get(name);
    if (entry && entry.stamp === stamp) {
      out.push(entry.records.map(materialize));
      kept.push(entry.records);
      continue;
    }
    dirty = true;
    out.push(read(file).map((record) => digestOf(record, keep)));
    kept.push(null);
  }
  if (dirty) writeIndex(indexFile, { folder: path.resolve(folder), keep: keepList, names, stamps, digests: out, kept, shared });
  return out;
}

export type MetricShape = Omit<RecordedMetric, 'value'>;

/** A digest's metrics as the index holds them: the shape (one object for alike records) and the values. */
export interface PackedMetrics {
  shape: readonly MetricShape[];
  values: readonly (number | null)[];
}

const packed = new WeakMap<BehaviourRecord, PackedMetrics>();

/**
 * A digest's metrics as packed, for a reader that picks a few of every record's (the report's
 * key metrics, once per shape): its `metrics` objects are made only when read (10,000 records
 * of ~40 each are most of what reading the index costs). Undefined for a record read whole.
 */
export function packedMetricsOf(record: BehaviourRecord): PackedMetrics | undefined {
  return packed.get(record);
}

/**
 * The record with `metrics` made only when read, as an accessor written in the object literal:
 * defined on the object afterwards, it would turn each of 10,000 records into a dictionary,
 * slow to read for everything after.
 */
function withLazyMetrics(
  parts: Record<string, unknown>,
  shape: readonly MetricShape[],
  values: readonly (number | null)[],
): BehaviourRecord {
  let metrics: RecordedMetric[] | undefined;
  const record = {
    ...parts,
    get metrics(): RecordedMetric[] {
      return (metrics ??= metricsOf(shape, values));
    },
    set metrics(value: RecordedMetric[]) {
      metrics = value;
    },
  } as unknown as BehaviourRecord;
  packed.set(record, { shape, values });
  return record;
}

/** A record's metrics from their shape and values: objects of one layout, made without spreading (10,000 records of ~40 each). */
function metricsOf(shape: readonly MetricShape[], values: readonly (number | null)[]): RecordedMetric[] {
  const out: RecordedMetric[] = new Array(shape.length);
  for (let i = 0; i < shape.length; i++) out[i] = metricOf(shape[i]!, values[i]!);
  return out;
}

/** One metric from its shape and value. */
export function metricOf(shape: MetricShape, value: number | null): RecordedMetric {
  const metric: RecordedMetric = { name: shape.name, value, unit: shape.unit };
  if (shape.attrs !== undefined) metric.attrs = shape.attrs;
  if (shape.reason !== undefined) metric.reason = shape.reason;
  return metric;
}

/** Writes the index; one that cannot be written (a read-only cache) only costs the next run its speed. */
function writeIndex(
  file: string,
  at: {
    folder: string;
    keep: string[];
    names: readonly string[];
    stamps: string[];
    digests: BehaviourRecord[][];
    kept: (Stored[] | null)[];
    shared: unknown[];
  },
): void {
  // Parts already in the old index keep their place (found by identity); new ones by their JSON.
  const byObject = new Map<unknown, number>(at.shared.map((part, i) => [part, i]));
  let byText: Map<string, number> | null = null;
  const shared = [...at.shared];
  const place = (part: unknown): number => {
    const had = byObject.get(part);
    if (had !== undefined) return had;
    byText ??= new Map(shared.map((sharedPart, i) => [JSON.stringify(sharedPart), i]));
    const text = JSON.stringify(part);
    let i = byText.get(text);
    if (i === undefined) {
      i = shared.push(part) - 1;
      byText.set(text, i);
    }
    byObject.set(part, i);
    return i;
  };
  const entries = at.names.map((name, fileIndex) => ({
    name,
    stamp: at.stamps[fileIndex]!,
    // An entry still current is written as the index held it: its parts keep their places.
    records: (at.kept[fileIndex] ?? at.digests[fileIndex]!).map((digest) => {
      if (at.kept[fileIndex]) return { ...digest } as unknown as Record<string, unknown>;
      const stored = { ...digest } as unknown as Record<string, unknown>;
      const record = digest as BehaviourRecord;
      for (const k of SHARED) stored[k] = place(record[k]);
      stored.metrics = [place(record.metrics.map(({ value: _v, ...shape }) => shape)), record.metrics.map((metric) => metric.value)];
      return stored;
    }),
  }));
  // Only what is still referenced is kept (a record removed leaves its parts behind otherwise).
  const used = [
    ...new Set(
      entries.flatMap((e) => e.records.flatMap((stored) => [...SHARED.map((k) => stored[k] as number), (stored.metrics as [number])[0]])),
    ),
  ].sort((left, right) => left - right);
  const renumber = new Map(used.map((old, i) => [old, i]));
  for (const e of entries) {
    for (const stored of e.records) {
      for (const k of SHARED) stored[k] = renumber.get(stored[k] as number);
      const packedMetrics = stored.metrics as [number, unknown];
      stored.metrics = [renumber.get(packedMetrics[0]), packedMetrics[1]];
    }
  }
  const isNew = !existsSync(file);
  try {
    writeFileAtomic(
      file,
      JSON.stringify({ format: INDEX_FORMAT, folder: at.folder, keep: at.keep, shared: used.map((i) => shared[i]), entries }),
    );
  } catch {
    // A cache that cannot be written: the records are read in full next time, as without one.
    return;
  }
  if (isNew) pruneIndexes(file);
}
