/**
 * The committed records folder (records/): where `record` writes each record, at
 * recordPath, unless the same observation is already there. Records of one key always share a
 * folder (driver-<version>/: the driver is part of the key), so only that folder is read.
 *
 * - the same run again (a record of its id is there with the same facts): not written;
 * - the same key and the same facts as a record already there (sameObservation), and no
 *   metric beyond its noise against the one of them it follows in time (diff's rules, the
 *   nearest one dated before it, else the oldest): written as a repeat: each run of an
 *   observation is one more measurement of its run-to-run noise, which diff and gate use;
 * - the same key and the same facts, but metrics beyond their noise against that record (a
 *   same-driver regression: pinned bandwidth halved): written, the drift said. A record is
 *   also the history of its key's metrics: the newest is what the report's numbers and diff
 *   of a folder use, so a drift that was not written would leave them showing the old numbers;
 * - the same key, a fact that both decided with different values: written, a CONFLICT naming
 *   the other file and the facts that differ (the report shows it as such);
 * - the same key, no fact both decided that differs, but one that one of them left undecided
 *   (null) and the other decided: written, the fact newly decided (or no longer decided) said;
 *   not a conflict (a probe that now decides what an older one could not);
 * - the same key, no shared fact different, but facts only one of them has (a run of fewer
 *   probes): written, not a conflict;
 * - a file already at the record's path (the same run and target) that is not the same
 *   observation: not overwritten, a clash (the record of one run should not change); unless
 *   that record has fewer facts or cells and none that differ (made from a truncated log of
 *   the run): then replaced, and said.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic, writeFileExclusive } from '../core/fs.ts';
import type { Scalar } from '../probes/protocol.ts';
import { checkRecord, invalid } from './validate-record.ts';
import { diffPair, type CellChange, type MetricComparison } from './diff.ts';
import { keyText, recordJson, recordPath, sameObservation, type BehaviourRecord } from './behaviour-record.ts';

export interface FactDifference {
  name: string;
  /** The value in the record being stored (undefined: it lacks the fact). */
  here: Scalar | undefined;
  /** The value in the record already there. */
  there: Scalar | undefined;
}

/** The same observation as a record already there, whose metrics (or cells) moved beyond their noise. */
export interface Drift {
  /** The record it was compared with: the one of the same observation it follows in time. */
  file: string;
  metrics: MetricComparison[];
  cells: CellChange[];
}

export type StoreOutcome =
  | ({ kind: 'written'; file: string; drift?: Drift; repeatOf?: Repeat } & Related)
  | ({ kind: 'replaced'; file: string; before: { facts: number; cells: number } } & Related)
  | { kind: 'duplicate'; file: string; existing: string }
  | { kind: 'clash'; file: string };

/** A run of an observation already recorded, within its noise: kept, as one more measurement of the key's run-to-run noise. */
export interface Repeat {
  /** The record it was compared with. */
  file: string;
  /** How many runs of the observation the folder now holds. */
  runs: number;
}

/** The other records of the stored one's key, by how their facts differ (a record in the first that applies). */
export interface Related {
  /** A fact both decided, with different values. */
  conflicts: { file: string; facts: FactDifference[] }[];
  /** A fact decided in one and undecided (null) in the other, none in conflict. */
  decided: { file: string; facts: FactDifference[] }[];
  /** Facts only one of them has (a run of other probes), none in conflict or decided. */
  partial: { file: string; facts: FactDifference[] }[];
}

/** Facts whose values differ between two records (a fact one lacks counts, with undefined). */
export function factDifferences(here: BehaviourRecord, there: BehaviourRecord): FactDifference[] {
  const names = [...new Set([...Object.keys(here.facts), ...Object.keys(there.facts)])].sort();
  return names
    .filter((factName) => here.facts[factName]?.value !== there.facts[factName]?.value)
    .map((factName) => ({ name: factName, here: here.facts[factName]?.value, there: there.facts[factName]?.value }));
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
    const names = statSync(at, { throwIfNoEntry: false })?.isDirectory()
      ? readdirSync(at)
          .filter((fileName) => fileName.endsWith('.json'))
          .sort()
      : [];
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
    const same = [...existing].filter(([, stored]) => keyText(stored.key) === key);
    const previous = predecessor(
      same.filter(([, stored]) => sameObservation(stored, record)),
      record,
    );
    let drift: Drift | undefined;
    let repeatOf: Repeat | undefined;
    if (previous) {
      // The same run recorded again (its record is there, by id): nothing new.
      const again = same.find(([, stored]) => stored.id === record.id && sameObservation(stored, record));
      if (again) return { kind: 'duplicate', file, existing: path.join(this.dir, again[0]) };
      // Every run of the observation measures its noise: the records of the key, newest first.
      const history = same.map(([, stored]) => stored).sort((left, right) => order(right, left));
      const diff = diffPair(previous[1], record, false, { history });
      if (diff.changed) {
        drift = { file: path.join(this.dir, previous[0]), metrics: diff.metrics, cells: diff.cells };
        record = { ...record, driftedFrom: previous[1].id };
      } else
        repeatOf = {
          file: path.join(this.dir, previous[0]),
          runs: same.filter(([, stored]) => sameObservation(stored, record)).length + 1,
        };
    }
    const there = existing.get(rel);
    // The same run and target with fewer facts or cells, none different: a truncated log's record, which the whole log's replaces.
    const replaces =
      there !== undefined &&
      there.observed.runId === record.observed.runId &&
      (Object.keys(there.facts).length < Object.keys(record.facts).length || there.cells.length < record.cells.length) &&
      Object.keys(there.facts).every(
        (factName) => factName in record.facts && record.facts[factName]!.value === there.facts[factName]!.value,
      ) &&
      there.cells.every((oldCell) => record.cells.some((newCell) => newCell.probe === oldCell.probe));
    if (there && !replaces) return { kind: 'clash', file };
    const related: Related = { conflicts: [], decided: [], partial: [] };
    const both = (difference: FactDifference) => difference.here !== undefined && difference.there !== undefined;
    for (const [other, otherRecord] of same) {
      if (other === rel) continue;
      const facts = factDifferences(record, otherRecord);
      // The same observation (a drift, said as such): neither a conflict nor a run of other probes.
      if (facts.length === 0) continue;
      const list = facts.some((difference) => both(difference) && difference.here !== null && difference.there !== null)
        ? related.conflicts
        : facts.some(both)
          ? related.decided
          : related.partial;
      list.push({ file: path.join(this.dir, other), facts });
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
    if (there) return { kind: 'replaced', file, before: { facts: Object.keys(there.facts).length, cells: there.cells.length }, ...related };
    return { kind: 'written', file, ...related, ...(drift ? { drift } : {}), ...(repeatOf ? { repeatOf } : {}) };
  }
}

const order = (left: BehaviourRecord, right: BehaviourRecord) =>
  left.observed.date < right.observed.date
    ? -1
    : left.observed.date > right.observed.date
      ? 1
      : left.id < right.id
        ? -1
        : left.id > right.id
          ? 1
          : 0;

/**
 * Of the records of the same observation, the one `record` follows in time (the newest not
 * newer than it; with none, the oldest): what it is compared with. Against the newest of all, a
 * run recorded late would be judged against a later state; against any, a run back to normal
 * after a regression would match the old record and the regression would stay the newest.
 */
function predecessor(list: [string, BehaviourRecord][], record: BehaviourRecord): [string, BehaviourRecord] | undefined {
  const sorted = [...list].sort(([, left], [, right]) => order(left, right));
  const before = sorted.filter(([, stored]) => order(stored, record) <= 0);
  return before.length ? before[before.length - 1] : sorted[0];
}
