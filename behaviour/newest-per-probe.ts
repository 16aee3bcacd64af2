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
export function probesOf(r: BehaviourRecord): string[][] {
  return [
    cached(r.cells, () => r.cells.filter((c) => c.status === 'passed').map((c) => c.probe)),
    cached(r.facts, () => [...new Set(Object.keys(r.facts).map((n) => n.slice(0, n.indexOf('.'))))]),
  ];
}

/** Whether a record has a fact (without listing its keys: 10,000 records, several times each). */
export function hasFacts(r: BehaviourRecord): boolean {
  for (const _ in r.facts) return true;
  return false;
}

/**
 * Of one observation's records, per probe the newest with facts that measured it. `newer(a, b)`:
 * whether a is newer than b (a strict order). `recordOf` reaches the record of an item (a record,
 * or one with its file).
 */
export function newestByProbe<T>(items: Iterable<T>, newer: (a: T, b: T) => boolean, recordOf: (t: T) => BehaviourRecord): Map<string, T> {
  // Records of the same cells list and facts object (the index shares them among alike records)
  // measured the same probes: only the newest of each such group can be a probe's newest. A
  // column of 50 records is then a few candidates, not 50 times its probes (bench/scale).
  const newestOfParts = new Map<object, Map<object, T>>();
  for (const item of items) {
    const r = recordOf(item);
    if (!hasFacts(r)) continue;
    let byFacts = newestOfParts.get(r.cells);
    if (!byFacts) newestOfParts.set(r.cells, (byFacts = new Map()));
    const held = byFacts.get(r.facts);
    if (held === undefined || newer(item, held)) byFacts.set(r.facts, item);
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
  for (const r of byProbe.values()) if (r !== base) onlyBase = false;
  if (onlyBase) return base;
  const from = (probe: string) => byProbe.get(probe) ?? base;
  const probeOf = (name: string) => name.slice(0, name.indexOf('.'));
  const facts: BehaviourRecord['facts'] = {};
  const metrics: BehaviourRecord['metrics'] = [];
  const samples: BehaviourRecord['samples'] = [];
  const records = [...new Set([base, ...byProbe.values()])];
  for (const r of records) {
    for (const [name, f] of Object.entries(r.facts)) if (from(probeOf(name)) === r) facts[name] = f;
    for (const m of r.metrics) if (from(probeOf(m.name)) === r) metrics.push(m);
    for (const s of r.samples) if (from(s.probe) === r) samples.push(s);
  }
  const cells = new Map<string, BehaviourRecord['cells'][number]>();
  for (const r of records) for (const c of r.cells) if (from(c.probe) === r) cells.set(c.probe, c);
  for (const r of records) for (const c of r.cells) if (!cells.has(c.probe)) cells.set(c.probe, c);
  return { ...base, facts, metrics, samples, cells: [...cells.values()] };
}
