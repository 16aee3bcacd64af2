/**
 * The behaviour record: one normalised, committed file per observation (one target of one run:
 * an environment, a GPU, a driver version, an OS build), under records/driver-<version>/.
 * It keeps what the reference table and the charts need and nothing volatile: the facts, every
 * metric with its attributes, the memory probes' samples (memory per phase per source), the
 * cells' outcomes, the sysinfo, and the verdicts against the default expectations
 * (matrix/default.yaml) — not the run's own matrix, so that records from different matrices
 * compare. It is made from an event log (live or merged) by recordsFromEvents, and read by
 * `report` and `diff`.
 *
 * Identity: `key` says what was observed (the table's column: environment, driver; with the GPU
 * and OS); two records with the same key and the same fact values are the same observation
 * (the second is not written); the same key with different facts is a conflict, kept and shown.
 */
import { createHash } from 'node:crypto';
import type { CellEndEvent, RunEvent, RunStartEvent } from '../events/events.ts';
import type { Expectation } from '../matrix/schema.ts';
import type { Scalar } from '../probes/protocol.ts';
import { summarize, type VerdictStatus } from '../verdicts/verdicts.ts';

export const RECORD_SCHEMA = 1;

/** What an observation is of. */
export interface ObservationKey {
  /** linux, wsl2, wddm, tcc, mcdm (the environment class the probe detected or the matrix declared). */
  environment: string;
  gpu: string;
  driver: string;
  /** os_name (e.g. "Ubuntu 24.04.3 LTS", "Windows 11 Pro"). */
  os: string;
  /** Windows build (null on Linux). */
  osBuild: string | null;
  /** docker, podman... (null when not in a container). */
  container: string | null;
}

export interface RecordedFact {
  value: Scalar;
  reason?: string;
  evidence?: Record<string, unknown>;
}

export interface RecordedMetric {
  /** probe.metric */
  name: string;
  value: number | null;
  unit: string;
  attrs?: Record<string, Scalar>;
  reason?: string;
  /** The repetitions behind `value` (each timed copy's rate, each batch's p50), where the probe repeats: the series' noise within a run. */
  repeats?: number[];
}

/** A cell during which cudaprobe saw other processes on the GPU (NVML's compute processes, at the cell's start and end). */
export interface SharedCell {
  probe: string;
  /** The most other processes seen at once. */
  processes: number;
  /** Their device memory, where NVML says (null under WDDM). */
  usedBytes: number | null;
  pids: number[];
  /** The cell took no look itself (runtime-init); others were seen in the run's other cells. */
  inferred?: true;
}

export interface RecordedSample {
  probe: string;
  phase: string;
  attrs?: Record<string, Scalar>;
  /** Source name -> bytes (null where the platform lacks the source; see probes/catalogue.ts sampleReadings). */
  readings: Record<string, number | null>;
}

export interface RecordedVerdict {
  title: string;
  status: VerdictStatus;
  actual: string;
  message: string;
  /** The expectation's `why` from matrix/default.yaml. */
  why?: string;
}

export interface BehaviourRecord {
  recordSchema: typeof RECORD_SCHEMA;
  /** sha256 of the run id and target, 16 hex digits: the same observation recorded twice has the same id. */
  id: string;
  key: ObservationKey;
  observed: {
    /** When the run started (ISO 8601). */
    date: string;
    runId: string;
    target: string;
    /** What the target was reached through ("local", "ssh gpu-box:22 → docker ..."). */
    session: string | null;
    transport: string[];
  };
  tool: { cudamatrix: string; cudaprobe: string | null; probeHash: string | null };
  /**
   * The run's event log, relative to the repository root with / separators, where `cudamatrix
   * record` found it inside the repository (the raw run folder committed beside the records);
   * absent for records from elsewhere (a submitted file).
   */
  evidence?: string;
  sysinfo: Record<string, Scalar>;
  /** probe.fact -> the fact. */
  facts: Record<string, RecordedFact>;
  metrics: RecordedMetric[];
  samples: RecordedSample[];
  cells: { probe: string; status: string; reason?: string; errorCode?: string }[];
  verdicts: RecordedVerdict[];
  /** Cells during which another process used the GPU (absent: none, or a cudaprobe too old to say). */
  shared?: SharedCell[];
  /**
   * Set by `record` when this run's metrics moved beyond their noise from the record of the same
   * observation before it (a same-driver drift): the record it drifted from. The key's runs from
   * here on are a new segment of its history; noise is measured within segments.
   */
  driftedFrom?: string;
}

/** The key as one line: the column of the behaviour table ("linux · NVIDIA H200 · 580.159.04 · Ubuntu 24.04.3 LTS"). */
export function keyText(key: ObservationKey): string {
  let text = keyTexts.get(key);
  if (text === undefined) {
    text = [key.environment, key.gpu, key.driver, key.os, key.osBuild, key.container ? `in ${key.container}` : null]
      .filter((p) => p !== null && p !== '')
      .join(' · ');
    keyTexts.set(key, text);
  }
  return text;
}

/** keyText per key object: records read through the index share one, and the report asks for each several times. */
const keyTexts = new WeakMap<ObservationKey, string>();

/** Whether two records are the same observation: the same key and the same fact values. */
export function sameObservation(a: BehaviourRecord, b: BehaviourRecord): boolean {
  if (keyText(a.key) !== keyText(b.key)) return false;
  const names = new Set([...Object.keys(a.facts), ...Object.keys(b.facts)]);
  return [...names].every((n) => a.facts[n]?.value === b.facts[n]?.value);
}

/** The record's file, relative to records/: driver-<version>/<environment>-<gpu>[-<container>]-<date>-<id>.json. */
export function recordPath(r: BehaviourRecord): string {
  const slug = (s: string) =>
    s
      .toLowerCase()
      .replace(/[^a-z0-9.]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'unknown';
  return `driver-${slug(r.key.driver)}/${slug(r.key.environment)}-${slug(r.key.gpu.replace(/^nvidia\s+/i, ''))}${r.key.container ? `-${slug(r.key.container)}` : ''}-${r.observed.date.slice(0, 10)}-${r.id.slice(0, 8)}.json`;
}

const asString = (v: Scalar | undefined): string | null => (v === undefined || v === null ? null : String(v));

/**
 * One record per target of the run that measured something on a GPU (its sysinfo names a driver
 * version and a GPU). Targets without a driver, unreachable ones, and ones whose every probe was
 * skipped give none: they observed nothing about a driver. `defaults`: the default
 * expectations (matrix/default.yaml's), which the verdicts are judged against.
 */
export function recordsFromEvents(events: RunEvent[], defaults: Partial<Record<string, Expectation[]>>): BehaviourRecord[] {
  const start = events.find((e): e is RunStartEvent => e.type === 'run-start');
  if (!start) throw new Error('event log without run-start');
  // The same log, judged against the default expectations instead of the run's matrix's.
  const rejudged = events.map((e) => (e.type === 'run-start' ? { ...e, matrix: { ...e.matrix, expectations: defaults } } : e));
  const summary = summarize(rejudged);
  const whyOf = new Map<string, string>();
  for (const list of Object.values(defaults)) for (const x of list ?? []) if (x.why) whyOf.set(JSON.stringify(x), x.why);
  const records: BehaviourRecord[] = [];
  for (const t of summary.targets) {
    const s = t.sysinfo;
    const driver = asString(s.driver_version);
    const gpu = asString(s.gpu_name);
    const measured = t.cells.filter((c) => c.planned && c.status === 'passed');
    if (!driver || !gpu || measured.length === 0) continue;
    const facts: Record<string, RecordedFact> = {};
    const metrics: RecordedMetric[] = [];
    const samples: RecordedSample[] = [];
    const shared: SharedCell[] = [];
    const cells: CellEndEvent[] = t.cells.filter((c) => c.planned);
    const seen = cells.map(sharedDuring);
    // A cell that took no look (sysinfo, runtime-init: cudaprobe lists no processes there) in a
    // run whose other cells saw others ran beside them too: the run's most, marked inferred.
    const most = seen.reduce<SharedCell | null>((m, s) => (s?.processes && (!m || s.processes > m.processes) ? s : m), null);
    cells.forEach((c, i) => {
      const s = seen[i];
      if (s?.processes) shared.push(s);
      else if (s === undefined && most && c.status === 'passed') shared.push({ ...most, probe: c.probe, inferred: true });
    });
    for (const c of cells) {
      for (const r of c.records) {
        if (r.type === 'fact')
          facts[`${c.probe}.${r.name}`] = {
            value: r.value,
            ...(r.reason ? { reason: r.reason } : {}),
            ...(r.evidence ? { evidence: r.evidence } : {}),
          };
        else if (r.type === 'metric')
          metrics.push({
            name: `${c.probe}.${r.name}`,
            value: r.value,
            unit: r.unit,
            ...(r.attrs ? { attrs: r.attrs } : {}),
            ...(r.reason ? { reason: r.reason } : {}),
            ...(Array.isArray(r.repeats) && r.repeats.length ? { repeats: r.repeats as number[] } : {}),
          });
        else if (r.type === 'sample')
          samples.push({ probe: c.probe, phase: r.phase, ...(r.attrs ? { attrs: r.attrs } : {}), readings: r.readings });
      }
    }
    records.push({
      recordSchema: RECORD_SCHEMA,
      id: createHash('sha256').update(`${start.runId}\0${t.name}`).digest('hex').slice(0, 16),
      key: {
        environment: t.environmentClass ?? 'unknown',
        gpu,
        driver,
        os: asString(s.os_name) ?? asString(s.os_family) ?? 'unknown',
        osBuild: asString(s.os_build),
        container: asString(s.container),
      },
      observed: {
        date: start.started,
        runId: start.runId,
        target: t.name,
        session: t.ready?.session ?? null,
        transport: events.flatMap((e) => (e.type === 'target-start' && e.target === t.name ? e.transport : [])),
      },
      tool: { cudamatrix: start.version, cudaprobe: asString(s.tool_version), probeHash: t.ready?.probe.hash ?? null },
      sysinfo: s,
      facts,
      metrics,
      samples,
      cells: cells.map((c) => ({
        probe: c.probe,
        status: c.status,
        ...(c.reason ? { reason: c.reason } : {}),
        ...(c.errorCode ? { errorCode: c.errorCode } : {}),
      })),
      verdicts: t.verdicts.map((v) => ({
        title: v.title,
        status: v.status,
        actual: v.actual,
        message: v.message,
        ...(whyOf.has(JSON.stringify(v.expectation)) ? { why: whyOf.get(JSON.stringify(v.expectation)) } : {}),
      })),
      ...(shared.length ? { shared } : {}),
    });
  }
  return records;
}

/**
 * Whether another process used the GPU during a cell: cudaprobe's neighbours lines (start and
 * end of the probe), the most seen at once; null when it looked and saw none, undefined when it
 * did not look (no neighbours line: an older cudaprobe, or a probe that takes no look).
 */
function sharedDuring(c: CellEndEvent): SharedCell | null | undefined {
  let most: SharedCell | null | undefined;
  for (const r of c.records as readonly { type: string; processes?: unknown; used_bytes?: unknown; pids?: unknown }[]) {
    if (r.type !== 'neighbours') continue;
    most ??= null;
    if (typeof r.processes !== 'number' || r.processes <= 0) continue;
    if (!most || r.processes > most.processes)
      most = {
        probe: c.probe,
        processes: r.processes,
        usedBytes: typeof r.used_bytes === 'number' ? r.used_bytes : null,
        pids: Array.isArray(r.pids) ? r.pids.filter((p): p is number => typeof p === 'number') : [],
      };
  }
  return most;
}

/** The same object with its keys in this order, then any others sorted (a newer writer's fields are kept). */
function ordered(o: Record<string, unknown>, first: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of first) if (o[k] !== undefined) out[k] = o[k];
  for (const k of Object.keys(o)
    .filter((k) => !first.includes(k))
    .sort())
    if (o[k] !== undefined) out[k] = o[k];
  return out;
}

/** Keys sorted at every depth: maps whose keys come from the probe (attrs, readings, evidence). */
function sortedDeep(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedDeep);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, sortedDeep((v as Record<string, unknown>)[k])]),
  );
}

/**
 * A record as its committed file: pretty-printed JSON with a stable key order, so that git
 * diffs show only what changed. The record's own structure keeps the order of the interface
 * above; maps named by the probe or the catalogue (facts, sysinfo, attrs, readings, evidence)
 * are sorted by key. Arrays keep their order (the log's).
 */
export function recordJson(r: BehaviourRecord): string {
  const x = r as unknown as Record<string, unknown>;
  const top = ordered(x, [
    'recordSchema',
    'id',
    'key',
    'observed',
    'tool',
    'evidence',
    'sysinfo',
    'facts',
    'metrics',
    'samples',
    'cells',
    'verdicts',
    'shared',
    'driftedFrom',
  ]);
  top.key = ordered(r.key as unknown as Record<string, unknown>, ['environment', 'gpu', 'driver', 'os', 'osBuild', 'container']);
  top.observed = ordered(r.observed as unknown as Record<string, unknown>, ['date', 'runId', 'target', 'session', 'transport']);
  top.tool = ordered(r.tool as unknown as Record<string, unknown>, ['cudamatrix', 'cudaprobe', 'probeHash']);
  top.sysinfo = sortedDeep(r.sysinfo);
  top.facts = Object.fromEntries(
    Object.keys(r.facts)
      .sort()
      .map((n) => [n, sortedDeep(ordered(r.facts[n] as unknown as Record<string, unknown>, ['value', 'reason', 'evidence']))]),
  );
  top.metrics = r.metrics.map((m) => ({
    ...ordered(m as unknown as Record<string, unknown>, ['name', 'value', 'unit', 'attrs', 'reason', 'repeats']),
    ...(m.attrs ? { attrs: sortedDeep(m.attrs) } : {}),
  }));
  top.samples = r.samples.map((s) => ({
    ...ordered(s as unknown as Record<string, unknown>, ['probe', 'phase', 'attrs', 'readings']),
    ...(s.attrs ? { attrs: sortedDeep(s.attrs) } : {}),
    readings: sortedDeep(s.readings),
  }));
  top.cells = r.cells.map((c) => ordered(c as unknown as Record<string, unknown>, ['probe', 'status', 'reason', 'errorCode']));
  top.verdicts = r.verdicts.map((v) => ordered(v as unknown as Record<string, unknown>, ['title', 'status', 'actual', 'message', 'why']));
  return `${JSON.stringify(top, null, 2)}\n`;
}
