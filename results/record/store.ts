/**
 * The committed records folder (results/records/): where `record` writes each record, at
 * recordPath, unless the same observation is already there. Records of one key always share a
 * folder (driver-<version>/: the driver is part of the key), so only that folder is read.
 *
 * - the same key and the same facts as a record already there (sameObservation): not written,
 *   the existing file named;
 * - the same key, a fact that both have with different values: written, a CONFLICT naming the
 *   other file and the facts that differ (the report shows it as such);
 * - the same key, no shared fact different, but facts only one of them has (a run of fewer
 *   probes): written, not a conflict;
 * - a file already at the record's path (the same run and target) that is not the same
 *   observation: not overwritten, a clash (the record of one run should not change); unless
 *   that record has fewer facts or cells and none that differ (made from a truncated log of
 *   the run): then replaced, and said.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic, writeFileExclusive } from '../../core/fs.ts';
import type { Scalar } from '../../probes/protocol.ts';
import { checkRecord, invalid } from './check.ts';
import { keyText, recordJson, recordPath, sameObservation, type BehaviourRecord } from './format.ts';

export interface FactDifference {
  name: string;
  /** The value in the record being stored (undefined: it lacks the fact). */
  here: Scalar | undefined;
  /** The value in the record already there. */
  there: Scalar | undefined;
}

export type StoreOutcome =
  | { kind: 'written'; file: string; conflicts: { file: string; facts: FactDifference[] }[]; partial: { file: string; facts: FactDifference[] }[] }
  | { kind: 'replaced'; file: string; before: { facts: number; cells: number }; conflicts: { file: string; facts: FactDifference[] }[]; partial: { file: string; facts: FactDifference[] }[] }
  | { kind: 'duplicate'; file: string; existing: string }
  | { kind: 'clash'; file: string };

/** Facts whose values differ between two records (a fact one lacks counts, with undefined). */
export function factDifferences(here: BehaviourRecord, there: BehaviourRecord): FactDifference[] {
  const names = [...new Set([...Object.keys(here.facts), ...Object.keys(there.facts)])].sort();
  return names.filter((n) => here.facts[n]?.value !== there.facts[n]?.value).map((n) => ({ name: n, here: here.facts[n]?.value, there: there.facts[n]?.value }));
}

/** Records folder -> the records of each driver folder read so far (relative path -> record). */
export class RecordStore {
  private readonly folders = new Map<string, Map<string, BehaviourRecord>>();
  constructor(readonly dir: string) {}

  private folder(sub: string): Map<string, BehaviourRecord> {
    let got = this.folders.get(sub);
    if (got) return got;
    got = new Map();
    const at = path.join(this.dir, sub);
    const names = statSync(at, { throwIfNoEntry: false })?.isDirectory() ? readdirSync(at).filter((n) => n.endsWith('.json')).sort() : [];
    for (const name of names) got.set(`${sub}/${name}`, this.read(path.join(at, name)));
    this.folders.set(sub, got);
    return got;
  }

  private read(file: string): BehaviourRecord {
    let data: unknown;
    try {
      data = JSON.parse(readFileSync(file, 'utf8'));
    } catch (e) {
      throw invalid(file, `not JSON (${(e as Error).message})`);
    }
    return checkRecord(data, file);
  }

  /** Writes the record unless its observation is there already; says what it did. */
  store(record: BehaviourRecord): StoreOutcome {
    const rel = recordPath(record);
    const file = path.join(this.dir, rel);
    const existing = this.folder(path.posix.dirname(rel));
    const key = keyText(record.key);
    const same = [...existing].filter(([, r]) => keyText(r.key) === key);
    const duplicate = same.find(([, r]) => sameObservation(r, record));
    if (duplicate) return { kind: 'duplicate', file, existing: path.join(this.dir, duplicate[0]) };
    const there = existing.get(rel);
    // The same run and target with fewer facts or cells, none different: a truncated log's record, which the whole log's replaces.
    const replaces =
      there !== undefined &&
      there.observed.runId === record.observed.runId &&
      (Object.keys(there.facts).length < Object.keys(record.facts).length || there.cells.length < record.cells.length) &&
      Object.keys(there.facts).every((n) => n in record.facts && record.facts[n]!.value === there.facts[n]!.value) &&
      there.cells.every((c) => record.cells.some((d) => d.probe === c.probe));
    if (there && !replaces) return { kind: 'clash', file };
    const conflicts: { file: string; facts: FactDifference[] }[] = [];
    const partial: { file: string; facts: FactDifference[] }[] = [];
    for (const [other, r] of same) {
      if (other === rel) continue;
      const facts = factDifferences(record, r);
      const target = facts.some((f) => f.here !== undefined && f.there !== undefined) ? conflicts : partial;
      target.push({ file: path.join(this.dir, other), facts });
    }
    // Written whole or not at all: a half-written record would break every later read of the folder.
    // A new file is created exclusively: a record another process wrote there since this one
    // read the folder (two `record`s at once) is never overwritten, and is judged as one found.
    if (there) writeFileAtomic(file, recordJson(record));
    else if (!writeFileExclusive(file, recordJson(record))) {
      const now = this.read(file);
      existing.set(rel, now);
      return sameObservation(now, record) ? { kind: 'duplicate', file, existing: file } : { kind: 'clash', file };
    }
    existing.set(rel, record);
    if (there) return { kind: 'replaced', file, before: { facts: Object.keys(there.facts).length, cells: there.cells.length }, conflicts, partial };
    return { kind: 'written', file, conflicts, partial };
  }
}
