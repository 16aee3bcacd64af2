/** `cudamatrix report` as a user runs it: the real CLI process. */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { recordPath, type BehaviourRecord } from '../../behaviour/behaviour-record.ts';
import { renderReport, reportPaths } from '../../report/write-report.ts';
import { loadRecords } from '../../report/load.ts';
import { runCli } from '../cli.ts';
import { tempDir } from '../helpers.ts';
import { h200Records, writeRecords } from '../report-fixture.ts';

describe('cudamatrix report', () => {
  let records: BehaviourRecord[];
  beforeAll(async () => {
    records = await h200Records();
  });

  it('--help says what it writes, the options and the exit statuses', async () => {
    const result = await runCli(['report', '--help']);
    expect(result.code).toBe(0);
    for (const phrase of [
      'BEHAVIOUR.md',
      'behaviour.html',
      '--records-dir <dir>',
      '(default: "records")',
      '--out <dir>',
      '(default: "records")',
      '--check',
      'works offline',
      'Exit status:',
    ])
      expect(result.stdout).toContain(phrase);
  });

  it('writes BEHAVIOUR.md and behaviour.html from the records; --check then passes, and fails once a file differs', async () => {
    const dir = tempDir('cm-report-cli-');
    const recordsDir = path.join(dir, 'records');
    writeRecords(recordsDir, records);
    const out = path.join(dir, 'site');
    const result = await runCli(['report', '--records-dir', recordsDir, '--out', out]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(
        `^wrote ${out}/BEHAVIOUR\\.md \\(\\d+ KiB\\) and ${out}/behaviour\\.html \\(\\d+ KiB, open it in a browser: it needs no network\\) from 2 records in 1 column from ${recordsDir}, and the answer per claim in ${out}/claims \\(index\\.html, claims\\.json, their stylesheet and \\d+ pages C<n>\\.html\\)\\n$`,
      ),
    );
    const expected = renderReport(loadRecords(recordsDir), reportPaths(recordsDir, out));
    const md = readFileSync(path.join(out, 'BEHAVIOUR.md'), 'utf8');
    expect(md).toBe(expected.markdown);
    expect(readFileSync(path.join(out, 'behaviour.html'), 'utf8')).toBe(expected.html);
    for (const [file, text] of expected.claims) expect(readFileSync(path.join(out, file), 'utf8'), file).toBe(text);
    // links from the output folder to the records
    expect(md).toContain(`](../records/${recordPath(records[1]!)})`);

    // the same from another working folder, with relative paths: the same bytes
    const again = await runCli(['report', '--records-dir', 'records', '--out', 'site', '--check'], { cwd: dir });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('match the records (2 records in 1 column from records)');

    // A stale claim page fails the check too.
    const c1 = path.join(out, 'claims', 'C1.html');
    const page = readFileSync(c1, 'utf8');
    writeFileSync(c1, `${page}<!-- edited -->`);
    const staleClaim = await runCli(['report', '--records-dir', recordsDir, '--out', out, '--check']);
    expect(staleClaim.code).toBe(1);
    expect(staleClaim.stderr).toContain(`${c1} does not match the records`);
    writeFileSync(c1, page);

    // --docs-url: the claim pages link the docs there (a site without the repository's docs/).
    const site = path.join(dir, 'site-docs');
    const withUrl = await runCli(['report', '--records-dir', recordsDir, '--out', site, '--docs-url', 'https://example.org/repo/docs/']);
    expect(withUrl.code, withUrl.stderr).toBe(0);
    expect(readFileSync(path.join(site, 'claims', 'C1.html'), 'utf8')).toContain(
      'href="https://example.org/repo/docs/measure-your-machine.md"',
    );

    writeFileSync(path.join(out, 'BEHAVIOUR.md'), `${md}\nedited by hand\n`);
    const stale = await runCli(['report', '--records-dir', recordsDir, '--out', out, '--check']);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain(`${out}/BEHAVIOUR.md does not match the records`);
    expect(stale.stderr).toContain(`run cudamatrix report --records-dir ${recordsDir} --out ${out}`);
    expect(readFileSync(path.join(out, 'BEHAVIOUR.md'), 'utf8')).toContain('edited by hand');
  });

  it('a record that cannot be read: exit 2, the file and what is wrong, no stack trace', async () => {
    const dir = tempDir('cm-report-cli-');
    writeRecords(dir, records);
    mkdirSync(path.join(dir, 'driver-999.1'));
    const bad = path.join(dir, 'driver-999.1', 'broken.json');
    writeFileSync(bad, JSON.stringify({ ...records[0], key: { ...records[0]!.key, driver: 999 } }));
    const result = await runCli(['report', '--records-dir', dir, '--out', path.join(dir, 'out')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `error [RECORD_INVALID]: behaviour record ${bad}: key.driver: expected a string, got 999; records are written by \`cudamatrix record\` (write it again from its run's events.jsonl)\n`,
    );
  });

  it('a records folder that is not there: exit 2, naming it', async () => {
    const dir = tempDir('cm-report-cli-');
    const result = await runCli(['report', '--records-dir', path.join(dir, 'nope'), '--out', dir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`error [USAGE]: records folder ${path.join(dir, 'nope')} does not exist or is not a folder`);
  });

  it('another folder given as the records folder: exit 2, the report there left as it was', async () => {
    const dir = tempDir('cm-report-cli-');
    // As a new user did: --records-dir results (the report's own folder, runs beside it).
    mkdirSync(path.join(dir, 'runs'));
    writeFileSync(path.join(dir, 'BEHAVIOUR.md'), 'the committed report\n');
    const result = await runCli(['report', '--records-dir', dir, '--out', dir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`error [USAGE]: ${dir} is not a records folder: it holds no driver-<version>/ folders`);
    expect(readFileSync(path.join(dir, 'BEHAVIOUR.md'), 'utf8')).toBe('the committed report\n');
    expect(readdirSync(dir).sort()).toEqual(['BEHAVIOUR.md', 'runs']);
  });
});
