/** The records index's cache folder is pruned when an index is written: folders gone, past MAX_INDEXES, killed writers' temp files. */
import { existsSync, mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from '../test/helpers.ts';
import type { BehaviourRecord } from './behaviour-record.ts';
import { indexFileOf, MAX_INDEXES, readDigests, STALE_TEMP_MS, type KeptMetrics } from './records-index.ts';

/** No metrics kept: these tests are about the cache folder. */
const NONE: KeptMetrics = { names: [], pick: () => [] };

/** A folder of one record file, and its index written by reading it (`read` stands in for the record reader). */
function indexed(root: string, name: string): string {
  const folder = path.join(root, name);
  mkdirSync(folder);
  writeFileSync(path.join(folder, 'r.json'), '{}\n');
  const read = () => [{ id: name, facts: {}, metrics: [], samples: [] } as unknown as BehaviourRecord];
  readDigests(folder, ['r.json'], NONE, read);
  return folder;
}

const indexes = () => readdirSync(path.join(process.env.CUDAMATRIX_CACHE!, 'records-index')).sort();

describe('the records-index cache', () => {
  const cacheBefore = process.env.CUDAMATRIX_CACHE;
  beforeEach(() => {
    process.env.CUDAMATRIX_CACHE = tempDir('cm-index-cache-');
  });
  afterEach(() => {
    process.env.CUDAMATRIX_CACHE = cacheBefore;
  });

  it('drops the indexes of folders that are gone, and files that are not an index, when one is made for a new folder', () => {
    const root = tempDir('cm-index-folders-');
    const kept = indexed(root, 'kept');
    const gone = indexed(root, 'gone');
    const goneIndex = indexFileOf(gone);
    rmSync(gone, { recursive: true });
    const junk = path.join(path.dirname(goneIndex), `${'0'.repeat(24)}.json`);
    writeFileSync(junk, '{not json');
    // Rewriting the index of a folder it knows does not grow the cache: nothing is pruned then.
    writeFileSync(path.join(kept, 'r.json'), '{"changed": true}\n');
    readDigests(kept, ['r.json'], NONE, () => [{ id: 'kept', facts: {}, metrics: [], samples: [] } as unknown as BehaviourRecord]);
    expect(existsSync(goneIndex)).toBe(true);
    const next = indexed(root, 'next');
    expect(indexes()).toEqual([indexFileOf(kept), indexFileOf(next)].map((indexFile) => path.basename(indexFile)).sort());
  });

  it(`keeps at most ${MAX_INDEXES} indexes: past that, the least recently written go`, () => {
    const root = tempDir('cm-index-many-');
    const first = Array.from({ length: MAX_INDEXES }, (_, i) => indexed(root, `f${i}`));
    expect(indexes()).toHaveLength(MAX_INDEXES);
    // Their write times in the order made, a second apart (a file system's clock may give two the same).
    first.forEach((folder, i) => utimesSync(indexFileOf(folder), 1_000_000 + i, 1_000_000 + i));
    const more = [0, 1, 2].map((i) => indexed(root, `more${i}`));
    expect(indexes()).toEqual([...first.slice(3), ...more].map((folder) => path.basename(indexFileOf(folder))).sort());
  });

  it('removes the temporary files of writers killed mid-write, once they are an hour old; a fresh one may be live', () => {
    const root = tempDir('cm-index-temps-');
    const cache = path.dirname(indexFileOf(indexed(root, 'a')));
    const stale = path.join(cache, `${'1'.repeat(24)}.json.4242-0badf00d.tmp`);
    const fresh = path.join(cache, `${'2'.repeat(24)}.json.4243-0badf00d.tmp`);
    const other = path.join(cache, 'notes.tmp');
    for (const file of [stale, fresh, other]) writeFileSync(file, '{"format":');
    const old = (Date.now() - STALE_TEMP_MS - 60_000) / 1000;
    utimesSync(stale, old, old);
    utimesSync(other, old, old);
    indexed(root, 'b');
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(fresh)).toBe(true);
    // Not a name the index writes: not its to remove.
    expect(existsSync(other)).toBe(true);
  });
});
