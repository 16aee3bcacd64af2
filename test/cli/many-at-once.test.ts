/**
 * Many runs at once (issue 22, item 4): 8 CLIs started together with one --results-dir and one
 * --junit file, and 8 `record`s into one records folder at once. Distinct run folders, every
 * log whole (no interleaved or lost line), no record overwritten, no temporary file left.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { doctored, h200Records } from '../record-fixture.ts';
import { recordJson, recordPath, type BehaviourRecord } from '../../behaviour/behaviour-record.ts';
import { startCli, type CliResult } from '../cli.ts';
import { hasCommand, tempDir } from '../helpers.ts';

const noGpuHere = !hasCommand('nvidia-smi', ['-L']);
const AT_ONCE = 8;

/** Every file under `dir`, relative. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

/** Starts `count` CLIs together (each with its own arguments) and waits for them all. */
function together(count: number, args: (i: number) => string[]): Promise<CliResult[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => startCli(args(i)).done));
}

let base: BehaviourRecord;
beforeAll(async () => {
  base = (await h200Records())[0]!;
});

describe('many runs at once', () => {
  it.runIf(noGpuHere)(
    `${AT_ONCE} runs with one --results-dir and one --junit: each its own folder and whole log, one whole JUnit file, no temp file`,
    async () => {
      const dir = tempDir('cm-at-once-');
      const runs = path.join(dir, 'runs');
      const junit = path.join(dir, 'junit.xml');
      const results = await together(AT_ONCE, () => [
        'run',
        '-p',
        'sysinfo,pinned-vram',
        '--quiet',
        '--results-dir',
        runs,
        '--junit',
        junit,
      ]);
      for (const result of results) expect(result.code, result.stdout + result.stderr).toBe(0);
      const folders = readdirSync(runs);
      expect(folders).toHaveLength(AT_ONCE);
      for (const folder of folders) {
        const lines = readFileSync(path.join(runs, folder, 'events.jsonl'), 'utf8').split('\n');
        expect(lines.pop()).toBe('');
        const events = lines.map((line) => JSON.parse(line) as { type: string; runId?: string });
        expect(events[0]).toMatchObject({ type: 'run-start', runId: folder });
        expect(events.at(-1)!.type).toBe('run-end');
        expect(events.filter((e) => e.type === 'cell-end')).toHaveLength(2);
        expect(filesUnder(path.join(runs, folder)).sort()).toEqual(['events.jsonl', 'junit.xml', 'summary.json']);
      }
      // Each run replaced the shared JUnit file whole: the last one's, never a mix.
      const xml = readFileSync(junit, 'utf8');
      expect(folders.filter((folder) => xml === readFileSync(path.join(runs, folder, 'junit.xml'), 'utf8')).length).toBeGreaterThanOrEqual(
        1,
      );
      expect(filesUnder(dir).filter((file) => file.endsWith('.tmp'))).toEqual([]);
    },
    300_000,
  );

  it(`${AT_ONCE} records into one folder at once, of 4 runs twice each: each run written once, as one after the other would`, async () => {
    const dir = tempDir('cm-at-once-records-');
    const records = path.join(dir, 'records');
    const fact = Object.keys(base.facts)[0]!;
    // Inputs i and i + 4 are the same run (its record twice): the second is "already recorded".
    const inputs = Array.from({ length: AT_ONCE }, (_, i) => {
      const doctoredRecord = doctored(base, `${i % 4}`.repeat(8) + base.id.slice(8), (copy) => {
        copy.observed.runId = `${copy.observed.runId}-${i % 4}`;
        copy.facts[fact]!.value = `observation ${i % 4}`;
      });
      const file = path.join(dir, `in-${i}.json`);
      writeFileSync(file, recordJson(doctoredRecord));
      return file;
    });
    const results = await together(AT_ONCE, (i) => ['record', '--records-dir', records, inputs[i]!]);
    for (const result of results) expect(result.code, result.stderr).toBe(0);
    const said = results.map((result) =>
      /\n {4}written /.test(result.stdout) ? 'written' : /already recorded: /.test(result.stdout) ? 'identical' : result.stdout,
    );
    expect(
      said.filter((outcome) => outcome === 'written'),
      said.join('\n'),
    ).toHaveLength(4);
    expect(said.filter((outcome) => outcome === 'identical')).toHaveLength(4);
    const files = filesUnder(records);
    expect(files).toHaveLength(4);
    const seen = files
      .map((recordFile) => JSON.parse(readFileSync(path.join(records, recordFile), 'utf8')).facts[fact].value as string)
      .sort();
    expect(seen).toEqual([0, 1, 2, 3].map((i) => `observation ${i}`));
  }, 300_000);

  it(`${AT_ONCE} records of one run and target with different facts, at once: one written, none overwritten, the others refused`, async () => {
    const dir = tempDir('cm-at-once-clash-');
    const records = path.join(dir, 'records');
    const fact = Object.keys(base.facts)[0]!;
    const inputs = Array.from({ length: AT_ONCE }, (_, i) => {
      const doctoredRecord = doctored(base, base.id, (copy) => (copy.facts[fact]!.value = `variant ${i}`));
      const file = path.join(dir, `in-${i}.json`);
      writeFileSync(file, recordJson(doctoredRecord));
      return file;
    });
    const results = await together(AT_ONCE, (i) => ['record', '--records-dir', records, inputs[i]!]);
    const written = results.flatMap((result, i) => (result.code === 0 ? [i] : []));
    expect(written, results.map((result) => result.stdout + result.stderr).join('\n')).toHaveLength(1);
    for (const result of results.filter((_, i) => i !== written[0])) expect(result.code, result.stderr).toBe(2);
    const files = filesUnder(records);
    expect(files).toEqual([recordPath(base)]);
    // The one that says it wrote is the one there.
    expect(JSON.parse(readFileSync(path.join(records, files[0]!), 'utf8')).facts[fact].value).toBe(`variant ${written[0]}`);
  }, 300_000);
});
