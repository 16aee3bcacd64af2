/**
 * The data behind behaviour.html, built once in Node and embedded in the page as JSON, from
 * which the page's own script draws every table and chart (so the tables and the charts show
 * the same numbers). Tables cover every column; the detail charts (memory per phase per source,
 * bandwidth against size, latencies, the pinned ceiling) show one record per column, the
 * newest: their samples are most of a record's size, and the page must stay small with
 * thousands of records. Strings that repeat (values, phases, sources, links) are kept once in
 * `strs` and referred to by index.
 */
import { catalogue, sampleReadings } from '../probes/catalogue.ts';
import type { Scalar } from '../probes/protocol.ts';
import type { BehaviourRecord, RecordedSample } from '../behaviour/behaviour-record.ts';
import type { LoadedRecord } from './load.ts';
import { noiseText, seriesText } from '../behaviour/diff.ts';
import { keyText } from '../behaviour/behaviour-record.ts';
import { buildTable, shownRecord, type BehaviourTable, type ValueGroup } from './behaviour-table.ts';
import { isSeries } from './key-metrics.ts';
import { factValueText, valueText } from './value-text.ts';

/** An index into PageData.strs. */
type S = number;

export interface PageData {
  records: number;
  strs: string[];
  /**
   * events: the link to the chosen record's event log, where it lies under the records folder; -1 if not.
   * prev: the column of the same environment, GPU, OS and container with the driver before this one's; -1 if none.
   * drift: the column's newest values beyond their noise against its earlier records, per newest record that drifted (table.ts driftsOf).
   */
  columns: {
    text: S;
    env: S;
    driver: S;
    gpu: S;
    records: number;
    link: S;
    events: S | -1;
    date: S;
    conflicts: number;
    prev: number;
    drift: PageDrift[];
  }[];
  /** Per environment and GPU with two or more drivers, each driver's column against the previous driver's (table.ts betweenDrivers). */
  changes: PageChange[];
  /**
   * Per fact row; a cell is -1 (not recorded), a value index (one value, linking to the column's record) or [value, link, reason?][] (several, or another record).
   * changed: [column, the previous driver's value][] where the chosen values differ (the column's `prev`).
   */
  facts: {
    probe: S;
    title: S;
    claims: S[];
    rows: { fact: S; desc: S; sys: 0 | 1; cells: (number | [S, S, S?][])[]; changed?: [number, S][] }[];
  }[];
  /**
   * Key metrics of each column, from the newest record that has each: null, [value] or [value, note]; drifted: [column, the value in the
   * records before][]; changed: [column, the value in the previous driver's column][] (beyond its noise: "Changed between drivers").
   */
  metrics: {
    metric: S;
    label: S;
    unit: S;
    /** How a negative value reads ({} its magnitude): KeyMetric.negative. */
    negative?: S;
    claims: S[];
    cells: ([number | null] | [number | null, S] | null)[];
    drifted?: [number, number | null][];
    changed?: [number, number | null][];
  }[];
  /** Reading source -> what it is. */
  sources: Record<string, string>;
  /** Probe -> title and claims, for the detail headings. */
  probes: Record<string, { title: string; claims: string[] }>;
  details: PageDetail[];
}

/**
 * The drifted series: [series text, unit, before, newest, move, noise][]; `more`: how many were left out. to/from: the newest record and the
 * newest of the earlier ones it was compared with, as "date id", and their links; earlier: how many earlier records.
 */
export interface PageDrift {
  to: S;
  toLink: S;
  from: S;
  link: S;
  earlier: number;
  series: [S, S, number | null, number | null, number | null, number][];
  more: number;
}

/**
 * One driver's column against the previous driver's: the columns' indexes; facts [name, before, now][]; cells [probe, before, now][];
 * series beyond their noise [series text, unit, before, now, move, noise, how the noise was decided][], `more` left out; compared: [facts, series].
 */
export interface PageChange {
  key: S;
  from: number;
  to: number;
  facts: [S, S, S][];
  cells: [S, S, S][];
  series: [S, S, number | null, number | null, number | null, number, S][];
  more: number;
  compared: [number, number];
}

/** Drifted or changed series on the page per column or pair of drivers; cudamatrix diff lists them all. */
const DRIFT_SERIES = 10;

export interface MemorySeries {
  label: S;
  phases: S[];
  sources: S[];
  /** [source][phase], bytes as recorded. */
  values: (number | null)[][];
}

export interface PageDetail {
  /** deciding: the source the probe's facts were decided on (their evidence's `source`), drawn on top; -1 if none. */
  mem: { probe: S; deciding: S | -1; series: MemorySeries[] }[];
  /** Per direction and memory: [size_bytes, GB/s][]. */
  bw: { name: S; points: [number, number | null][] }[];
  sync: [S, number | null][];
  /** [target_us, event-timed us, host-timed us][] and the resolution. */
  ev: { points: [number, number | null, number | null][]; resolution: number | null } | null;
  /** Driver-API levels: [prefill %, free VRAM bytes, ceiling bytes, stopped by, chunk ms]; runtime variants: [variant, round (1-based), free VRAM bytes, ceiling, stopped by, chunk ms]. */
  ceil: {
    levels: [number, number | null, number | null, S, number | null][];
    cap: number | null;
    variants: [S, number, number | null, number | null, S, number | null][];
  } | null;
}

class Strings {
  readonly list: string[] = [];
  private readonly index = new Map<string, number>();
  of(text: string): number {
    let i = this.index.get(text);
    if (i === undefined) {
      i = this.list.length;
      this.list.push(text);
      this.index.set(text, i);
    }
    return i;
  }
}

/**
 * Attributes that differ between the phases of one subject (or carry a measured delay), not between
 * subjects: sysmem-fallback's after-fill says its target_bytes, its other phases do not.
 */
const PHASE_ATTRS = new Set(['allocated', 'settle_s', 'wait_s', 'target_bytes']);

const num = (value: Scalar | undefined): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

function gib(bytes: number): string {
  return `${Number((bytes / 1024 ** 3).toFixed(2))} GiB`;
}

/** One series per subject: the samples grouped by their attributes less the per-phase ones. */
function memorySeries(samples: RecordedSample[], strs: Strings, pick: (attrs: Record<string, Scalar>) => boolean): MemorySeries[] {
  // Per subject (its attributes less the per-phase ones, as a key): its samples; null where `pick` leaves it out.
  const groups = new Map<string, { attrs: Record<string, Scalar>; samples: RecordedSample[] } | null>();
  for (const sample of samples) {
    const all = sample.attrs ?? {};
    let k = '';
    for (const attr of Object.keys(all).sort())
      if (!PHASE_ATTRS.has(attr)) k += `${attr}\u0000${typeof all[attr]}:${String(all[attr])}\u0001`;
    let group = groups.get(k);
    if (group === undefined) {
      const attrs = Object.fromEntries(Object.entries(all).filter(([attr]) => !PHASE_ATTRS.has(attr)));
      groups.set(k, (group = pick(attrs) ? { attrs, samples: [] } : null));
    }
    group?.samples.push(sample);
  }
  return [...groups.values()]
    .flatMap((group) => (group ? [group] : []))
    .map(({ attrs, samples: list }) => {
      const sources = Object.keys(sampleReadings).filter((src) => list.some((sample) => typeof sample.readings[src] === 'number'));
      // Sources of a newer cudaprobe, after the known ones, by name.
      const newer = new Set<string>();
      for (const sample of list)
        for (const src in sample.readings) if (!(src in sampleReadings) && typeof sample.readings[src] === 'number') newer.add(src);
      sources.push(...[...newer].sort());
      const parts = [
        attrs.kind,
        attrs.api ? `${attrs.api} API` : undefined,
        typeof attrs.processes === 'number' ? `${attrs.processes} processes` : undefined,
        typeof attrs.size_bytes === 'number' ? `${gib(attrs.size_bytes)}${typeof attrs.processes === 'number' ? ' each' : ''}` : undefined,
      ];
      return {
        label: strs.of(parts.filter((part) => part !== undefined).join(' · ')),
        phases: list.map((sample) => strs.of(sample.phase)),
        sources: sources.map((src) => strs.of(src)),
        values: sources.map((src) => list.map((sample) => num(sample.readings[src] ?? null))),
      };
    });
}

function detailOf(record: BehaviourRecord, strs: Strings): PageDetail {
  // Samples by probe and metrics by name, gathered once (a page has a detail per column).
  const byProbe = new Map<string, RecordedSample[]>();
  for (const sample of record.samples) (byProbe.get(sample.probe) ?? byProbe.set(sample.probe, []).get(sample.probe)!).push(sample);
  const byName = new Map<string, BehaviourRecord['metrics']>();
  for (const metric of record.metrics) (byName.get(metric.name) ?? byName.set(metric.name, []).get(metric.name)!).push(metric);
  const samplesOf = (probe: string) => byProbe.get(probe) ?? [];
  const mem: PageDetail['mem'] = [];
  // The source a probe's facts were decided on: other sources that read 0 throughout would hide it.
  const sources = new Map<string, string>();
  for (const name in record.facts) {
    const source = record.facts[name]!.evidence?.source;
    const probe = name.slice(0, name.indexOf('.'));
    if (typeof source === 'string' && !sources.has(probe)) sources.set(probe, source);
  }
  const deciding = (probe: string): S | -1 => (sources.has(probe) ? strs.of(sources.get(probe)!) : -1);
  // A chart per probe with samples (the memory probes), in the catalogue's order.
  for (const { name: probe } of catalogue) {
    const list = samplesOf(probe);
    if (!list.length) continue;
    // pinned-vram: the largest size pinned (the one the facts are decided on), its control, and the registered series.
    const largest =
      probe === 'pinned-vram'
        ? Math.max(...list.filter((sample) => sample.attrs?.kind === 'pinned').map((sample) => Number(sample.attrs?.size_bytes ?? 0)), 0)
        : 0;
    const pick = (attrs: Record<string, Scalar>) => largest === 0 || attrs.kind === 'registered' || attrs.size_bytes === largest;
    mem.push({ probe: strs.of(probe), deciding: deciding(probe), series: memorySeries(list, strs, pick) });
  }
  const metrics = (name: string) => byName.get(name) ?? [];

  const bwSeries = new Map<string, [number, number | null][]>();
  for (const metric of metrics('transfer-bandwidth.bandwidth_gbps')) {
    const size = num(metric.attrs?.size_bytes);
    if (size === null) continue;
    const name = `${String(metric.attrs?.direction ?? '?').toUpperCase()} ${String(metric.attrs?.memory ?? '?')}`;
    if (!bwSeries.has(name)) bwSeries.set(name, []);
    bwSeries.get(name)!.push([size, metric.value]);
  }
  const bw = [...bwSeries.entries()].map(([name, points]) => ({
    name: strs.of(name),
    points: points.sort((left, right) => left[0] - right[0]),
  }));

  const sync: PageDetail['sync'] = [];
  for (const statistic of ['min_us', 'p50_us', 'mean_us', 'p99_us']) {
    const metric = metrics(`sync-latency.${statistic}`)[0];
    if (metric) sync.push([strs.of(statistic.replace(/_us$/, '')), metric.value]);
  }

  const targets = new Map<number, [number, number | null, number | null]>();
  for (const [name, at] of [
    ['event-timing.elapsed_us', 1],
    ['event-timing.host_elapsed_us', 2],
  ] as const) {
    for (const metric of metrics(name)) {
      const target = num(metric.attrs?.target_us);
      if (target === null) continue;
      const point = targets.get(target) ?? [target, null, null];
      point[at] = metric.value;
      targets.set(target, point);
    }
  }
  const resolution = metrics('event-timing.resolution_us')[0]?.value ?? null;
  const ev =
    targets.size || resolution !== null ? { points: [...targets.values()].sort((left, right) => left[0] - right[0]), resolution } : null;

  let ceil: PageDetail['ceil'] = null;
  const ceilings = metrics('pinned-ceiling.ceiling_bytes');
  if (ceilings.length) {
    const free = metrics('pinned-ceiling.free_vram_bytes');
    const chunk = metrics('pinned-ceiling.chunk_alloc_ms');
    const levels: NonNullable<PageDetail['ceil']>['levels'] = [];
    const variants: NonNullable<PageDetail['ceil']>['variants'] = [];
    let cap: number | null = null;
    ceilings.forEach((ceiling) => {
      cap = num(ceiling.attrs?.cap_bytes) ?? cap;
      const prefill = num(ceiling.attrs?.prefill_percent);
      if (prefill !== null) {
        const same = (other: { attrs?: Record<string, Scalar> }) =>
          other.attrs?.prefill_percent === prefill && other.attrs?.api === ceiling.attrs?.api;
        levels.push([
          prefill,
          free.find(same)?.value ?? null,
          ceiling.value,
          strs.of(String(ceiling.attrs?.stopped_by ?? '')),
          chunk.find(same)?.value ?? null,
        ]);
      } else if (typeof ceiling.attrs?.variant === 'string') {
        // The reset comparison runs its variants alternately, several rounds: pair each ceiling with the chunk time and free VRAM of its round.
        const round = ceilings.filter((other) => other.attrs?.variant === ceiling.attrs?.variant).indexOf(ceiling);
        const ofRound = (list: typeof chunk) =>
          list.filter((metric) => metric.attrs?.variant === ceiling.attrs?.variant)[round]?.value ?? null;
        variants.push([
          strs.of(ceiling.attrs.variant),
          round + 1,
          ofRound(free),
          ceiling.value,
          strs.of(String(ceiling.attrs?.stopped_by ?? '')),
          ofRound(chunk),
        ]);
      }
    });
    ceil = { levels: levels.sort((left, right) => left[0] - right[0]), cap, variants };
  }
  return { mem, bw, sync, ev, ceil };
}

export function pageData(
  records: readonly LoadedRecord[],
  recordsLink: string,
  table: BehaviourTable = buildTable(records),
  recordsDirName = '',
): PageData {
  const strs = new Strings();
  const { columns, groups } = table;
  const linkOf = (loaded: LoadedRecord) => strs.of(`${recordsLink}/${loaded.file}`);
  const prev = previousDriverColumns(columns);
  const data: PageData = {
    records: records.length,
    strs: strs.list,
    columns: columns.map((column, i) => ({
      text: strs.of(column.text),
      env: strs.of(column.key.environment),
      driver: strs.of(column.key.driver),
      gpu: strs.of(column.key.gpu),
      records: column.records.length,
      link: linkOf(column.chosen),
      events: eventsLink(column.chosen.record.evidence, recordsLink, recordsDirName, strs),
      date: strs.of(column.chosen.record.observed.date.slice(0, 10)),
      conflicts: groups.reduce(
        (count, rowGroup) => count + rowGroup.rows.filter((row) => row.kind === 'fact' && row.cells[i]?.differs).length,
        0,
      ),
      prev: prev[i]!,
      drift: column.drifts.map((drift) => ({
        to: strs.of(`${drift.to.record.observed.date.slice(0, 10)} ${drift.to.record.id.slice(0, 8)}`),
        toLink: linkOf(drift.to),
        from: strs.of(`${drift.from.record.observed.date.slice(0, 10)} ${drift.from.record.id.slice(0, 8)}`),
        link: linkOf(drift.from),
        earlier: drift.earlier,
        series: drift.metrics
          .slice(0, DRIFT_SERIES)
          .map((comparison): PageDrift['series'][number] => [
            strs.of(seriesText(comparison.name, comparison.attrs)),
            strs.of(comparison.unit),
            comparison.a,
            comparison.b,
            comparison.move,
            comparison.noise,
          ]),
        more: Math.max(0, drift.metrics.length - DRIFT_SERIES),
      })),
    })),
    changes: table.betweenDrivers.map((step) => ({
      key: strs.of(step.key),
      from: columns.indexOf(step.from),
      to: columns.indexOf(step.to),
      facts: step.facts.map((fact): [S, S, S] => [
        strs.of(fact.name),
        strs.of(factValueText(fact.name, fact.a)),
        strs.of(factValueText(fact.name, fact.b)),
      ]),
      cells: step.cells.map((cell): [S, S, S] => [strs.of(cell.probe), strs.of(cell.a), strs.of(cell.b)]),
      series: step.metrics
        .slice(0, DRIFT_SERIES)
        .map((comparison): PageChange['series'][number] => [
          strs.of(seriesText(comparison.name, comparison.attrs)),
          strs.of(comparison.unit),
          comparison.a,
          comparison.b,
          comparison.move,
          comparison.noise,
          strs.of(noiseText(comparison)),
        ]),
      more: Math.max(0, step.metrics.length - DRIFT_SERIES),
      compared: [step.compared.facts, step.compared.metrics],
    })),
    facts: [],
    metrics: [],
    sources: sampleReadings,
    probes: Object.fromEntries(catalogue.map((probe) => [probe.name, { title: probe.title, claims: probe.claims }])),
    details: [],
  };
  data.facts = groups.map((rowGroup) => ({
    probe: strs.of(rowGroup.probe),
    title: strs.of(rowGroup.title),
    claims: rowGroup.claims.map((claim) => strs.of(claim)),
    rows: rowGroup.rows.map((row) => {
      // Byte counts (memory_total_bytes) and times as the console writes them (as BEHAVIOUR.md does); the rest as recorded.
      const text = (value: Scalar) => factValueText(row.fact, value);
      // What a column shows of a fact: the value of the newest record that measured its probe. That
      // record, where it has the fact, is the newest that has it: the last of its value's records
      // (sysinfo rows also gather records without facts, which no probe's shown record is).
      const shownOf = (i: number) => columns[i]!.byProbe.get(row.probe) ?? columns[i]!.chosen;
      const holds = (valueGroup: ValueGroup, i: number) =>
        row.kind === 'fact' ? valueGroup.records.at(-1) === shownOf(i) : valueGroup.records.includes(shownOf(i));
      const chosenValue = (i: number) => row.cells[i]?.values.find((valueGroup) => holds(valueGroup, i));
      const changed: [number, S][] = [];
      row.cells.forEach((_, i) => {
        const was = prev[i]! >= 0 ? chosenValue(prev[i]!) : undefined;
        const now = chosenValue(i);
        if (was && now && valueText(was.value) !== valueText(now.value)) changed.push([i, strs.of(text(was.value))]);
      });
      return {
        fact: strs.of(row.fact),
        desc: strs.of(row.description),
        sys: row.kind === 'sysinfo' ? 1 : 0,
        cells: row.cells.map((cell, i) => {
          if (!cell) return -1;
          // A fact decided one way and left null by other records is shown as decided (no conflict).
          const values =
            row.kind === 'fact' && !cell.differs && cell.values.length > 1
              ? cell.values.filter((valueGroup) => valueGroup.value !== null)
              : cell.values;
          const only = values[0]!;
          if (values.length === 1 && holds(only, i) && !only.reason) return strs.of(text(only.value));
          return values.map((valueGroup): [S, S, S?] => {
            // Link each value to the newest record that observed it.
            const at: [S, S, S?] = [strs.of(text(valueGroup.value)), linkOf(valueGroup.records[valueGroup.records.length - 1]!)];
            if (valueGroup.reason) at.push(strs.of(valueGroup.reason));
            return at;
          });
        }),
        ...(changed.length ? { changed } : {}),
      };
    }),
  }));
  data.metrics = table.metrics.map((row) => ({
    metric: strs.of(row.spec.metric),
    label: strs.of(row.spec.label),
    unit: strs.of(row.cells.find((list) => list.length)?.[0]?.metric.unit ?? ''),
    ...(row.spec.negative ? { negative: strs.of(row.spec.negative) } : {}),
    claims: row.claims.map((claim) => strs.of(claim)),
    cells: row.cells.map((list) => {
      // The newest record that has the metric (lists are oldest first).
      const got = list.at(-1);
      if (!got) return null;
      const attrs = got.metric.attrs ?? {};
      const note = [
        typeof attrs.size_bytes === 'number' && row.spec.largestSize ? gibOrMib(attrs.size_bytes) : '',
        typeof attrs.source === 'string' ? attrs.source : '',
        typeof attrs.stopped_by === 'string' ? `stopped by ${attrs.stopped_by}` : '',
      ]
        .filter(Boolean)
        .join(', ');
      return note ? [got.metric.value, strs.of(note)] : [got.metric.value];
    }),
    ...drifted(row.cells, columns),
    ...changedFromDriver(row.cells, columns, table.betweenDrivers),
  }));
  data.details = columns.map((column) => detailOf(shownRecord(column), strs));
  return data;
}

/** Per column, the column of the same key less the driver with the driver just before it (columns are sorted by driver within a key); -1 if none. */
function previousDriverColumns(columns: BehaviourTable['columns']): number[] {
  const last = new Map<string, number>();
  return columns.map((column, i) => {
    const k = keyText({ ...column.key, driver: '' });
    const before = last.get(k) ?? -1;
    last.set(k, i);
    return before;
  });
}

/** A key-metric row's drifted columns: where the cell's record (the newest that has the metric) drifted in that series. */
function drifted(
  cells: BehaviourTable['metrics'][number]['cells'],
  columns: BehaviourTable['columns'],
): { drifted?: [number, number | null][] } {
  const out: [number, number | null][] = [];
  cells.forEach((list, i) => {
    const got = list.at(-1);
    const driftedSeries =
      got && columns[i]!.drifts.find((drift) => drift.to === got.record)?.metrics.find((comparison) => isSeries(comparison, got.metric));
    if (driftedSeries) out.push([i, driftedSeries.a]);
  });
  return out.length ? { drifted: out } : {};
}

/** A key-metric row's columns whose series moved beyond its noise against the previous driver's column, with the value there. */
function changedFromDriver(
  cells: BehaviourTable['metrics'][number]['cells'],
  columns: BehaviourTable['columns'],
  steps: BehaviourTable['betweenDrivers'],
): { changed?: [number, number | null][] } {
  const out: [number, number | null][] = [];
  cells.forEach((list, i) => {
    const got = list.at(-1);
    const changedSeries =
      got && steps.find((step) => step.to === columns[i])?.metrics.find((comparison) => isSeries(comparison, got.metric));
    if (changedSeries) out.push([i, changedSeries.a]);
  });
  return out.length ? { changed: out } : {};
}

function gibOrMib(bytes: number): string {
  return bytes >= 1024 ** 3 ? gib(bytes) : `${Number((bytes / 1024 ** 2).toFixed(2))} MiB`;
}

/** The event log a record names (relative to the repository root), as a link, where it lies under the records folder. */
function eventsLink(evidence: string | undefined, recordsLink: string, recordsDirName: string, strs: Strings): S | -1 {
  const under = `${recordsDirName}/`;
  return typeof evidence === 'string' && recordsDirName && evidence.startsWith(under)
    ? strs.of(`${recordsLink}/${evidence.slice(under.length)}`)
    : -1;
}
