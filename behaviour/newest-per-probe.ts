/**
 * Several records of one observation read as one: each probe from the newest record that
 * measured it. A newer record of a few probes (an opt-in run) then hides nothing of an older
 * full one, in `report`'s columns as in `diff` and `gha merge`'s comparison with the committed
 * records.
 */
import type { BehaviourRecord } from './behaviour-record.ts';

/** Per cells list and facts object (records read through the index share them): the probes they name. */
const probesOfPart = new WeakMap<object, string[]>();
const cached = (part: object, make: () => string[]) => {
  let probes = probesOfPart.get(part);
  if (!probes) probesOfPart.set(part, (probes = make()));
  return probes;
};

/** The probes a record measured: its passed cells, and those its facts name (a skipped cell may still decide facts: p2p on one GPU). */
export function probesOf(record: BehaviourRecord): string[][] {
  return [
    cached(record.cells, () => record.cells.filter((cell) => cell.status === 'passed').map((cell) => cell.probe)),
    cached(record.facts, () => [...new Set(Object.keys(record.facts).map((factName) => factName.slice(0, factName.indexOf('.'))))]),
  ];
}

/** Whether a record has a fact (without listing its keys: 10,000 records, several times each). */
export function hasFacts(record: BehaviourRecord): boolean {
  for (const _ in record.facts) return true;
  return false;
}

/**
 * Of one observation's records, per probe the newest with facts that measured it. `newer(item, other)`:
 * whether item is newer than other (a strict order). `recordOf` reaches the record of an item (a record,
 * or one with its file).
 */
export function newestByProbe<T>(
  items: Iterable<T>,
  newer: (item: T, other: T) => boolean,
  recordOf: (item: T) => BehaviourRecord,
): Map<string, T> {
  // Records of the same cells list and facts object (the index shares them among alike records)
  // measured the same probes: only the newest of each such group can be a probe's newest. A
  // column of 50 records is then a few candidates, not 50 times its probes (bench/scale).
  const newestOfParts = new Map<object, Map<object, T>>();
  for (const item of items) {
    const record = recordOf(item);
    if (!hasFacts(record)) continue;
    let byFacts = newestOfParts.get(record.cells);
    if (!byFacts) newestOfParts.set(record.cells, (byFacts = new Map()));
    const held = byFacts.get(record.facts);
    if (held === undefined || newer(item, held)) byFacts.set(record.facts, item);
  }
  const byProbe = new Map<string, T>();
  for (const byFacts of newestOfParts.values()) {
    for (const item of byFacts.values()) {
      for (const probes of probesOf(recordOf(item))) {
        for (const probe of probes) {
          const held = byProbe.get(probe);
          if (held === undefined || newer(item, held)) byProbe.set(probe, item);
        }
      }
    }
  }
  return byProbe;
}

/**
 * `base`, with each probe's facts, metrics, samples and cell taken from its record in `byProbe`
 * (base's own where none); a probe's cell that neither has (a skipped windows-registry of an
 * older full run) from the first of the records that has one.
 */
export function composeRecord(base: BehaviourRecord, byProbe: ReadonlyMap<string, BehaviourRecord>): BehaviourRecord {
  // Every probe's newest is the base itself (a column of full runs): nothing to take from others.
  let onlyBase = true;
  for (const record of byProbe.values()) if (record !== base) onlyBase = false;
  if (onlyBase) return base;
  const from = (probe: string) => byProbe.get(probe) ?? base;
  const probeOf = (name: string) => name.slice(0, name.indexOf('.'));
  const facts: BehaviourRecord['facts'] = {};
  const metrics: BehaviourRecord['metrics'] = [];
  const samples: BehaviourRecord['samples'] = [];
  const records = [...new Set([base, ...byProbe.values()])];
  for (const record of records) {
    for (const [name, fact] of Object.entries(record.facts)) if (from(probeOf(name)) === record) facts[name] = fact;
    for (const metric of record.metrics) if (from(probeOf(metric.name)) === record) metrics.push(metric);
    for (const sample of record.samples) if (from(sample.probe) === record) samples.push(sample);
  }
  const cells = new Map<string, BehaviourRecord['cells'][number]>();
  for (const record of records) for (const cell of record.cells) if (from(cell.probe) === record) cells.set(cell.probe, cell);
  for (const record of records) for (const cell of record.cells) if (!cells.has(cell.probe)) cells.set(cell.probe, cell);
  return { ...base, facts, metrics, samples, cells: [...cells.values()] };
}
