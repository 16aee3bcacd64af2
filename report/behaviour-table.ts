/**
 * The behaviour table both report outputs are drawn from: one column per observation key
 * (environment · GPU · driver · OS · OS build · container, keyText's line), one row per fact
 * (grouped by probe, in the catalogue's order, with the claims the probe decides), and a few
 * key metrics per column. Every cell keeps the records its values come from, so that each
 * value can link to its evidence; several records of one key that disagree on a fact are a
 * conflict (sameObservation's rule), kept and shown as such.
 *
 * Deterministic: the same records (in any order) give the same table.
 */
import { catalogue, probeSpec } from '../probes/catalogue.ts';
import type { Scalar } from '../probes/protocol.ts';
import {
  diffPair,
  diffRecords,
  segmentsOf,
  sharedCells,
  type CellChange,
  type FactChange,
  type MetricComparison,
} from '../behaviour/diff.ts';
import { HISTORY_PER_DRIVER } from '../behaviour/noise.ts';
import { composeRecord, hasFacts, newestByProbe } from '../behaviour/newest-per-probe.ts';
import { keyText, type BehaviourRecord, type ObservationKey, type RecordedMetric } from '../behaviour/behaviour-record.ts';
import { metricOf, packedMetricsOf, type MetricShape } from '../behaviour/records-index.ts';
import { KEY_METRICS, pickMetrics, specsByName, withKeyMetrics, type MetricRowSpec } from './key-metrics.ts';

/** A record and where it lies, relative to the records folder, with / separators. */
export interface LoadedRecord {
  file: string;
  record: BehaviourRecord;
}

export interface Column {
  key: ObservationKey;
  /** keyText(key): the column's heading. */
  text: string;
  /** Oldest first (date, then id). */
  records: LoadedRecord[];
  /** The column's newest record with facts: its link and date. */
  chosen: LoadedRecord;
  /**
   * Per probe, the newest record that measured it: what the page shows of that probe (its facts,
   * numbers and charts), so that a newer record of a few probes (an opt-in run) hides nothing of
   * an older full one.
   */
  byProbe: ReadonlyMap<string, LoadedRecord>;
  /**
   * Where the column's newest values moved beyond their noise against its earlier records (diff's
   * engine, per metric series: see driftsOf); empty if none did.
   */
  drifts: ColumnDrift[];
}

/**
 * The series of a column's newest record (per probe: the newest that measured it) that moved
 * beyond their noise against the column's earlier records of the same segment.
 */
export interface ColumnDrift {
  /** The newest record that measured the drifted series' probes (shown in the column). */
  to: LoadedRecord;
  /** The newest of the earlier records it was compared with. */
  from: LoadedRecord;
  /** How many earlier records were compared (their values' geometric mean, and their spread as noise). */
  earlier: number;
  metrics: MetricComparison[];
}

const probeOfMetric = (name: string) => name.slice(0, name.indexOf('.'));

/**
 * A column's drift, decided per metric series over all its records by diff's engine (diffPair):
 * the probes are grouped by the newest record that measured them (what the column shows); each
 * group's series in that record against the column's earlier records that measured any of
 * those probes, the newest HISTORY_PER_DRIVER of them within one segment (the one of the newest
 * earlier record: before a drift, the state it drifted from). So a newer record of a few probes
 * (an opt-in run) hides no drift of an older full one. Every record is compared as the records
 * index keeps it (withKeyMetrics), so only the key metrics' series can drift.
 */
function driftsOf(column: Pick<Column, 'records' | 'byProbe'>): ColumnDrift[] {
  const sorted = column.records;
  if (sorted.length < 2) return [];
  const at = new Map(sorted.map((loaded, i) => [loaded, i]));
  const probesOf = new Map<LoadedRecord, Set<string>>();
  for (const [probe, newest] of column.byProbe) (probesOf.get(newest) ?? probesOf.set(newest, new Set()).get(newest)!).add(probe);
  const segment = segmentsOf(sorted.map((loaded) => loaded.record));
  const history = sorted.map((loaded) => withKeyMetrics(loaded.record));
  const out: ColumnDrift[] = [];
  // Newest group first: its drift is the latest one.
  for (const [to, probes] of [...probesOf].sort(([left], [right]) => at.get(right)! - at.get(left)!)) {
    const measures = (record: BehaviourRecord) => withKeyMetrics(record).metrics.some((metric) => probes.has(probeOfMetric(metric.name)));
    if (!measures(to.record)) continue;
    // The earlier records that measured these probes, newest first, within one segment.
    const earlier: LoadedRecord[] = [];
    for (let i = at.get(to)! - 1; i >= 0 && earlier.length < HISTORY_PER_DRIVER; i--) {
      const loaded = sorted[i]!;
      if (earlier.length && segment.get(loaded.record) !== segment.get(earlier[0]!.record)) break;
      if (measures(loaded.record)) earlier.push(loaded);
    }
    if (!earlier.length) continue;
    // The earlier side as one record: each probe's series from the newest earlier record that has them.
    const byProbe = new Map<string, BehaviourRecord>();
    const runs = earlier.map((loaded) => withKeyMetrics(loaded.record));
    for (const run of runs)
      for (const metric of run.metrics) {
        const probe = probeOfMetric(metric.name);
        if (probes.has(probe) && !byProbe.has(probe)) byProbe.set(probe, run);
      }
    const earlierSide = composeRecord(runs[0]!, byProbe);
    // Only series both sides have can move: of the newest record's key metrics, those of its group's probes.
    const shown = withKeyMetrics(to.record);
    const newestSide = { ...shown, metrics: shown.metrics.filter((metric) => probes.has(probeOfMetric(metric.name))) };
    const metrics = diffPair(earlierSide, newestSide, false, { runsA: runs, history }).metrics.filter((comparison) => comparison.flagged);
    if (metrics.length) out.push({ to, from: earlier[0]!, earlier: earlier.length, metrics });
  }
  return out;
}

/** Plain code-point order, not the locale's: the output must not depend on the machine. */
const cmp = (left: string, right: string): number => (left < right ? -1 : left > right ? 1 : 0);

/** Versions and builds compared part by part, numbers as numbers ("575.9" < "575.51" < "580.1"). */
export function compareVersions(left: string, right: string): number {
  const pa = left.split(/[.\-_ ]/);
  const pb = right.split(/[.\-_ ]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const leftPart = pa[i] ?? '';
    const rightPart = pb[i] ?? '';
    const nx = /^\d+$/.test(leftPart) ? Number(leftPart) : NaN;
    const ny = /^\d+$/.test(rightPart) ? Number(rightPart) : NaN;
    const order = Number.isNaN(nx) || Number.isNaN(ny) ? cmp(leftPart, rightPart) : nx - ny;
    if (order !== 0) return order;
  }
  return 0;
}

/** The environments in docs/claims.md's order; others after them, by name. */
const ENVIRONMENTS = ['linux', 'wsl2', 'wddm', 'tcc', 'mcdm'];
const envRank = (e: string) => (ENVIRONMENTS.includes(e) ? ENVIRONMENTS.indexOf(e) : ENVIRONMENTS.length);

export function compareKeys(left: ObservationKey, right: ObservationKey): number {
  return (
    envRank(left.environment) - envRank(right.environment) ||
    cmp(left.environment, right.environment) ||
    compareVersions(left.driver, right.driver) ||
    cmp(left.gpu, right.gpu) ||
    cmp(left.os, right.os) ||
    compareVersions(left.osBuild ?? '', right.osBuild ?? '') ||
    cmp(left.container ?? '', right.container ?? '')
  );
}

const byDate = (left: LoadedRecord, right: LoadedRecord) =>
  cmp(left.record.observed.date, right.record.observed.date) || cmp(left.record.id, right.record.id) || cmp(left.file, right.file);

/** One key's records, oldest first, with the newest that has facts and the newest that measured each probe. */
function shownOfKey(list: readonly LoadedRecord[]): Pick<Column, 'records' | 'chosen' | 'byProbe'> {
  const sorted = [...list].sort(byDate);
  // The newest record that observed facts: an empty newer one (written by an older cudamatrix)
  // must not hide a full one's charts.
  const withFacts = sorted.filter((loaded) => hasFacts(loaded.record));
  // And one that had the GPU alone: a run beside another process is not what the column shows.
  const alone = withFacts.filter((loaded) => !sharedCells(loaded.record).length);
  const shown = alone.length ? alone : withFacts;
  const chosen = (shown.length ? shown : sorted).at(-1)!;
  const byProbe = newestByProbe(
    shown,
    (left, right) => byDate(left, right) > 0,
    (loaded) => loaded.record,
  );
  return { records: sorted, chosen, byProbe };
}

function groupByKey(records: readonly LoadedRecord[]): Map<string, LoadedRecord[]> {
  const byKey = new Map<string, LoadedRecord[]>();
  for (const loaded of records) {
    const text = keyText(loaded.record.key);
    const list = byKey.get(text);
    if (list) list.push(loaded);
    else byKey.set(text, [loaded]);
  }
  return byKey;
}

/**
 * The records the report shows in full (every column's chosen and per-probe newest, as
 * shownOfKey picks them): the others are read through the index. One pass, no sort.
 */
export function recordsShownInFull(records: readonly LoadedRecord[]): Set<LoadedRecord> {
  const out = new Set<LoadedRecord>();
  // The column's chosen record and each probe's, as the table picks them (shownOfKey).
  for (const list of groupByKey(records).values()) {
    const shown = shownOfKey(list);
    out.add(shown.chosen);
    for (const loaded of shown.byProbe.values()) out.add(loaded);
  }
  return out;
}

/** The records grouped by key, in column order. */
export function columnsOf(records: readonly LoadedRecord[]): Column[] {
  return [...groupByKey(records).entries()]
    .map(([text, list]) => {
      const shown = shownOfKey(list);
      return { key: shown.records[0]!.record.key, text, ...shown, drifts: driftsOf(shown) };
    })
    .sort((left, right) => compareKeys(left.key, right.key) || cmp(left.text, right.text));
}

/** What a column shows as one record: the chosen record, each probe's facts, metrics and samples from the newest record that measured it. */
export function shownRecord(column: Column): BehaviourRecord {
  return composeRecord(column.chosen.record, new Map([...column.byProbe].map(([probe, loaded]) => [probe, loaded.record])));
}

/** One value of a cell and the records that observed it. */
export interface ValueGroup {
  value: Scalar;
  records: LoadedRecord[];
  /** Why the value is null, where the probe said (the first record's reason). */
  reason?: string;
}

export interface Cell {
  /** In the order of the first record that has each value (oldest first). */
  values: ValueGroup[];
  /** Records of this key disagree on a fact (for sysinfo rows: they differ, which is no conflict). */
  differs: boolean;
}

export interface Row {
  /** probe.fact, or sysinfo.<name> for the sysinfo rows. */
  name: string;
  probe: string;
  fact: string;
  description: string;
  /** 'fact': a probe's fact (differing values are a conflict); 'sysinfo': what the machine reported. */
  kind: 'fact' | 'sysinfo';
  /** One per column; null where no record of the column has it. */
  cells: (Cell | null)[];
}

export interface RowGroup {
  probe: string;
  title: string;
  claims: string[];
  rows: Row[];
}

/**
 * The sysinfo values worth a row: what tells environments apart (driver model, TCC, WSL, HAGS)
 * and the versions and hardware beside the key. Not identities (UUID, bus id) or values that
 * change from one run to the next (the current PCIe link).
 */
export const SYSINFO_ROWS = [
  'driver_model',
  'tcc_driver',
  'wsl_version',
  'hags_enabled',
  'hags_setting',
  'cuda_driver_version',
  'cudart_version',
  'compute_capability',
  'memory_total_bytes',
  'pcie_gen_max',
  'pcie_width_max',
  'kernel',
];

/** Rows whose fact had another name in older records: they still fill the row. */
const SYSINFO_OLD_NAMES: Record<string, string> = { hags_setting: 'hags' };

/** Tells values of different types apart (true from "true", null from "null") without JSON.stringify's cost. */
const valueKey = (value: Scalar) => (value === null ? 'null' : `${typeof value}:${String(value)}`);

/** A cell's values as they are gathered: value key -> the group. */
type Gathering = Map<string, ValueGroup>;

function add(
  cells: Map<string, Gathering>,
  name: string,
  value: Scalar,
  reason: string | undefined,
  rs: LoadedRecord[],
  mixed: Set<ValueGroup>,
): void {
  let groups = cells.get(name);
  if (!groups) cells.set(name, (groups = new Map()));
  const k = valueKey(value);
  const group = groups.get(k);
  if (!group) groups.set(k, reason ? { value, records: [...rs], reason } : { value, records: [...rs] });
  else {
    for (const loaded of rs) group.records.push(loaded);
    mixed.add(group);
  }
}

/**
 * One pass over a column's records: every fact's and every sysinfo row's values, with their
 * records (oldest first). Records read through the index share their facts and sysinfo objects
 * where they are alike, so each distinct one is gathered once for all its records.
 */
function gather(column: Column): { facts: Map<string, Gathering>; sysinfo: Map<string, Gathering> } {
  const facts = new Map<string, Gathering>();
  const sysinfo = new Map<string, Gathering>();
  const byFacts = new Map<BehaviourRecord['facts'], LoadedRecord[]>();
  const bySysinfo = new Map<BehaviourRecord['sysinfo'], LoadedRecord[]>();
  for (const loaded of column.records) {
    const withSameFacts = byFacts.get(loaded.record.facts);
    if (withSameFacts) withSameFacts.push(loaded);
    else byFacts.set(loaded.record.facts, [loaded]);
    const withSameSysinfo = bySysinfo.get(loaded.record.sysinfo);
    if (withSameSysinfo) withSameSysinfo.push(loaded);
    else bySysinfo.set(loaded.record.sysinfo, [loaded]);
  }
  // Groups filled from more than one distinct object: put back in the column's order.
  const mixed = new Set<ValueGroup>();
  for (const [rf, rs] of byFacts) for (const name in rf) add(facts, name, rf[name]!.value, rf[name]!.reason, rs, mixed);
  for (const [si, rs] of bySysinfo) {
    for (const name of SYSINFO_ROWS) {
      const as = name in si ? name : SYSINFO_OLD_NAMES[name];
      if (as !== undefined && as in si) add(sysinfo, name, si[as] ?? null, undefined, rs, mixed);
    }
  }
  if (mixed.size) {
    const order = new Map(column.records.map((loaded, i) => [loaded, i]));
    for (const group of mixed) group.records.sort((left, right) => order.get(left)! - order.get(right)!);
  }
  return { facts, sysinfo };
}

/**
 * A fact's records differ (a conflict) when they decided it two ways; one that left it null
 * while another decided it is no conflict (newly decided, as diff says). Sysinfo rows differ on
 * any two values.
 */
function cellOf(groups: Gathering | undefined, kind: Row['kind']): Cell | null {
  if (!groups) return null;
  const values = [...groups.values()];
  const decided = kind === 'sysinfo' ? values.length : values.filter((group) => group.value !== null).length;
  return { values, differs: decided > 1 };
}

/** The fact rows, grouped by probe: catalogue order, then facts the catalogue does not know (a newer cudaprobe's), by name. */
export function factGroups(columns: readonly Column[]): RowGroup[] {
  const gathered = columns.map(gather);
  const seen = new Map<string, Set<string>>();
  for (const columnValues of gathered) {
    for (const name of columnValues.facts.keys()) {
      const dot = name.indexOf('.');
      const probe = dot > 0 ? name.slice(0, dot) : '(no probe)';
      if (!seen.has(probe)) seen.set(probe, new Set());
      seen.get(probe)!.add(name.slice(dot + 1));
    }
  }
  const known = catalogue.map((probe) => probe.name);
  const probes = [...seen.keys()].sort(
    (left, right) =>
      (known.includes(left) ? known.indexOf(left) : known.length) - (known.includes(right) ? known.indexOf(right) : known.length) ||
      cmp(left, right),
  );
  const groups: RowGroup[] = [];
  const sysSpec = probeSpec('sysinfo')!;
  const sysRows = SYSINFO_ROWS.map((fact) => ({
    name: `sysinfo.${fact}`,
    probe: 'sysinfo',
    fact,
    description: sysSpec.facts.find((factSpec) => factSpec.name === fact)?.description ?? '',
    kind: 'sysinfo' as const,
    cells: gathered.map((columnValues) => cellOf(columnValues.sysinfo.get(fact), 'sysinfo')),
  })).filter((row) => row.cells.some((cell) => cell !== null && cell.values.some((group) => group.value !== null)));
  if (sysRows.length) groups.push({ probe: 'sysinfo', title: sysSpec.title, claims: sysSpec.claims, rows: sysRows });
  for (const probe of probes) {
    const spec = probeSpec(probe);
    const order = spec?.facts.map((factSpec) => factSpec.name) ?? [];
    const facts = [...seen.get(probe)!].sort(
      (left, right) =>
        (order.includes(left) ? order.indexOf(left) : order.length) - (order.includes(right) ? order.indexOf(right) : order.length) ||
        cmp(left, right),
    );
    groups.push({
      probe,
      title: spec?.title ?? "not in this cudamatrix's catalogue (written by a newer cudaprobe?)",
      claims: spec?.claims ?? [],
      rows: facts.map((fact) => {
        const name = `${probe}.${fact}`;
        return {
          name,
          probe,
          fact,
          description: spec?.facts.find((factSpec) => factSpec.name === fact)?.description ?? '',
          kind: 'fact' as const,
          cells: gathered.map((columnValues) => cellOf(columnValues.facts.get(name), 'fact')),
        };
      }),
    });
  }
  return groups;
}

export interface MetricRow {
  spec: MetricRowSpec;
  probe: string;
  claims: string[];
  /** Per column, per record (oldest first): the picked metric, or undefined. */
  cells: { record: LoadedRecord; metric: RecordedMetric }[][];
}

export function metricRows(columns: readonly Column[]): MetricRow[] {
  const byName = specsByName(KEY_METRICS);
  const rows: MetricRow[] = KEY_METRICS.map((spec) => {
    const probe = spec.metric.slice(0, spec.metric.indexOf('.'));
    return { spec, probe, claims: probeSpec(probe)?.claims ?? [], cells: columns.map(() => []) };
  });
  // Records read through the index: the picks made once per metrics shape, and only the picked metrics made.
  const picksOf = new WeakMap<readonly MetricShape[], number[]>();
  const picked = (record: BehaviourRecord): (RecordedMetric | undefined)[] => {
    const packed = packedMetricsOf(record);
    if (!packed) return pickMetrics(record.metrics, KEY_METRICS, byName);
    let at = picksOf.get(packed.shape);
    if (!at) {
      const chosen = pickMetrics(packed.shape as RecordedMetric[], KEY_METRICS, byName);
      picksOf.set(packed.shape, (at = chosen.map((metric) => (metric ? packed.shape.indexOf(metric) : -1))));
    }
    return at.map((i) => (i < 0 ? undefined : metricOf(packed.shape[i]!, packed.values[i]!)));
  };
  columns.forEach((column, ci) => {
    // Oldest first, as the column's records are; runs that shared the GPU before the others, so
    // that the value shown (the last) is from the newest run that had the GPU alone.
    const ordered = [...column.records].sort(
      (left, right) => Number(sharedCells(right.record).length > 0) - Number(sharedCells(left.record).length > 0),
    );
    for (const record of ordered) {
      picked(record.record).forEach((metric, i) => {
        if (metric) rows[i]!.cells[ci]!.push({ record, metric });
      });
    }
  });
  return rows.filter((row) => row.cells.some((picks) => picks.length > 0));
}

/** The conflicts: per column, the facts its records disagree on. */
export function conflictsOf(columns: readonly Column[], groups: readonly RowGroup[]): { column: Column; row: Row; cell: Cell }[] {
  const out: { column: Column; row: Row; cell: Cell }[] = [];
  columns.forEach((column, i) => {
    for (const group of groups)
      for (const row of group.rows) if (row.kind === 'fact' && row.cells[i]?.differs) out.push({ column, row, cell: row.cells[i]! });
  });
  return out;
}

/** Everything both outputs are drawn from, built once. */
export interface BehaviourTable {
  records: readonly LoadedRecord[];
  columns: Column[];
  groups: RowGroup[];
  metrics: MetricRow[];
  /** Per environment and GPU (the key less the driver), each driver's column against the previous driver's. */
  betweenDrivers: DriverStep[];
}

export function buildTable(records: readonly LoadedRecord[]): BehaviourTable {
  const columns = columnsOf(records);
  return { records, columns, groups: factGroups(columns), metrics: metricRows(columns), betweenDrivers: betweenDrivers(columns) };
}

/** One driver's column against the previous driver's column of the same environment, GPU, OS and container: what diff's engine called a change. */
export interface DriverStep {
  /** The key without the driver (diff.ts pairingKey): what both columns are of. */
  key: string;
  /** The older driver's column. */
  from: Column;
  /** The newer driver's column. */
  to: Column;
  /** Facts both decided, with different values (shared: another process used the GPU during its cell). */
  facts: FactChange[];
  /** Cells whose outcome differs (passed -> failed). */
  cells: CellChange[];
  /** The metric series beyond their noise (flagged), in the older column's order. */
  metrics: MetricComparison[];
  /** How many facts and metric series were compared. */
  compared: { facts: number; metrics: number };
}

/**
 * Per key less the driver, its columns by driver version, and each adjacent pair (older ->
 * newer) diffed by the one engine, as `cudamatrix diff` of the two columns' records would:
 * each column as one record (each probe from its newest record), a metric with several runs as
 * their geometric mean, its noise from the key's runs (every record of both columns). Every fact
 * and cell; of the metrics, the key metrics' series (withKeyMetrics: what the records index keeps).
 */
export function betweenDrivers(columns: readonly Column[]): DriverStep[] {
  const byKey = new Map<string, Column[]>();
  for (const column of columns) {
    const k = keyText({ ...column.key, driver: '' });
    (byKey.get(k) ?? byKey.set(k, []).get(k)!).push(column);
  }
  const out: DriverStep[] = [];
  for (const [key, list] of byKey) {
    if (list.length < 2) continue;
    const sorted = [...list].sort((left, right) => compareVersions(left.key.driver, right.key.driver) || cmp(left.text, right.text));
    const history = sorted.flatMap((column) => column.records.map((loaded) => withKeyMetrics(loaded.record)));
    for (let i = 1; i < sorted.length; i++) {
      const [from, to] = [sorted[i - 1]!, sorted[i]!];
      const pair = diffRecords(
        from.records.map((loaded) => withKeyMetrics(loaded.record)),
        to.records.map((loaded) => withKeyMetrics(loaded.record)),
        { history },
      ).pairs[0];
      if (!pair) continue;
      out.push({
        key,
        from,
        to,
        facts: pair.facts,
        cells: pair.cells,
        metrics: pair.metrics.filter((comparison) => comparison.flagged),
        compared: { facts: pair.factsCompared, metrics: pair.metricTally.compared },
      });
    }
  }
  return out;
}
