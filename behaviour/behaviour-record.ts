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
      .filter((part) => part !== null && part !== '')
      .join(' · ');
    keyTexts.set(key, text);
  }
  return text;
}

/** keyText per key object: records read through the index share one, and the report asks for each several times. */
const keyTexts = new WeakMap<ObservationKey, string>();

/** Whether two records are the same observation: the same key and the same fact values. */
export function sameObservation(first: BehaviourRecord, second: BehaviourRecord): boolean {
  if (keyText(first.key) !== keyText(second.key)) return false;
  const names = new Set([...Object.keys(first.facts), ...Object.keys(second.facts)]);
  return [...names].every((factName) => first.facts[factName]?.value === second.facts[factName]?.value);
}

/** The record's file, relative to records/: driver-<version>/<environment>-<gpu>[-<container>]-<date>-<id>.json. */
export function recordPath(record: BehaviourRecord): string {
  const slug = (part: string) =>
    part
      .toLowerCase()
      .replace(/[^a-z0-9.]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'unknown';
  return `driver-${slug(record.key.driver)}/${slug(record.key.environment)}-${slug(record.key.gpu.replace(/^nvidia\s+/i, ''))}${record.key.container ? `-${slug(record.key.container)}` : ''}-${record.observed.date.slice(0, 10)}-${record.id.slice(0, 8)}.json`;
}

const asString = (value: Scalar | undefined): string | null => (value === undefined || value === null ? null : String(value));

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
  for (const list of Object.values(defaults))
    for (const expectation of list ?? []) if (expectation.why) whyOf.set(JSON.stringify(expectation), expectation.why);
  const records: BehaviourRecord[] = [];
  for (const target of summary.targets) {
    const sysinfo = target.sysinfo;
    const driver = asString(sysinfo.driver_version);
    const gpu = asString(sysinfo.gpu_name);
    const measured = target.cells.filter((cell) => cell.planned && cell.status === 'passed');
    if (!driver || !gpu || measured.length === 0) continue;
    const facts: Record<string, RecordedFact> = {};
    const metrics: RecordedMetric[] = [];
    const samples: RecordedSample[] = [];
    const shared: SharedCell[] = [];
    const cells: CellEndEvent[] = target.cells.filter((cell) => cell.planned);
    const seen = cells.map(sharedDuring);
    // A cell that took no look (sysinfo, runtime-init: cudaprobe lists no processes there) in a
    // run whose other cells saw others ran beside them too: the run's most, marked inferred.
    const most = seen.reduce<SharedCell | null>(
      (busiest, cell) => (cell?.processes && (!busiest || cell.processes > busiest.processes) ? cell : busiest),
      null,
    );
    cells.forEach((cell, i) => {
      const sharedHere = seen[i];
      if (sharedHere?.processes) shared.push(sharedHere);
      else if (sharedHere === undefined && most && cell.status === 'passed') shared.push({ ...most, probe: cell.probe, inferred: true });
    });
    for (const cell of cells) {
      for (const probeRecord of cell.records) {
        if (probeRecord.type === 'fact')
          facts[`${cell.probe}.${probeRecord.name}`] = {
            value: probeRecord.value,
            ...(probeRecord.reason ? { reason: probeRecord.reason } : {}),
            ...(probeRecord.evidence ? { evidence: probeRecord.evidence } : {}),
          };
        else if (probeRecord.type === 'metric')
          metrics.push({
            name: `${cell.probe}.${probeRecord.name}`,
            value: probeRecord.value,
            unit: probeRecord.unit,
            ...(probeRecord.attrs ? { attrs: probeRecord.attrs } : {}),
            ...(probeRecord.reason ? { reason: probeRecord.reason } : {}),
            ...(Array.isArray(probeRecord.repeats) && probeRecord.repeats.length ? { repeats: probeRecord.repeats as number[] } : {}),
          });
        else if (probeRecord.type === 'sample')
          samples.push({
            probe: cell.probe,
            phase: probeRecord.phase,
            ...(probeRecord.attrs ? { attrs: probeRecord.attrs } : {}),
            readings: probeRecord.readings,
          });
      }
    }
    records.push({
      recordSchema: RECORD_SCHEMA,
      id: createHash('sha256').update(`${start.runId}\0${target.name}`).digest('hex').slice(0, 16),
      key: {
        environment: target.environmentClass ?? 'unknown',
        gpu,
        driver,
        os: asString(sysinfo.os_name) ?? asString(sysinfo.os_family) ?? 'unknown',
        osBuild: asString(sysinfo.os_build),
        container: asString(sysinfo.container),
      },
      observed: {
        date: start.started,
        runId: start.runId,
        target: target.name,
        session: target.ready?.session ?? null,
        transport: events.flatMap((e) => (e.type === 'target-start' && e.target === target.name ? e.transport : [])),
      },
      tool: { cudamatrix: start.version, cudaprobe: asString(sysinfo.tool_version), probeHash: target.ready?.probe.hash ?? null },
      sysinfo,
      facts,
      metrics,
      samples,
      cells: cells.map((cell) => ({
        probe: cell.probe,
        status: cell.status,
        ...(cell.reason ? { reason: cell.reason } : {}),
        ...(cell.errorCode ? { errorCode: cell.errorCode } : {}),
      })),
      verdicts: target.verdicts.map((verdict) => ({
        title: verdict.title,
        status: verdict.status,
        actual: verdict.actual,
        message: verdict.message,
        ...(whyOf.has(JSON.stringify(verdict.expectation)) ? { why: whyOf.get(JSON.stringify(verdict.expectation)) } : {}),
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
function sharedDuring(cell: CellEndEvent): SharedCell | null | undefined {
  let most: SharedCell | null | undefined;
  for (const probeRecord of cell.records as readonly { type: string; processes?: unknown; used_bytes?: unknown; pids?: unknown }[]) {
    if (probeRecord.type !== 'neighbours') continue;
    most ??= null;
    if (typeof probeRecord.processes !== 'number' || probeRecord.processes <= 0) continue;
    if (!most || probeRecord.processes > most.processes)
      most = {
        probe: cell.probe,
        processes: probeRecord.processes,
        usedBytes: typeof probeRecord.used_bytes === 'number' ? probeRecord.used_bytes : null,
        pids: Array.isArray(probeRecord.pids) ? probeRecord.pids.filter((pid): pid is number => typeof pid === 'number') : [],
      };
  }
  return most;
}

/** The same object with its keys in this order, then any others sorted (a newer writer's fields are kept). */
function ordered(source: Record<string, unknown>, first: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of first) if (source[k] !== undefined) out[k] = source[k];
  for (const k of Object.keys(source)
    .filter((k) => !first.includes(k))
    .sort())
    if (source[k] !== undefined) out[k] = source[k];
  return out;
}

/** Keys sorted at every depth: maps whose keys come from the probe (attrs, readings, evidence). */
function sortedDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedDeep);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortedDeep((value as Record<string, unknown>)[k])]),
  );
}

/**
 * A record as its committed file: pretty-printed JSON with a stable key order, so that git
 * diffs show only what changed. The record's own structure keeps the order of the interface
 * above; maps named by the probe or the catalogue (facts, sysinfo, attrs, readings, evidence)
 * are sorted by key. Arrays keep their order (the log's).
 */
export function recordJson(record: BehaviourRecord): string {
  const fields = record as unknown as Record<string, unknown>;
  const top = ordered(fields, [
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
  top.key = ordered(record.key as unknown as Record<string, unknown>, ['environment', 'gpu', 'driver', 'os', 'osBuild', 'container']);
  top.observed = ordered(record.observed as unknown as Record<string, unknown>, ['date', 'runId', 'target', 'session', 'transport']);
  top.tool = ordered(record.tool as unknown as Record<string, unknown>, ['cudamatrix', 'cudaprobe', 'probeHash']);
  top.sysinfo = sortedDeep(record.sysinfo);
  top.facts = Object.fromEntries(
    Object.keys(record.facts)
      .sort()
      .map((factName) => [
        factName,
        sortedDeep(ordered(record.facts[factName] as unknown as Record<string, unknown>, ['value', 'reason', 'evidence'])),
      ]),
  );
  top.metrics = record.metrics.map((metric) => ({
    ...ordered(metric as unknown as Record<string, unknown>, ['name', 'value', 'unit', 'attrs', 'reason', 'repeats']),
    ...(metric.attrs ? { attrs: sortedDeep(metric.attrs) } : {}),
  }));
  top.samples = record.samples.map((sample) => ({
    ...ordered(sample as unknown as Record<string, unknown>, ['probe', 'phase', 'attrs', 'readings']),
    ...(sample.attrs ? { attrs: sortedDeep(sample.attrs) } : {}),
    readings: sortedDeep(sample.readings),
  }));
  top.cells = record.cells.map((cell) => ordered(cell as unknown as Record<string, unknown>, ['probe', 'status', 'reason', 'errorCode']));
  top.verdicts = record.verdicts.map((verdict) =>
    ordered(verdict as unknown as Record<string, unknown>, ['title', 'status', 'actual', 'message', 'why']),
  );
  return `${JSON.stringify(top, null, 2)}\n`;
}
