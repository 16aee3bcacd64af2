/** `cudamatrix record` and `cudamatrix diff` as a user runs them: the real CLI process. */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { doctored, H200_DIR, H200_RUNS, h200Records, halvedBandwidthLog, metricOf, noDriverLog } from '../record-fixture.ts';
import { recordJson, recordPath, type BehaviourRecord } from '../../behaviour/behaviour-record.ts';
import { redactRecord } from '../../behaviour/redact.ts';
import { runCli } from '../cli.ts';
import { tempDir } from '../helpers.ts';

let runs: BehaviourRecord[];
beforeAll(async () => {
  runs = await h200Records();
});

/** The first H200 log with pinned-release.released saying on-exit: the same key, another fact. */
function conflictingLog(): string {
  // Another run (its own id): the first and second runs' records are there already.
  return readFileSync(H200_RUNS[1]!, 'utf8')
    .replace(/("name":"released","value":)"on-free"/, '$1"on-exit"')
    .replace(/"runId":"([^"]+)"/g, '"runId":"$1-conflicting"');
}

describe('cudamatrix record', () => {
  it('--help says what a record is, identical and conflicting observations, --submit and the exit statuses', async () => {
    const result = await runCli(['record', '--help']);
    expect(result.code).toBe(0);
    for (const phrase of [
      '<inputs...>',
      '--records-dir <dir>',
      '(default: "records")',
      '--submit <file>',
      'repeat',
      'DRIFTED',
      'CONFLICT',
      'no GPU',
      'GPU UUID',
      'Exit status:',
      '4  no input holds an observation',
    ])
      expect(result.stdout).toContain(phrase);
  });

  it('writes the first H200 run, the second as a repeat of the same observation, and reports a conflicting log with its facts', async () => {
    const dir = tempDir('cm-record-cli-');
    const records = path.join(dir, 'records');
    const result = await runCli(['record', '--records-dir', records, H200_RUNS[0]!, path.dirname(H200_RUNS[1]!)]);
    expect(result.code, result.stderr).toBe(0);
    const file = path.join(records, recordPath(runs[0]!));
    expect(result.stdout).toContain(`    written ${file}: 20 facts, 171 metrics; default expectations: 15 of 15 passed\n`);
    expect(result.stdout).toContain(
      `    a repeat of ${file} (same key and facts, metrics within their noise): 2 runs of this observation now measure its run-to-run noise\n`,
    );
    // The same run again: not written.
    const again = await runCli(['record', '--records-dir', records, H200_RUNS[0]!]);
    expect(again.stdout).toContain(`    already recorded: ${file} is the record of this run; not written\n`);
    // outside a repository: no evidence path
    expect(readFileSync(file, 'utf8')).toBe(recordJson(redactRecord(runs[0]!)));

    const log = path.join(dir, 'events.jsonl');
    writeFileSync(log, conflictingLog());
    const recorded = await runCli(['record', '--records-dir', records, log]);
    expect(recorded.code, recorded.stderr).toBe(0);
    expect(recorded.stdout).toContain(
      `    CONFLICT with ${file} (same key, different facts; both are kept and the report shows the conflict):\n      pinned-release.released  on-free there, on-exit here\n`,
    );
    // Both runs of the observation are there (the second as a repeat): a conflict with each.
    expect(recorded.stdout).toContain('2 conflicts: the same observation key with other fact values.');
    expect(readdirSync(path.join(records, 'driver-580.159.04'))).toHaveLength(3);
  });

  it('a fact newly decided (the issues 19-22 H200 run decides pinned-ceiling.tracks_free_vram, null in the committed record) is said as such, not a CONFLICT', async () => {
    const dir = tempDir('cm-record-cli-');
    const records = path.join(dir, 'records');
    const committed = path.join(H200_DIR, recordPath(runs[0]!).replace(/^driver-[^/]+\//, ''));
    mkdirSync(path.join(records, 'driver-580.159.04'), { recursive: true });
    const there = path.join(records, 'driver-580.159.04', path.basename(committed));
    writeFileSync(there, readFileSync(committed));
    expect(JSON.parse(readFileSync(there, 'utf8')).facts['pinned-ceiling.tracks_free_vram'].value).toBeNull();
    const result = await runCli(['record', '--records-dir', records, path.join(H200_DIR, 'h200-linux-2026-12-01-issues19-22')]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toContain('CONFLICT');
    expect(result.stdout).not.toMatch(/\bconflicts?\b:/);
    expect(result.stdout).toContain(
      `    NEWLY DECIDED against ${there} (same key; a fact decided in one record is null in the other, none decided differently: not a conflict):\n      pinned-ceiling.tracks_free_vram  null there, false here (newly decided)\n`,
    );
    expect(readdirSync(path.join(records, 'driver-580.159.04'))).toHaveLength(2);

    // diff says the same: no fact changed, one newly decided.
    const diffed = await runCli(['diff', there, path.join(H200_DIR, 'h200-linux-2026-12-01-issues19-22')]);
    expect(diffed.stdout).toContain(
      '  facts    20 compared: none changed\n  decided  1 fact decided on one side only (null on the other; not a change):\n    pinned-ceiling.tracks_free_vram  null → false (newly decided)\n',
    );
    const j = JSON.parse((await runCli(['diff', '--json', there, path.join(H200_DIR, 'h200-linux-2026-12-01-issues19-22')])).stdout);
    expect([j.pairs[0].facts, j.pairs[0].decided]).toEqual([[], [{ name: 'pinned-ceiling.tracks_free_vram', a: null, b: false }]]);
    // Both records in one folder: decided in one, null in the other is no conflict inside it.
    expect(JSON.parse((await runCli(['diff', '--json', H200_RUNS[0]!, records])).stdout).conflicts).toEqual([]);
  });

  it('a same-driver regression (the 2026-12-01 run with pinned bandwidth halved) is written with its drift, and report shows it', async () => {
    const dir = tempDir('cm-record-cli-');
    const records = path.join(dir, 'records');
    expect((await runCli(['record', '--records-dir', records, H200_RUNS[0]!])).code).toBe(0);
    const log = path.join(dir, 'events.jsonl');
    writeFileSync(log, halvedBandwidthLog());
    const result = await runCli(['record', '--records-dir', records, log]);
    expect(result.code, result.stderr).toBe(0);
    const first = path.join(records, recordPath(runs[0]!));
    const file = path.join(records, recordPath(runs[3]!));
    expect(result.stdout).toContain(`    written ${file}: 20 facts, 171 metrics; default expectations: 15 of 15 passed\n`);
    expect(result.stdout).toContain(
      `    DRIFTED from ${first} (same key and facts; 8 metric series beyond their noise): kept as the newest record of this observation, which the report and diff use\n`,
    );
    expect(result.stdout).toContain(
      '      transfer-bandwidth.bandwidth_gbps {direction: h2d, memory: pinned, size_bytes: 1073741824}\n          55.4 GB/s → 27.8 GB/s: moved 49.9 % (×0.501), no change up to ±3 %: noise not measured (fewer than 3 degrees of freedom of other runs of this key, and no repetitions); minimum effect ±3 %; cudaprobe build also differed: the change may be theirs\n',
    );
    expect(result.stdout).not.toContain('CONFLICT');
    // Recorded again: the same run, not written.
    expect((await runCli(['record', '--records-dir', records, log])).stdout).toContain(
      `    already recorded: ${file} is the record of this run; not written\n`,
    );

    const out = path.join(dir, 'site');
    expect((await runCli(['report', '--records-dir', records, '--out', out])).code).toBe(0);
    const md = readFileSync(path.join(out, 'BEHAVIOUR.md'), 'utf8');
    expect(md).toContain(
      `| [27.8 GB/s at 1 GiB](../records/${recordPath(runs[3]!)}) ⚠ drifted from 55.4 GB/s (2 records: 27.8 GB/s to 55.4 GB/s) |`,
    );
    expect(md).toContain(
      `: [2026-12-01 ${runs[3]!.id.slice(0, 8)}](../records/${recordPath(runs[3]!)}) against [2026-11-29 ${runs[0]!.id.slice(0, 8)}](../records/${recordPath(runs[0]!)}): 8 metric series beyond their noise\n`,
    );
    expect(md).toContain(
      '  - transfer-bandwidth.bandwidth_gbps {direction: d2h, memory: pinned, size_bytes: 16777216}: 53.9 GB/s → 27.1 GB/s (moved 49.7 %, noise ±3 %)\n',
    );
    // diff of the folder against the run it now holds: the newest (halved) record is compared, the same behaviour.
    expect((await runCli(['diff', records, log])).code).toBe(0);
    // --submit keeps it too: two observations, not one.
    const sub = path.join(dir, 'sub.txt');
    const submitted = await runCli(['record', H200_RUNS[0]!, log, '--submit', sub]);
    expect(submitted.code, submitted.stderr).toBe(0);
    expect(submitted.stdout).toContain(`wrote ${sub}: 2 observations with a summary.`);
  });

  it('a log without a driver says so and exits 4; a bad input stops it with nothing written (exit 2)', async () => {
    const dir = tempDir('cm-record-cli-');
    const log = path.join(dir, 'events.jsonl');
    writeFileSync(log, noDriverLog());
    const result = await runCli(['record', '--records-dir', path.join(dir, 'records'), log]);
    expect(result.code).toBe(4);
    expect(result.stdout).toContain(
      `${log}: no GPU observation, nothing to record: local: no NVIDIA driver (the CUDA driver library could not be loaded)`,
    );
    expect(result.stderr).toContain('nothing recorded: no input holds an observation of a GPU');
    const bad = await runCli(['record', '--records-dir', path.join(dir, 'records'), H200_RUNS[0]!, path.join(dir, 'missing.jsonl')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      `error [USAGE]: ${path.join(dir, 'missing.jsonl')} does not exist; pass an events.jsonl, a run folder (results/runs/<run-id>), a record (.json), a file made by record --submit, or a folder of records\n`,
    );
    expect(readdirSync(dir)).toEqual(['events.jsonl']);
  });

  it('--submit writes one file with the summary and the records; `record FILE` commits them', async () => {
    const dir = tempDir('cm-record-cli-');
    const sub = path.join(dir, 'cudamatrix-records.txt');
    const result = await runCli(['record', H200_RUNS[0]!, H200_RUNS[2]!, '--submit', sub], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('the same observation as run 2026-11-29T17-04-21-010Z-e253d5, left out');
    expect(result.stdout).toContain(`wrote ${sub}: 1 observation with a summary.`);
    expect(readdirSync(dir)).toEqual(['cudamatrix-records.txt']); // no records folder
    const text = readFileSync(sub, 'utf8');
    expect(text).toContain('| `pinned-release.released` | on-free |');
    expect(text).not.toContain(String(runs[0]!.sysinfo.gpu_uuid));
    const records = path.join(dir, 'records');
    const committed = await runCli(['record', '--records-dir', records, sub]);
    expect(committed.code, committed.stderr).toBe(0);
    expect(committed.stdout).toContain(`${sub} (submitted file): 1 observation`);
    expect(readFileSync(path.join(records, recordPath(runs[0]!)), 'utf8')).toBe(recordJson(redactRecord(runs[0]!)));
  });
});

const SYSINFO_LOG = path.join(H200_DIR, 'h200-linux-sysinfo', 'events.jsonl');

describe('cudamatrix record: what it refuses', () => {
  it('a sysinfo-only run (no fact, no metric) writes no record and says so per target, exit 4', async () => {
    const dir = tempDir('cm-record-cli-');
    const records = path.join(dir, 'records');
    const result = await runCli(['record', '--records-dir', records, SYSINFO_LOG]);
    expect(result.code, result.stderr).toBe(4);
    expect(result.stdout).toContain(
      `${SYSINFO_LOG}: no GPU observation, nothing to record: local: no fact and no metric measured (only sysinfo ran, or every other probe gave nothing); a record needs at least one`,
    );
    expect(readdirSync(dir)).toEqual([]);
  });

  it('an incomplete event log (a cut-off last line, no run-end) is refused naming the file; the full log replaces a record of the same run with fewer facts', async () => {
    const dir = tempDir('cm-record-cli-');
    const records = path.join(dir, 'records');
    const lines = readFileSync(H200_RUNS[0]!, 'utf8').trimEnd().split('\n');
    const cut = path.join(dir, 'cut.jsonl');
    writeFileSync(cut, `${lines.slice(0, -1).join('\n')}\n${lines[lines.length - 1]!.slice(0, 20)}`);
    const noEnd = path.join(dir, 'no-end.jsonl');
    writeFileSync(noEnd, `${lines.slice(0, 8).join('\n')}\n`);
    for (const [log, why] of [
      [cut, `its last line (${lines.length}) is cut off`],
      [noEnd, 'it has no run-end event'],
    ] as const) {
      const result = await runCli(['record', '--records-dir', records, log]);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        `error [EVENTS_INVALID]: ${log} is an incomplete event log (${why}): the run crashed or was cut short, or the file was truncated; a record is made from the log of a run that ended (run it again, or record the complete events.jsonl)\n`,
      );
    }
    expect(readdirSync(dir).sort()).toEqual(['cut.jsonl', 'no-end.jsonl']);
    // A record of the same run with fewer facts and cells (as a truncated log gave before): the full log replaces it.
    const clean = redactRecord(runs[0]!);
    const part = doctored(clean, clean.id, (record) => {
      record.facts = Object.fromEntries(Object.entries(record.facts).slice(0, 3));
      record.cells = record.cells.slice(0, 2);
    });
    const file = path.join(records, recordPath(runs[0]!));
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, recordJson(part));
    const replaced = await runCli(['record', '--records-dir', records, H200_RUNS[0]!]);
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(replaced.stdout).toContain(
      `    REPLACED ${file}: 20 facts, 171 metrics; default expectations: 15 of 15 passed; it held a record of this run and target with fewer facts or cells (3 facts, 2 cells), none different: made from a truncated log of the run\n`,
    );
    expect(readFileSync(file, 'utf8')).toBe(recordJson(clean));
  });

  it('--records-dir that is a file, /dev/null or a driver folder: a usage error naming it, nothing written', async () => {
    const dir = tempDir('cm-record-cli-');
    const file = path.join(dir, 'file');
    writeFileSync(file, '');
    for (const bad of [file, '/dev/null']) {
      const result = await runCli(['record', '--records-dir', bad, H200_RUNS[0]!]);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        `error [USAGE]: --records-dir ${bad} is not a folder; pass the records folder (records), where record writes driver-<version>/*.json\n`,
      );
    }
    const driver = path.join(dir, 'records', 'driver-580.159.04');
    mkdirSync(driver, { recursive: true });
    const refused = await runCli(['record', '--records-dir', driver, H200_RUNS[0]!]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      `error [USAGE]: --records-dir ${driver} is a driver folder; pass the records root (${path.join(dir, 'records')}): record writes each record under its own driver-<version>/ there\n`,
    );
    expect(readdirSync(driver)).toEqual([]);
  });

  it('diff pairs the newest record of a key that has facts: an empty newer record does not hide a full one', async () => {
    const dir = tempDir('cm-diff-cli-');
    const empty = doctored(runs[0]!, 'e0e0e0e0e0e0e0e0', (record) => {
      record.facts = {};
      record.metrics = [];
      record.observed.date = '2027-01-01T00:00:00.000Z';
    });
    const folder = path.join(dir, 'a');
    mkdirSync(folder);
    writeFileSync(path.join(folder, 'full.json'), recordJson(runs[0]!));
    writeFileSync(path.join(folder, 'empty.json'), recordJson(empty));
    const result = await runCli(['diff', folder, H200_RUNS[1]!]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('  facts    20 compared: none changed\n');
    expect(result.stdout).toContain('an observation of this key without facts; the newest with facts');
  });
});

describe('cudamatrix diff', () => {
  it('the first two H200 runs (event logs): the same behaviour, exit 0', async () => {
    const result = await runCli(['diff', H200_RUNS[0]!, path.dirname(H200_RUNS[1]!)]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /  facts {4}20 compared: none changed\n {2}cells {4}13 compared: same outcomes\n {2}metrics {2}166 compared: none beyond noise\n {4}noise: \d+ other runs of this key \(\d+ groups by driver and kernel\), and the runs' own repetitions where they have them\n/,
    );
    // Without the committed records, nothing measures the noise: the minimum effect alone decides.
    const alone = await runCli(['diff', H200_RUNS[0]!, path.dirname(H200_RUNS[1]!), '--no-history']);
    expect(alone.stdout).toContain('    noise: no other runs of this key');
    expect(result.stdout).toMatch(
      /Same behaviour \(1 pair of records compared\): no fact or cell outcome changed, no metric beyond its noise\.\n$/,
    );
  });

  it('the committed record against a doctored copy (a fact changed, a pinned bandwidth halved): both named, exit 1; --json says the same', async () => {
    const dir = tempDir('cm-diff-cli-');
    const copy = doctored(runs[0]!, runs[0]!.id, (record) => {
      record.facts['pinned-vram.counts_as_vram']!.value = true;
      metricOf(record, 'transfer-bandwidth.bandwidth_gbps', { direction: 'd2h', memory: 'pinned', size_bytes: 16 * 1024 ** 2 }).value! /= 2;
    });
    const file = path.join(dir, 'doctored.json');
    writeFileSync(file, recordJson(copy));
    // A records folder holding the committed record alone (the committed folder has later ones).
    const folder = path.join(dir, 'records');
    mkdirSync(folder);
    const committed = path.join(folder, path.basename(recordPath(runs[0]!)));
    copyFileSync(path.join(H200_DIR, path.basename(recordPath(runs[0]!))), committed);
    // --no-history: the committed records would measure the noise (its own test is above); here nothing does.
    const result = await runCli(['diff', folder, file, '--no-history']);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toContain('    pinned-vram.counts_as_vram  false → true\n');
    expect(result.stdout).toContain(
      '    transfer-bandwidth.bandwidth_gbps {direction: d2h, memory: pinned, size_bytes: 16777216}\n        53.9 GB/s → 26.9 GB/s: moved 50 % (×0.5), no change up to ±3 %: noise not measured (fewer than 3 degrees of freedom of other runs of this key, and no repetitions); minimum effect ±3 %\n',
    );
    // the same record id on both sides: each line names its own side's file
    expect(result.stdout).toContain(
      `  a  driver 580.159.04, run 2026-11-29T17-04-21-010Z-e253d5 (2026-11-29), target local, ${committed}\n`,
    );
    expect(result.stdout).toContain(`  b  driver 580.159.04, run 2026-11-29T17-04-21-010Z-e253d5 (2026-11-29), target local, ${file}\n`);
    expect(result.stdout).toMatch(/Behaviour changed \(1 pair of records compared\): 1 fact changed, 1 metric beyond noise\.\n$/);

    const j = await runCli(['diff', '--json', folder, file, '--no-history']);
    expect(j.code).toBe(1);
    const out = JSON.parse(j.stdout);
    expect(Object.keys(out)).toEqual(['schema', 'changed', 'a', 'b', 'pairs', 'onlyA', 'onlyB', 'conflicts']);
    expect(out).toMatchObject({
      schema: 'cudamatrix-diff/1',
      changed: true,
      a: { source: folder, kind: 'records-folder', records: 1 },
      b: { source: file, kind: 'record', records: 1 },
      onlyA: [],
      onlyB: [],
      conflicts: [],
    });
    const pair = out.pairs[0];
    expect(pair.a).toEqual({
      id: runs[0]!.id,
      driver: '580.159.04',
      date: runs[0]!.observed.date,
      runId: runs[0]!.observed.runId,
      target: 'local',
      file: committed,
    });
    expect(pair.b.file).toBe(file);
    expect(pair.facts).toEqual([{ name: 'pinned-vram.counts_as_vram', a: false, b: true }]);
    expect(pair.metrics).toHaveLength(166); // --json lists every metric compared
    expect(pair.metrics.filter((metric: { flagged: boolean }) => metric.flagged)).toEqual([
      {
        name: 'transfer-bandwidth.bandwidth_gbps',
        attrs: { direction: 'd2h', memory: 'pinned', size_bytes: 16777216 },
        unit: 'GB/s',
        a: 53.8698166,
        b: 26.9349083,
        repeats: { a: 1, b: 1 },
        runs: { a: 1, b: 1 },
        move: 0.5,
        noise: 0.03,
        tolerance: 0.03,
        absolute: 0,
        measured: { runs: null, repeatsSd: null },
        bound: 0,
        noiseFrom: 'none',
        verdict: 'changed',
        flagged: true,
        noiseText:
          'noise not measured (fewer than 3 degrees of freedom of other runs of this key, and no repetitions); minimum effect ±3 %',
      },
    ]);
    expect(pair.metricTally).toMatchObject({
      compared: 166,
      flagged: 1,
      undecided: 0,
      explained: 0,
      noiseFrom: { runs: 0, repeats: 0, none: 1 },
    });
    expect(pair.history).toEqual({ runs: 0, groups: 0 });
  });

  it('a conflict inside one side (two records of one key, a fact different) is said, not listed as "only in b"', async () => {
    const dir = tempDir('cm-diff-cli-');
    const folder = path.join(dir, 'b');
    mkdirSync(folder);
    const other = doctored(runs[0]!, 'c0c0c0c0c0c0c0c0', (record) => void (record.facts['pinned-release.released']!.value = 'on-exit'));
    writeFileSync(path.join(folder, 'one.json'), recordJson(runs[0]!));
    writeFileSync(path.join(folder, 'two.json'), recordJson(other));
    const result = await runCli(['diff', H200_RUNS[1]!, folder]);
    expect(result.stdout).not.toContain('only in b:');
    expect(result.stdout).toContain(
      `also in b, not compared: linux · NVIDIA H200 · Ubuntu 24.04.3 LTS · in docker (driver 580.159.04, run ${runs[0]!.observed.runId} (2026-11-29), target local, ${path.join(folder, 'two.json')}): an older observation of this key`,
    );
    expect(result.stdout).toContain(
      `CONFLICT in b: linux · NVIDIA H200 · 580.159.04 · Ubuntu 24.04.3 LTS · in docker: 2 records disagree on 1 fact (pinned-release.released): ${runs[0]!.id.slice(0, 8)} (2026-11-29), c0c0c0c0 (2026-11-29); only one of them was compared`,
    );
    const j = JSON.parse((await runCli(['diff', '--json', H200_RUNS[1]!, folder])).stdout);
    expect(j.conflicts).toEqual([
      {
        side: 'b',
        key: 'linux · NVIDIA H200 · 580.159.04 · Ubuntu 24.04.3 LTS · in docker',
        facts: ['pinned-release.released'],
        records: [
          expect.objectContaining({ id: runs[0]!.id, file: path.join(folder, 'one.json') }),
          expect.objectContaining({ id: 'c0c0c0c0c0c0c0c0', file: path.join(folder, 'two.json') }),
        ],
      },
    ]);
  });

  it('usage errors exit 2 naming the input: a missing file, a side without a GPU, nothing that pairs', async () => {
    const dir = tempDir('cm-diff-cli-');
    const missing = await runCli(['diff', H200_RUNS[0]!, path.join(dir, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`error [USAGE]: ${path.join(dir, 'nope')} does not exist`);
    const log = path.join(dir, 'events.jsonl');
    writeFileSync(log, noDriverLog());
    const none = await runCli(['diff', H200_RUNS[0]!, log]);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe(
      `error [NOTHING_TO_COMPARE]: ${log} holds no observation of a GPU (local: no NVIDIA driver (the CUDA driver library could not be loaded)); diff compares runs that measured a GPU\n`,
    );
    const wsl = path.join(dir, 'wsl.json');
    writeFileSync(
      wsl,
      recordJson(doctored(runs[0]!, '0000000000000001', (record) => void (record.key = { ...record.key, environment: 'wsl2' }))),
    );
    const apart = await runCli(['diff', H200_RUNS[0]!, wsl]);
    expect(apart.code).toBe(2);
    const bare = (id: string) =>
      doctored(runs[0]!, id, (record) => {
        record.facts = {};
        record.metrics = [];
      });
    const [e1, e2] = [path.join(dir, 'e1.json'), path.join(dir, 'e2.json')];
    writeFileSync(e1, recordJson(bare('e1e1e1e1e1e1e1e1')));
    writeFileSync(e2, recordJson(bare('e2e2e2e2e2e2e2e2')));
    const nothing = await runCli(['diff', e1, e2]);
    expect(nothing.code).toBe(2);
    expect(nothing.stdout).toBe('');
    expect(nothing.stderr).toBe(
      `error [NOTHING_TO_COMPARE]: nothing that compares between ${e1} and ${e2}: the pair of records share no fact and no metric series (records without facts or metrics, or runs of other probes); diff compares what both sides measured\n`,
    );
    expect(apart.stderr).toContain(
      `no observation of ${H200_RUNS[0]} has a counterpart in ${wsl}: records pair by environment, GPU, OS and container (not the driver). a has linux · NVIDIA H200 · Ubuntu 24.04.3 LTS · in docker; b has wsl2 · NVIDIA H200 · Ubuntu 24.04.3 LTS · in docker`,
    );
  });
});
