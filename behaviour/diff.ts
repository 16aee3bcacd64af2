/**
 * What changed between two sets of behaviour records (two runs, two records, two driver
 * versions' folders): pure, so that `cudamatrix diff`, a workflow and bench/report call the same.
 * How records pair, what is compared and how a metric's noise is decided: docs/records.md,
 * "cudamatrix diff A B" and "Noise".
 */
import type { Scalar } from '../probes/protocol.ts';
import { composeRecord, hasFacts, newestByProbe } from './newest-per-probe.ts';
import { keyText, type BehaviourRecord, type SharedCell } from './behaviour-record.ts';
import { environmentChanges, type EnvironmentChange, hostControl, segmentsOf, sharedCells, sharedRun } from './around-driver.ts';
import { HISTORY_PER_DRIVER } from './noise.ts';
import {
  compareSeries,
  DEFAULT_TOLERANCE,
  noiseText,
  type MetricComparison,
  type MetricTally,
  type PairSamples,
} from './series-verdict.ts';
import { aligned, relativeMove, seriesText, shapeOf } from './series.ts';

export {
  DEFAULT_TOLERANCE,
  noiseText,
  relativeMove,
  segmentsOf,
  seriesText,
  sharedCells,
  type EnvironmentChange,
  type MetricComparison,
  type MetricTally,
};

export interface DiffSide {
  id: string;
  driver: string;
  date: string;
  runId: string;
  target: string;
  /** Other records of the key whose probes were compared in place of this one's (composed: an opt-in run's record over a full one). */
  takenFrom?: { id: string; probes: string[] }[];
}

export interface FactChange {
  name: string;
  a: Scalar;
  b: Scalar;
  /** Another process used the GPU during the fact's cell (how many): not called the driver's. */
  shared?: number;
}

export interface CellChange {
  probe: string;
  a: string;
  b: string;
}

export interface PairDiff {
  /** The key without the driver: what the two records are both of. */
  key: string;
  a: DiffSide;
  b: DiffSide;
  /** Facts both records decided, with different values: a change. */
  facts: FactChange[];
  /** Facts one record decided and the other left undecided (null): newly decided (a null) or no longer (b null); listed, not a change. */
  decided: FactChange[];
  cells: CellChange[];
  /** The series both records have that moved beyond their noise (with `all`, every one), in a's order. */
  metrics: MetricComparison[];
  metricTally: MetricTally;
  factsCompared: number;
  cellsCompared: number;
  onlyA: { facts: string[]; metrics: string[]; cells: string[] };
  onlyB: { facts: string[]; metrics: string[]; cells: string[] };
  /** Default expectations whose outcome differs (passed -> failed): listed; the fact or metric under them decides. */
  verdicts: { title: string; a: string; b: string }[];
  /** What differs around the driver (kernel, cudaprobe build, ...): said in the header; moves are labelled with it. */
  environment: EnvironmentChange[];
  /** Cells during which another process used the GPU, per side. */
  shared: { a: SharedCell[]; b: SharedCell[] };
  /** The key's other runs that measured its run-to-run noise, and in how many groups (driver and kernel). */
  history: { runs: number; groups: number };
  /** How many runs each side has (1: a single run or record). */
  runs: { a: number; b: number };
  /** A fact or cell changed, or a metric moved beyond its noise, and neither was explained by a shared GPU or the host. */
  changed: boolean;
}

export type { SharedCell };

export interface Unpaired {
  key: string;
  record: DiffSide;
  /** Why it was not compared. */
  reason: string;
  /** The id of the record of this key on the same side that was compared instead (absent: the other side has no record of the key). */
  comparedInstead?: string;
}

/** Records of one full key (driver included) on one side whose facts disagree: a conflict kept in a folder. */
export interface SideConflict {
  side: 'a' | 'b';
  /** The full key (with the driver). */
  key: string;
  records: DiffSide[];
  /** The facts they both have with different values. */
  facts: string[];
}

export interface RecordsDiff {
  changed: boolean;
  pairs: PairDiff[];
  /** Observations of a key that the other side has none of, and older ones of a compared key. */
  onlyA: Unpaired[];
  onlyB: Unpaired[];
  /** Keys with records on one side that disagree on a fact: only the first of them was compared. */
  conflicts: SideConflict[];
}

const side = (record: BehaviourRecord): DiffSide => ({
  id: record.id,
  driver: record.key.driver,
  date: record.observed.date,
  runId: record.observed.runId,
  target: record.observed.target,
});

/** The key without the driver (the pairing of records of two driver versions). */
export const pairingKey = (record: BehaviourRecord): string => keyText({ ...record.key, driver: '' });

/** The differences between two records of one key (drivers may differ). `history`: the records that measure the key's noise (the two included or not). */
export function diffPair(
  ra: BehaviourRecord,
  rb: BehaviourRecord,
  all = false,
  context: { history?: readonly BehaviourRecord[]; runsA?: BehaviourRecord[]; runsB?: BehaviourRecord[] } = {},
): PairDiff {
  const facts: FactChange[] = [];
  const decided: FactChange[] = [];
  const onlyA = { facts: [] as string[], metrics: [] as string[], cells: [] as string[] };
  const onlyB = { facts: [] as string[], metrics: [] as string[], cells: [] as string[] };
  const shared = { a: sharedCells(ra), b: sharedCells(rb) };
  const sharedProbes = new Map<string, number>();
  for (const cell of [...shared.a, ...shared.b]) sharedProbes.set(cell.probe, Math.max(sharedProbes.get(cell.probe) ?? 0, cell.processes));
  const probeOf = (name: string) => name.slice(0, name.indexOf('.'));
  let explainedFacts = 0;
  let factsCompared = 0;
  for (const [name, factA] of Object.entries(ra.facts)) {
    const factB = rb.facts[name];
    if (!factB) onlyA.facts.push(name);
    else {
      factsCompared++;
      if (factA.value !== factB.value) {
        if (factA.value === null || factB.value === null) decided.push({ name, a: factA.value, b: factB.value });
        else {
          const processes = sharedProbes.get(probeOf(name));
          facts.push({ name, a: factA.value, b: factB.value, ...(processes ? { shared: processes } : {}) });
          if (processes) explainedFacts++;
        }
      }
    }
  }
  for (const name of Object.keys(rb.facts)) if (!(name in ra.facts)) onlyB.facts.push(name);

  const cells: CellChange[] = [];
  const cellsB = new Map(rb.cells.map((cell) => [cell.probe, cell.status]));
  let cellsCompared = 0;
  for (const cell of ra.cells) {
    const other = cellsB.get(cell.probe);
    if (other === undefined) onlyA.cells.push(cell.probe);
    else {
      cellsCompared++;
      if (other !== cell.status) cells.push({ probe: cell.probe, a: cell.status, b: other });
    }
  }
  const cellsA = new Set(ra.cells.map((cell) => cell.probe));
  for (const cell of rb.cells) if (!cellsA.has(cell.probe)) onlyB.cells.push(cell.probe);

  const shapeA = shapeOf(ra.metrics);
  const shapeB = aligned(ra.metrics, rb.metrics) ? shapeA : shapeOf(rb.metrics);
  // Each side's runs (a single run or record: itself), and the key's other runs by driver and
  // kernel: a pair cannot measure its own noise (their difference would be both the move and
  // the noise it is judged by), and a kernel update moves some numbers (sync latency by 18 % on
  // the H200 between two kernels) that are no run-to-run noise.
  const runsA = context.runsA?.length ? context.runsA : [ra];
  const runsB = context.runsB?.length ? context.runsB : [rb];
  const inSides = new Set([...runsA, ...runsB, ra, rb].map((record) => record.id));
  const groupsBy = new Map<string, Map<string, BehaviourRecord>>();
  const perKernel = new Map<string, number>();
  const segment = segmentsOf(context.history ?? []);
  for (const record of context.history ?? []) {
    if (inSides.has(record.id) || record.metrics.length === 0) continue;
    // At most HISTORY_PER_DRIVER of each driver and kernel, in the order given (newest first).
    const kernel = `${record.key.driver}\u0000${String(record.sysinfo.kernel ?? '')}`;
    const groupKey = `${kernel}\u0000${segment.get(record) ?? 0}`;
    let group = groupsBy.get(groupKey);
    if (group?.has(record.id) || (perKernel.get(kernel) ?? 0) >= HISTORY_PER_DRIVER) continue;
    if (!group) groupsBy.set(groupKey, (group = new Map()));
    group.set(record.id, record);
    perKernel.set(kernel, (perKernel.get(kernel) ?? 0) + 1);
  }
  let series = 0;
  for (const k of shapeA.keys()) if (shapeB === shapeA || shapeB.has(k)) series++;
  const samples: PairSamples = { runsA, runsB, groups: [...groupsBy.values()].map((group) => [...group.values()]), series };
  const environment = environmentChanges(ra, rb);
  // What differs around the driver is said beside each change: it may be theirs.
  const aroundDriver = environment.map((e) => e.field);
  const metrics: MetricComparison[] = [];
  const tally: MetricTally = {
    compared: 0,
    flagged: 0,
    undecided: 0,
    explained: 0,
    noiseFrom: { runs: 0, repeats: 0, none: 0 },
    nearest: null,
  };
  for (const [k, pa] of shapeA) {
    const pb = shapeB === shapeA ? pa : shapeB.get(k);
    const metric = ra.metrics[pa[0]!]!;
    if (!pb) onlyA.metrics.push(seriesText(metric.name, metric.attrs));
    else {
      const comparison = compareSeries(k, metric.name, ra.metrics, pa, rb.metrics, pb, samples, all, tally);
      if (comparison?.flagged) {
        const processes = sharedProbes.get(probeOf(comparison.name));
        const explained: MetricComparison['explained'] = processes ? { by: 'shared', processes } : hostControl(comparison, ra, rb);
        if (!explained && aroundDriver.length) comparison.with = aroundDriver;
        if (explained) {
          comparison.explained = explained;
          comparison.flagged = false;
          tally.flagged--;
          tally.explained++;
        }
      }
      if (comparison) metrics.push(comparison);
    }
  }
  if (shapeB !== shapeA) {
    for (const [k, pb] of shapeB) {
      if (shapeA.has(k)) continue;
      const metric = rb.metrics[pb[0]!]!;
      onlyB.metrics.push(seriesText(metric.name, metric.attrs));
    }
  }
  const verdictsB = new Map(rb.verdicts.map((verdict) => [verdict.title, verdict.status]));
  const verdicts = ra.verdicts.flatMap((verdict) => {
    const other = verdictsB.get(verdict.title);
    return other !== undefined && other !== verdict.status ? [{ title: verdict.title, a: verdict.status, b: other }] : [];
  });
  const sharedCellChange = cells.filter((cell) => sharedProbes.has(cell.probe)).length;
  const changed = facts.length - explainedFacts > 0 || cells.length - sharedCellChange > 0 || tally.flagged > 0;
  return {
    key: pairingKey(ra),
    a: side(ra),
    b: side(rb),
    facts,
    decided,
    cells,
    metrics,
    metricTally: tally,
    factsCompared,
    cellsCompared,
    onlyA,
    onlyB,
    verdicts,
    environment,
    shared,
    history: { runs: samples.groups.reduce((total, group) => total + group.length, 0), groups: samples.groups.length },
    runs: { a: runsA.length, b: runsB.length },
    changed,
  };
}

/**
 * The one compared first: a record with facts before one without (a run of sysinfo alone must
 * not hide a full one), one that had the GPU alone before one that shared it (a neighbour's
 * numbers must not be the baseline), then the newest.
 */
export const newestFirst = (left: BehaviourRecord, right: BehaviourRecord) =>
  Number(hasFacts(right)) - Number(hasFacts(left)) ||
  Number(sharedRun(left)) - Number(sharedRun(right)) ||
  (left.observed.date < right.observed.date
    ? 1
    : left.observed.date > right.observed.date
      ? -1
      : left.id < right.id
        ? -1
        : left.id > right.id
          ? 1
          : 0);

/** One key's records (newest first) as the one diff compares: the newest, with each probe from the newest that measured it; and the records it took. */
function composed(list: BehaviourRecord[]): { record: BehaviourRecord; used: Set<BehaviourRecord>; takenFrom: DiffSide['takenFrom'] } {
  const byProbe = newestByProbe(
    list,
    (left, right) => newestFirst(left, right) < 0,
    (record) => record,
  );
  const others = new Map<BehaviourRecord, string[]>();
  for (const [probe, source] of [...byProbe].sort(([left], [right]) => (left < right ? -1 : 1)))
    if (source !== list[0]) others.set(source, [...(others.get(source) ?? []), probe]);
  return {
    record: composeRecord(list[0]!, byProbe),
    used: new Set([list[0]!, ...byProbe.values()]),
    takenFrom: [...others].map(([record, probes]) => ({ id: record.id, probes })),
  };
}

/**
 * Of records read for diff: those it needs in full. Each key's newest and its probes' newest
 * records (as diffRecords compares them), and the runs that measure the key's noise: the newest
 * HISTORY_PER_DRIVER of each driver and kernel (diffPair takes no more).
 */
export function comparedRecords(records: BehaviourRecord[]): Set<BehaviourRecord> {
  const out = new Set<BehaviourRecord>();
  for (const list of byKey(records).values()) {
    for (const record of composed(list).used) out.add(record);
    const taken = new Map<string, number>();
    for (const record of list) {
      const kernel = `${record.key.driver}\u0000${String(record.sysinfo.kernel ?? '')}`;
      const count = taken.get(kernel) ?? 0;
      if (count >= HISTORY_PER_DRIVER) continue;
      out.add(record);
      taken.set(kernel, count + 1);
    }
  }
  return out;
}

function byKey(records: BehaviourRecord[]): Map<string, BehaviourRecord[]> {
  const out = new Map<string, BehaviourRecord[]>();
  for (const record of records) {
    const k = pairingKey(record);
    const list = out.get(k);
    if (list) list.push(record);
    else out.set(k, [record]);
  }
  for (const list of out.values()) list.sort(newestFirst);
  return out;
}

/** Per full key (driver included) of a side, the records that disagree on a fact both have. */
function sideConflicts(name: 'a' | 'b', groups: Map<string, BehaviourRecord[]>): SideConflict[] {
  const out: SideConflict[] = [];
  for (const list of groups.values()) {
    if (list.length < 2) continue;
    const byFull = new Map<string, BehaviourRecord[]>();
    for (const record of list) {
      const k = keyText(record.key);
      const same = byFull.get(k);
      if (same) same.push(record);
      else byFull.set(k, [record]);
    }
    for (const [key, rs] of byFull) {
      // A fact disagrees when its records hold two decided values (null is undecided, not a
      // disagreement); every record that decided it is then one of those that disagree. One
      // pass over the facts, not a comparison of every pair of records.
      const values = new Map<string, { first: unknown; differs: boolean; records: BehaviourRecord[] }>();
      for (const record of rs) {
        for (const [factName, fact] of Object.entries(record.facts)) {
          if (fact.value === null) continue;
          const seen = values.get(factName);
          if (!seen) values.set(factName, { first: fact.value, differs: false, records: [record] });
          else {
            seen.differs ||= seen.first !== fact.value;
            seen.records.push(record);
          }
        }
      }
      const facts = [...values].filter(([, seen]) => seen.differs);
      const involved = new Set(facts.flatMap(([, seen]) => seen.records));
      if (facts.length)
        out.push({
          side: name,
          key,
          records: rs.filter((record) => involved.has(record)).map(side),
          facts: facts.map(([disputedFact]) => disputedFact).sort(),
        });
    }
  }
  return out;
}

/**
 * The differences between two sets of records (or two records). `changed` says whether
 * behaviour changed: a fact or a cell's outcome, or a metric beyond its noise, in any pair.
 * Each pair keeps the metrics that moved beyond their noise, and with `all` every metric compared.
 */
export function diffRecords(
  sideA: BehaviourRecord | BehaviourRecord[],
  sideB: BehaviourRecord | BehaviourRecord[],
  options: { all?: boolean; history?: BehaviourRecord[] } = {},
): RecordsDiff {
  const ga = byKey(Array.isArray(sideA) ? sideA : [sideA]);
  const gb = byKey(Array.isArray(sideB) ? sideB : [sideB]);
  const gh = byKey(options.history ?? []);
  const pairs: PairDiff[] = [];
  const onlyA: Unpaired[] = [];
  const onlyB: Unpaired[] = [];
  const older = (newest: BehaviourRecord, record: BehaviourRecord) =>
    !hasFacts(record) && hasFacts(newest)
      ? `an observation of this key without facts; the newest with facts (${newest.id.slice(0, 8)}, ${newest.observed.date.slice(0, 10)}) was compared`
      : sharedRun(record) && !sharedRun(newest)
        ? `a run that shared the GPU with other processes; the newest that had it alone (${newest.id.slice(0, 8)}, ${newest.observed.date.slice(0, 10)}) was compared`
        : `an older observation of this key; the newest (${newest.id.slice(0, 8)}, ${newest.observed.date.slice(0, 10)}) was compared`;
  for (const [key, la] of ga) {
    const lb = gb.get(key);
    if (!lb) {
      for (const record of la) onlyA.push({ key, record: side(record), reason: 'no observation of this key on the other side' });
      continue;
    }
    // Each side as one record: its newest, each probe from the newest record that measured it.
    const [ca, cb] = [composed(la), composed(lb)];
    // Each side's runs of the compared driver, whole (a folder's digests are read whole in the
    // history where it has them); the key's other runs in the history measure its noise.
    const whole = new Map((gh.get(key) ?? []).map((record) => [record.id, record]));
    // A side's runs: its records of the compared record's driver and kernel (a kernel moves some
    // numbers: runs of another are the key's history, a group of their own, not this side's).
    const runsOf = (list: BehaviourRecord[], compared: BehaviourRecord) =>
      list
        .filter(
          (record) => record.key.driver === compared.key.driver && record.sysinfo.kernel === compared.sysinfo.kernel && !sharedRun(record),
        )
        .map((record) => (record.metrics.length ? record : whole.get(record.id)))
        .filter((record): record is BehaviourRecord => record !== undefined && record.metrics.length > 0)
        .slice(0, HISTORY_PER_DRIVER);
    const runsA = runsOf(la, ca.record);
    const runsB = runsOf(lb, cb.record);
    // A single run per side stands as the compared (composed) record itself.
    const pair = diffPair(ca.record, cb.record, options.all ?? false, {
      history: [...la, ...lb, ...(gh.get(key) ?? [])],
      runsA: runsA.length > 1 ? runsA : [ca.record],
      runsB: runsB.length > 1 ? runsB : [cb.record],
    });
    if (ca.takenFrom!.length) pair.a.takenFrom = ca.takenFrom;
    if (cb.takenFrom!.length) pair.b.takenFrom = cb.takenFrom;
    pairs.push(pair);
    for (const olderRecord of la.slice(1))
      if (!ca.used.has(olderRecord))
        onlyA.push({ key, record: side(olderRecord), reason: older(la[0]!, olderRecord), comparedInstead: la[0]!.id });
    for (const olderRecord of lb.slice(1))
      if (!cb.used.has(olderRecord))
        onlyB.push({ key, record: side(olderRecord), reason: older(lb[0]!, olderRecord), comparedInstead: lb[0]!.id });
  }
  for (const [key, lb] of gb)
    if (!ga.has(key))
      for (const record of lb) onlyB.push({ key, record: side(record), reason: 'no observation of this key on the other side' });
  const conflicts = [...sideConflicts('a', ga), ...sideConflicts('b', gb)];
  return { changed: pairs.some((pair) => pair.changed), pairs, onlyA, onlyB, conflicts };
}
