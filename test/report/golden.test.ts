/**
 * Golden files: every committed H200 event log rendered through every output (console, JUnit,
 * JSON summary, GitHub step summary, outputs and workflow commands, `record`'s files and its
 * console, BEHAVIOUR.md and the HTML page with its embedded data, the claim pages and claims.json; gha merge of the GitHub Actions
 * run), compared byte for byte with test/fixtures/golden/. A refactor must leave them as they are; a change of output is made on
 * purpose with `UPDATE_GOLDEN=1 pnpm exec vitest run test/report/golden.test.ts` and reviewed in the
 * diff (docs/development.md).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ghaMergeCommand } from '../../cli/gha.ts';
import { recordCommand } from '../../cli/record.ts';
import { readEventLog } from '../../events/events.ts';
import { renderReport, reportPaths } from '../../report/write-report.ts';
import { loadRecords } from '../../report/load.ts';
import { pageData } from '../../report/page-data.ts';
import { Reporters } from '../../reporters/reporter.ts';
import { consoleReporter } from '../../reporters/console.ts';
import { githubReporter } from '../../reporters/github.ts';
import { jsonReporter } from '../../reporters/json.ts';
import { junitReporter } from '../../reporters/junit.ts';
import { summarize } from '../../verdicts/verdicts.ts';
import type { RunEvent } from '../../events/events.ts';
import { h200EventsFile, h200WithLinuxExpectations, pinnedH2dAtLeast40 } from '../h200-fixture.ts';
import { repoRoot, tempDir } from '../helpers.ts';

const update = process.env.UPDATE_GOLDEN === '1';
const goldenDir = path.join(repoRoot, 'test', 'fixtures', 'golden');
const recordsRoot = path.join(repoRoot, 'records');

/** Every committed event log (*.jsonl under records), as a path relative to the repository. */
function committedLogs(dir = recordsRoot): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0))
    .flatMap((e) =>
      e.isDirectory()
        ? committedLogs(path.join(dir, e.name))
        : e.name.endsWith('.jsonl')
          ? [path.relative(repoRoot, path.join(dir, e.name)).split(path.sep).join('/')]
          : [],
    );
}

/** The golden folder of a log: its path under records, with .jsonl dropped. */
const goldenName = (log: string) => path.posix.relative('records', log).replace(/\.jsonl$/, '');

/** Every file compared, relative to goldenDir: to find golden files no output makes any more. */
const compared = new Set<string>();

function expectGolden(file: string, actual: string): void {
  compared.add(file);
  const at = path.join(goldenDir, file);
  if (update) {
    mkdirSync(path.dirname(at), { recursive: true });
    writeFileSync(at, actual);
    return;
  }
  let expected: string;
  try {
    expected = readFileSync(at, 'utf8');
  } catch {
    throw new Error(
      `no golden file ${path.relative(repoRoot, at)}: run UPDATE_GOLDEN=1 pnpm exec vitest run test/report/golden.test.ts and review the diff`,
    );
  }
  // Soft: every output is compared, and each that differs is named.
  expect.soft(actual, `${file} differs from its golden file (UPDATE_GOLDEN=1 rewrites it: see docs/development.md)`).toBe(expected);
}

const files = tempDir('cm-golden-');
// @actions/core keeps the summary file it first finds: one for this whole file, emptied per log.
const summaryFile = path.join(files, 'step-summary.md');
const outputFile = path.join(files, 'github-output.txt');
writeFileSync(summaryFile, '');
vi.stubEnv('GITHUB_STEP_SUMMARY', summaryFile);
vi.stubEnv('GITHUB_OUTPUT', outputFile);
afterAll(() => vi.unstubAllEnvs());

/** What the process writes on stdout and stderr while `fn` runs. */
async function captured(fn: () => Promise<unknown>): Promise<{ stdout: string; stderr: string }> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const so = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (stdout.push(String(chunk)), true));
  const se = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (stderr.push(String(chunk)), true));
  try {
    await fn();
  } finally {
    so.mockRestore();
    se.mockRestore();
  }
  return { stdout: stdout.join(''), stderr: stderr.join('') };
}

const logs = committedLogs();
/**
 * The committed logs meet every expectation; so that the outputs of failures (annotations, the
 * summary's evidence, JUnit failures) are golden too, the first H200 log once more with two of
 * its linux expectations made to fail.
 */
const FAILING = 'h200-linux-two-expectations-failing';
const failing = h200WithLinuxExpectations([
  pinnedH2dAtLeast40,
  { fact: 'pinned-vram.counts_as_vram', equals: true, why: 'the design card says so (C1)' },
]);
const eventsOf = (log: string): RunEvent[] => (log === FAILING ? failing : readEventLog(path.join(repoRoot, log)));

describe('golden: each committed H200 log through the run outputs', () => {
  it('finds the committed logs', () => {
    expect(logs.length).toBeGreaterThanOrEqual(9);
  });

  it.each([...logs, FAILING])('%s', async (log) => {
    const name = log === FAILING ? FAILING : goldenName(log);
    const events = eventsOf(log);
    // As a run in the log's own folder: the paths the outputs name are the same on every machine.
    const eventsFile = log === FAILING ? path.relative(repoRoot, h200EventsFile).split(path.sep).join('/') : log;
    const runDir = path.posix.dirname(eventsFile);
    const out = path.join(files, name);
    mkdirSync(out, { recursive: true });
    writeFileSync(summaryFile, '');
    writeFileSync(outputFile, '');
    const console: string[] = [];
    const reporters = new Reporters([
      // Not a terminal, so no progress line and no colours; no CI switches from this process's environment.
      consoleReporter({ out: { write: (chunk: string) => console.push(chunk), isTTY: false, columns: 120 }, color: false, env: {} }),
      junitReporter(path.join(out, 'junit.xml')),
      jsonReporter(path.join(out, 'summary.json')),
      githubReporter(),
    ]);
    const { stdout, stderr } = await captured(async () => {
      for (const e of events) reporters.event(e);
      const unwritten = await reporters.end(summarize(events), { runDir, eventsFile, strict: false });
      expect(unwritten).toEqual([]);
    });
    expect(stderr).toBe('');
    expectGolden(`${name}/console.txt`, console.join(''));
    expectGolden(`${name}/junit.xml`, readFileSync(path.join(out, 'junit.xml'), 'utf8'));
    // summary.json is one line (reporters/json.test.ts checks its bytes): compared indented, so that a change shows in a readable diff.
    const summaryText = readFileSync(path.join(out, 'summary.json'), 'utf8');
    expect(summaryText).toBe(`${JSON.stringify(JSON.parse(summaryText))}\n`);
    expectGolden(`${name}/summary.json`, `${JSON.stringify(JSON.parse(summaryText), null, 2)}\n`);
    expectGolden(`${name}/github-commands.txt`, stdout);
    expectGolden(`${name}/github-step-summary.md`, readFileSync(summaryFile, 'utf8'));
    // @actions/core delimits each output with ghadelimiter_<a random UUID>: the one thing that differs per run.
    expectGolden(`${name}/github-output.txt`, readFileSync(outputFile, 'utf8').replace(/ghadelimiter_[0-9a-f-]{36}/g, 'ghadelimiter_UUID'));
  });
});

describe('golden: record and report of the committed H200 logs', () => {
  // As in the repository: the report in the folder of the records it links to.
  const recordsDir = path.join(files, 'report', 'records');
  // Only complete logs: record refuses a log cut off by SIGKILL (the sigkill folder's), and one refused input stops it all.
  const complete = logs.filter((log) => readEventLog(path.join(repoRoot, log)).at(-1)?.type === 'run-end');

  it('record: its console and the record files', async () => {
    rmSync(recordsDir, { recursive: true, force: true });
    let status = -1;
    const { stdout, stderr } = await captured(async () => {
      status = await recordCommand(
        complete.map((log) => path.join(repoRoot, log)),
        { recordsDir },
      );
    });
    // The temporary folders and the checkout differ per machine; what record says of them does not.
    const said = `exit ${status}\n${stdout}${stderr ? `--- stderr\n${stderr}` : ''}`
      .split(recordsDir)
      .join('<records>')
      .split(repoRoot)
      .join('<repo>');
    expectGolden('record/console.txt', said);
    const written = filesUnder(recordsDir);
    expect(written.length).toBeGreaterThan(0);
    expectGolden('record/files.txt', `${written.join('\n')}\n`);
    for (const file of written) expectGolden(`record/${file}`, readFileSync(path.join(recordsDir, file), 'utf8'));
  });

  it('report: BEHAVIOUR.md, behaviour.html, the page data it embeds, the claim pages and claims.json', () => {
    const records = loadRecords(recordsDir);
    const paths = reportPaths(recordsDir, recordsDir);
    const { markdown, html, claims } = renderReport(records, paths);
    expectGolden('report/BEHAVIOUR.md', markdown);
    expectGolden('report/behaviour.html', html);
    expect(claims.map(([file]) => file)).toEqual(expect.arrayContaining(['claims/index.html', 'claims/claims.json', 'claims/C1.html']));
    for (const [file, text] of claims) expectGolden(`report/${file}`, text);
    // The same data as the page embeds it, indented: a change shows in a readable diff.
    expectGolden(
      'report/page-data.json',
      `${JSON.stringify(pageData(records, paths.recordsLink, undefined, paths.recordsDirName), null, 2)}\n`,
    );
  });
});

describe('golden: gha merge of the committed GitHub Actions run', () => {
  const gha = path.join(recordsRoot, 'driver-580.159.04', 'h200-linux-gha-2026-12-01');

  it('its console, workflow commands, step outputs and job summary, and the record and report it writes', async () => {
    const root = path.join(files, 'gha-merge');
    rmSync(root, { recursive: true, force: true });
    const [resultsDir, recordsDir, reportDir] = ['runs', 'records', 'report'].map((folder) => path.join(root, folder)) as [
      string,
      string,
      string,
    ];
    writeFileSync(summaryFile, '');
    writeFileSync(outputFile, '');
    // As the step runs it; no colours whatever this process's CI says.
    vi.stubEnv('GITHUB_ACTIONS', 'true');
    vi.stubEnv('NO_COLOR', '1');
    let status = -1;
    const { stdout, stderr } = await captured(async () => {
      status = await ghaMergeCommand([gha], {
        plan: path.join(gha, 'plan.json'),
        resultsDir,
        recordsDir,
        reportDir,
        record: true,
        quiet: false,
        strict: false,
        failOnChange: false,
      });
    });
    vi.stubEnv('GITHUB_ACTIONS', undefined);
    vi.stubEnv('NO_COLOR', undefined);
    // The temporary folders and the checkout differ per machine; the random output delimiter per run.
    const normal = (text: string) =>
      text
        .split(root)
        .join('<tmp>')
        .split(repoRoot)
        .join('<repo>')
        .replace(/ghadelimiter_[0-9a-f-]{36}/g, 'ghadelimiter_UUID');
    expectGolden('gha-merge/console.txt', normal(`exit ${status}\n${stdout}--- stderr\n${stderr}`));
    expectGolden('gha-merge/github-step-summary.md', normal(readFileSync(summaryFile, 'utf8')));
    expectGolden('gha-merge/github-output.txt', normal(readFileSync(outputFile, 'utf8')));
    const written = filesUnder(root).filter((file) => !file.startsWith('runs/'));
    expectGolden('gha-merge/files.txt', `${written.join('\n')}\n`);
    for (const file of written) expectGolden(`gha-merge/${file}`, readFileSync(path.join(root, file), 'utf8'));
  });
});

/** The files under dir, relative and / separated, sorted. */
function filesUnder(dir: string, at = ''): string[] {
  return readdirSync(path.join(dir, at), { withFileTypes: true })
    .sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0))
    .flatMap((e) => (e.isDirectory() ? filesUnder(dir, path.posix.join(at, e.name)) : [path.posix.join(at, e.name)]));
}

describe('golden: no stale golden files', () => {
  it('every golden file is an output compared above', () => {
    if (update) {
      // Outputs that are no more: removed, so that the golden folder holds only what is compared.
      for (const file of filesUnder(goldenDir)) if (!compared.has(file)) rmSync(path.join(goldenDir, file));
      return;
    }
    expect(filesUnder(goldenDir).filter((file) => !compared.has(file))).toEqual([]);
  });
});
