import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CudamatrixError } from '../core/errors.ts';
import { packageRoot } from '../core/package-root.ts';
import { tempDir } from '../test/helpers.ts';
import { defaultExpectations, doctored, H200_DIR, H200_RUNS, h200Records, noDriverLog } from '../test/record-fixture.ts';

/** The records of the H200 runs of 2026-12-02 (records/driver-580.159.04/h200-linux-2026-12-02-issue24/). */
import { recordJson, recordPath, type BehaviourRecord } from './behaviour-record.ts';
import { readInput } from './read.ts';
import { redactRecord, redactText } from './redact.ts';
import { RecordStore } from './store.ts';
import { parseSubmission, renderSubmission } from './submit.ts';

let runs: BehaviourRecord[];
beforeAll(async () => {
  runs = await h200Records();
});

function codeOf(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (e) {
    if (e instanceof CudamatrixError) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error('did not throw');
}

describe('the record file', () => {
  it('is pretty JSON with the interface order at the top and sorted maps: the same record in another key order gives the same bytes', () => {
    const record = runs[0]!;
    const text = recordJson(record);
    expect(Object.keys(JSON.parse(text)).slice(0, 6)).toEqual(['recordSchema', 'id', 'key', 'observed', 'tool', 'sysinfo']);
    expect(text.split('\n')[1]).toBe('  "recordSchema": 1,');
    // the probe's attr order and the log's fact order do not matter
    const shuffled = structuredClone(record);
    shuffled.facts = Object.fromEntries(Object.entries(record.facts).reverse());
    shuffled.sysinfo = Object.fromEntries(Object.entries(record.sysinfo).reverse());
    for (const metric of shuffled.metrics) if (metric.attrs) metric.attrs = Object.fromEntries(Object.entries(metric.attrs).reverse());
    expect(recordJson(shuffled)).toBe(text);
    // nothing is lost
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(record)));
  });

  it('the committed H200 record is what `record` writes from its log today (redacted, with its evidence)', () => {
    const file = path.join(H200_DIR, recordPath(runs[0]!).replace(/^driver-[^/]+\//, ''));
    const expected = recordJson({ ...redactRecord(runs[0]!), evidence: 'records/driver-580.159.04/h200-linux/events.jsonl' });
    expect(
      readFileSync(file, 'utf8'),
      'run `pnpm cudamatrix record records/driver-580.159.04/h200-linux` again and commit the record',
    ).toBe(expected);
  });

  it('every committed H200 record with evidence is what `record` writes from that log today: one record per run', async () => {
    const defaults = await defaultExpectations();
    const files = readdirSync(H200_DIR).filter((fileName) => fileName.endsWith('.json'));
    const runIds = new Set<string>();
    for (const name of files) {
      const text = readFileSync(path.join(H200_DIR, name), 'utf8');
      const record = JSON.parse(text) as BehaviourRecord;
      runIds.add(record.observed.runId);
      if (!record.evidence) continue;
      const made = readInput(path.join(packageRoot(), record.evidence), defaults).records.map((inputRecord) => inputRecord.record);
      expect(
        made.map((madeRecord) => madeRecord.id),
        name,
      ).toContain(record.id);
      const again = made.find((madeRecord) => madeRecord.id === record.id)!;
      expect(text, `${name}: run \`pnpm cudamatrix record ${path.dirname(record.evidence)}\` again`).toBe(
        recordJson({ ...redactRecord(again), evidence: record.evidence }),
      );
    }
    // Each run of the observation is kept (the key's run-to-run noise is measured on them).
    expect(runIds.size).toBe(files.length);
    expect(files.length).toBeGreaterThanOrEqual(8);
  });
});

describe('redaction', () => {
  it('removes the GPU UUID, user and host names and the folders of paths, and keeps the key, id, dates and fact values', () => {
    const raw = doctored(runs[0]!, runs[0]!.id, (record) => {
      record.observed.session = 'ssh alice@gpu-box.lan:22 → wsl Ubuntu';
      record.sysinfo.cudart_library = 'C:\\Users\\alice\\AppData\\Local\\cudart64_12.dll';
      record.facts['cuda-log.log_file_written']!.evidence = { path: '/home/bob/.cache/cuda.log' };
      record.cells[0]!.reason = 'docker probe-1 (nvidia/cuda@sha256:0123abcd) on ssh carol@[::1]:2222';
    });
    const clean = redactRecord(raw);
    expect(clean.sysinfo).not.toHaveProperty('gpu_uuid');
    expect(clean.observed.session).toBe('ssh <user>@<host> → wsl Ubuntu');
    expect(clean.sysinfo.cudart_library).toBe('<path>\\cudart64_12.dll');
    expect(clean.facts['cuda-log.log_file_written']!.evidence).toEqual({ path: '<path>/cuda.log' });
    expect(clean.cells[0]!.reason).toBe('docker probe-1 (nvidia/cuda@sha256:0123abcd) on ssh <user>@<host>');
    expect(JSON.stringify(clean)).not.toMatch(/alice|bob|carol|gpu-box/);
    expect([clean.id, clean.key, clean.observed.date, clean.observed.runId]).toEqual([
      raw.id,
      raw.key,
      raw.observed.date,
      raw.observed.runId,
    ]);
    expect(Object.values(clean.facts).map((fact) => fact.value)).toEqual(Object.values(raw.facts).map((fact) => fact.value));
    // idempotent: a submitted record goes through it again when committed
    expect(redactRecord(clean)).toEqual(clean);
    expect(redactText('<path>/x.so')).toBe('<path>/x.so');
  });

  it('a slurm session loses its job number and node, and the login node its user and host', () => {
    const raw = doctored(runs[0]!, runs[0]!.id, (record) => {
      record.observed.session = 'slurm job 4711 on gpu07 via ssh ci@login1.cluster.example.org:22';
    });
    const clean = redactRecord(raw);
    expect(clean.observed.session).toBe('slurm job <job> on <node> via ssh <user>@<host>');
    expect(redactRecord(clean)).toEqual(clean);
  });

  it('a GPU or MIG UUID anywhere in a text field (a reason, evidence, a fact value, sysinfo) becomes GPU-<uuid>', () => {
    const uuid = 'GPU-8f3a2b1c-4d5e-6f70-8192-a3b4c5d6e7f8';
    const raw = doctored(runs[0]!, runs[0]!.id, (record) => {
      record.cells[0]!.reason = `failed on ${uuid}`;
      record.facts['cuda-log.log_file_written']!.evidence = {
        line: `device ${uuid.toLowerCase()} MIG-11111111-2222-3333-4444-555555555555`,
      };
      record.facts['pinned-release.released']!.value = `on-free (${uuid})`;
      record.sysinfo.gpu_list = uuid;
    });
    const clean = redactRecord(raw);
    expect(JSON.stringify(clean)).not.toMatch(/8f3a2b1c|11111111-2222/i);
    expect(clean.cells[0]!.reason).toBe('failed on GPU-<uuid>');
    expect(clean.facts['cuda-log.log_file_written']!.evidence).toEqual({ line: 'device gpu-<uuid> MIG-<uuid>' });
    expect(clean.facts['pinned-release.released']!.value).toBe('on-free (GPU-<uuid>)');
    expect(redactRecord(clean)).toEqual(clean);
  });
});

describe('the records folder', () => {
  it('writes a record at its path; another run of the same observation is written as a repeat; the same run again is not written', () => {
    const dir = tempDir('cm-store-');
    const store = new RecordStore(dir);
    const first = store.store(runs[0]!);
    expect(first).toEqual({ kind: 'written', file: path.join(dir, recordPath(runs[0]!)), conflicts: [], decided: [], partial: [] });
    expect(readFileSync(first.file, 'utf8')).toBe(recordJson(runs[0]!));
    runs
      .slice(1)
      .forEach((run, i) =>
        expect(store.store(run)).toMatchObject({ kind: 'written', file: path.join(dir, recordPath(run)), repeatOf: { runs: i + 2 } }),
      );
    // a new store reads the folder from disk: the same run again is the record already there
    expect(new RecordStore(dir).store(runs[1]!)).toEqual({
      kind: 'duplicate',
      file: path.join(dir, recordPath(runs[1]!)),
      existing: path.join(dir, recordPath(runs[1]!)),
    });
    expect(readdirSync(path.join(dir, 'driver-580.159.04'))).toHaveLength(runs.length);
  });

  it('the same key with another fact value is written and reported as a conflict with the differing facts', () => {
    const dir = tempDir('cm-store-');
    const store = new RecordStore(dir);
    store.store(runs[0]!);
    const other = doctored(runs[1]!, 'c0ffee00c0ffee00', (record) => {
      record.facts['pinned-release.released']!.value = 'on-exit';
      record.facts['stream-priority.honoured']!.value = false;
    });
    const outcome = store.store(other);
    expect(outcome.kind).toBe('written');
    if (outcome.kind !== 'written') return;
    expect(outcome.conflicts).toEqual([
      {
        file: path.join(dir, recordPath(runs[0]!)),
        facts: [
          { name: 'pinned-release.released', here: 'on-exit', there: 'on-free' },
          { name: 'stream-priority.honoured', here: false, there: true },
        ],
      },
    ]);
    expect(readdirSync(path.join(dir, 'driver-580.159.04')).sort()).toEqual(
      [path.basename(recordPath(runs[0]!)), path.basename(recordPath(other))].sort(),
    );
  });

  it('a run of fewer probes (facts only one side has, none different) is written without a conflict', () => {
    const dir = tempDir('cm-store-');
    const store = new RecordStore(dir);
    store.store(runs[0]!);
    const fewer = doctored(runs[1]!, 'fe11e5f0fe11e5f0', (record) => {
      record.facts = { 'cuda-graph.supported': record.facts['cuda-graph.supported']! };
    });
    const outcome = store.store(fewer);
    expect(outcome.kind).toBe('written');
    if (outcome.kind !== 'written') return;
    expect(outcome.conflicts).toEqual([]);
    expect(outcome.partial).toHaveLength(1);
    expect(outcome.partial[0]!.facts.every((fact) => fact.here === undefined)).toBe(true);
  });

  it('the same facts with metrics beyond their noise (pinned bandwidth halved) is written with its drift; each run is compared with the record it follows in time', () => {
    const dir = tempDir('cm-store-');
    const store = new RecordStore(dir);
    const first = store.store(runs[0]!);
    const halve = (record: BehaviourRecord) => {
      for (const metric of record.metrics)
        if (metric.name === 'transfer-bandwidth.bandwidth_gbps' && metric.attrs?.memory === 'pinned') metric.value = metric.value! / 2;
    };
    const slow = doctored(runs[3]!, 'a11a11a11a11a11a', halve);
    const outcome = store.store(slow);
    expect(outcome).toMatchObject({
      kind: 'written',
      file: path.join(dir, recordPath(slow)),
      conflicts: [],
      partial: [],
      drift: { file: first.file, cells: [] },
    });
    if (outcome.kind !== 'written') return;
    expect(
      outcome.drift!.metrics.map((comparison) => [comparison.attrs.direction, comparison.attrs.size_bytes, comparison.flagged]),
    ).toEqual(
      [1048576, 16777216, 268435456, 1073741824].flatMap((size) => [
        ['h2d', size, true],
        ['d2h', size, true],
      ]),
    );
    // 2026-11-30 follows the record of 2026-11-29 (within noise of it), not the halved one of 2026-12-01: a repeat of it.
    expect(store.store(runs[1]!)).toMatchObject({ kind: 'written', repeatOf: { file: first.file } });
    // The halved run of another day: a repeat of the halved record. Back to normal after it: written, drifted from the halved one.
    expect(
      store.store(doctored(slow, 'a22a22a22a22a22a', (record) => void (record.observed.date = '2026-12-02T00:00:00.000Z'))),
    ).toMatchObject({
      kind: 'written',
      repeatOf: { file: outcome.file },
    });
    const back = doctored(runs[3]!, 'b00b00b00b00b00b', (record) => void (record.observed.date = '2026-12-03T00:00:00.000Z'));
    expect(store.store(back)).toMatchObject({
      kind: 'written',
      drift: {
        file: path.join(
          dir,
          recordPath({ ...slow, id: 'a22a22a22a22a22a', observed: { ...slow.observed, date: '2026-12-02T00:00:00.000Z' } }),
        ),
      },
    });
    expect(readdirSync(path.join(dir, 'driver-580.159.04'))).toHaveLength(5);
  });

  it('another record of the same run at the same path is not overwritten (a clash); a broken file in the folder is named', () => {
    const dir = tempDir('cm-store-');
    const store = new RecordStore(dir);
    const written = store.store(runs[0]!);
    const changed = doctored(runs[0]!, runs[0]!.id, (record) => void (record.facts['cuda-graph.supported']!.value = false));
    expect(store.store(changed)).toEqual({ kind: 'clash', file: written.file });
    expect(readFileSync(written.file, 'utf8')).toBe(recordJson(runs[0]!));
    writeFileSync(path.join(dir, 'driver-580.159.04', 'broken.json'), '{"recordSchema": 1, "id": ');
    const e = codeOf(() => new RecordStore(dir).store(runs[1]!));
    expect(e.code).toBe('RECORD_INVALID');
    expect(e.message).toContain(path.join(dir, 'driver-580.159.04', 'broken.json'));
    expect(e.message).toContain('not JSON');
  });
});

describe('the submitted file', () => {
  it('carries the records and a summary; read back, it gives the same records, also with CRLF line ends', () => {
    const records = [redactRecord(runs[0]!)];
    const text = renderSubmission(records, '0.1.0');
    expect(text).toContain('# cudamatrix behaviour records: 1 observation');
    expect(text).toContain('## linux · NVIDIA H200 · 580.159.04 · Ubuntu 24.04.3 LTS · in docker');
    expect(text).toContain('| `pinned-vram.counts_as_vram` | false |');
    expect(text).toContain('Against the default expectations (matrix/default.yaml): 15 passed.');
    expect(text).toContain('Removed first: GPU and MIG UUIDs');
    expect(text).not.toContain(runs[0]!.sysinfo.gpu_uuid as string);
    expect(renderSubmission(records, '0.1.0')).toBe(text);
    const back = parseSubmission(text, 'sub.md');
    expect(back.map(recordJson)).toEqual(records.map(recordJson));
    expect(parseSubmission(text.replace(/\n/g, '\r\n'), 'sub.md').map(recordJson)).toEqual(records.map(recordJson));
  });

  it('records edited by hand, a newer format or a missing block are refused, naming the file', () => {
    const text = renderSubmission([redactRecord(runs[0]!)], '0.1.0');
    const edited = text.replace('"value": "on-free"', '"value": "on-exit"');
    expect(edited).not.toBe(text);
    expect(codeOf(() => parseSubmission(edited, 'sub.md'))).toEqual({
      code: 'RECORD_INVALID',
      message: expect.stringMatching(/^sub\.md: the records were changed after cudamatrix wrote them/),
    });
    const summaryEdited = text.replace('| `pinned-release.released` | on-free |', '| `pinned-release.released` | on-exit |');
    expect(summaryEdited).not.toBe(text);
    expect(codeOf(() => parseSubmission(summaryEdited, 'sub.md'))).toEqual({
      code: 'RECORD_INVALID',
      message: expect.stringMatching(/^sub\.md: the summary was changed after cudamatrix wrote it/),
    });
    expect(codeOf(() => parseSubmission(text.replace('cudamatrix-submission 1 ', 'cudamatrix-submission 2 '), 'sub.md')).message).toMatch(
      /sub\.md is a submission of format 2; .* upgrade cudamatrix/,
    );
    expect(codeOf(() => parseSubmission(text.replace('json cudamatrix-records', 'json'), 'sub.md')).message).toMatch(
      /^sub\.md: no ```json cudamatrix-records block/,
    );
  });
});

describe('inputs', () => {
  it('an event log, its run folder, a record file, a submitted file and a folder of records (run folders in it skipped)', async () => {
    const defaults = await defaultExpectations();
    const log = readInput(H200_RUNS[0]!, defaults);
    expect([log.kind, log.records.length, log.eventLog]).toEqual(['event-log', 1, H200_RUNS[0]]);
    expect(readInput(path.dirname(H200_RUNS[0]!), defaults).kind).toBe('event-log');
    const folder = readInput(H200_DIR, defaults);
    expect(folder.kind).toBe('records-folder');
    expect(folder.records.map((inputRecord) => path.relative(H200_DIR, inputRecord.file!)).sort()).toEqual(
      readdirSync(H200_DIR)
        .filter((fileName) => fileName.endsWith('.json'))
        .sort(),
    );
    const dir = tempDir('cm-inputs-');
    const sub = path.join(dir, 'anything.txt');
    writeFileSync(sub, renderSubmission([redactRecord(runs[0]!)], '0.1.0'));
    expect(readInput(sub, defaults).kind).toBe('submission');
    const rec = path.join(dir, 'one.json');
    writeFileSync(rec, JSON.stringify(runs[0]));
    expect(readInput(rec, defaults)).toMatchObject({ kind: 'record', records: [{ file: rec }] });
  });

  it('a log whose target found no driver gives no record, and says why', async () => {
    const dir = tempDir('cm-inputs-');
    const file = path.join(dir, 'events.jsonl');
    writeFileSync(file, noDriverLog());
    const input = readInput(file, await defaultExpectations());
    expect(input.records).toEqual([]);
    expect(input.unrecorded).toEqual(['local: no NVIDIA driver (the CUDA driver library could not be loaded)']);
  });

  it('bad inputs: a missing path, a file that is no log or record, a newer event or record schema, each named', async () => {
    const defaults = await defaultExpectations();
    const dir = tempDir('cm-inputs-');
    const missing = path.join(dir, 'nope.jsonl');
    expect(codeOf(() => readInput(missing, defaults))).toEqual({
      code: 'USAGE',
      message: expect.stringContaining(`${missing} does not exist`),
    });
    const text = path.join(dir, 'notes.txt');
    writeFileSync(text, 'just some notes\n');
    expect(codeOf(() => readInput(text, defaults))).toEqual({
      code: 'RECORD_INVALID',
      message: expect.stringContaining(`${text} is neither an event log`),
    });
    const newLog = path.join(dir, 'new.jsonl');
    const lines = readFileSync(H200_RUNS[0]!, 'utf8').split('\n');
    lines[0] = lines[0]!.replace('"schemaVersion":1', '"schemaVersion":3');
    writeFileSync(newLog, lines.join('\n'));
    expect(codeOf(() => readInput(newLog, defaults))).toEqual({
      code: 'EVENTS_TOO_NEW',
      message: expect.stringMatching(new RegExp(`^${newLog} was written with event schema 3 .*upgrade cudamatrix`)),
    });
    const newRecord = path.join(dir, 'new.json');
    writeFileSync(newRecord, JSON.stringify({ ...runs[0], recordSchema: 2 }));
    expect(codeOf(() => readInput(newRecord, defaults))).toEqual({
      code: 'RECORD_INVALID',
      message: expect.stringMatching(new RegExp(`^behaviour record ${newRecord} has record schema 2; .*upgrade cudamatrix`)),
    });
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ ...runs[0], metrics: [{ name: 'x', value: 'fast', unit: 'us' }] }));
    expect(codeOf(() => readInput(bad, defaults)).message).toContain(
      `behaviour record ${bad}: metrics[0]: expected {name, value: a number or null, unit, attrs?}`,
    );
    const empty = tempDir('cm-inputs-empty-');
    expect(codeOf(() => readInput(empty, defaults)).message).toContain(
      `${empty} holds neither an events.jsonl (a run folder) nor record files`,
    );
  });
});
