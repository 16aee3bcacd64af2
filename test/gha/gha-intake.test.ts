/**
 * The record intake (.github/workflows/record-intake.yml), played here with the workflow player
 * (tools/gha-player) for issues made with the form "Submit a behaviour record": validate runs
 * scripts/record-intake.ts and the real `cudamatrix record` in a clone of this checkout whose
 * records/ lacks the record of the last committed H200 run; pull-request commits what validate
 * uploaded and pushes it (git real, to a bare repository standing for GitHub's); comment answers
 * on the issue.
 *
 * The submissions are made by `cudamatrix record --submit` from the committed H200 logs: the last
 * run's (new to the clone: taken), the first run's (its record is committed: counted), the last
 * run's with a fact changed in its JSON (refused by its sha256), and one whose records say 900 GB/s
 * pinned copies (made self-consistent with renderSubmission, as an editor who knows the format
 * would: refused only once `record` checks physics, issue 35 item 4).
 *
 * Declared stand-ins (each logs or records what it does): actions/checkout, setup-node, upload-
 * and download-artifact (the player's); the install step, replaced by this checkout's
 * node_modules linked into the job's workspace; `gh`, which would talk to GitHub, by a script that
 * records its arguments and the comment's text; `curl`, which would fetch an attachment from
 * GitHub, by a script that serves the test's files for their attachment URLs and records each call.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { playWorkflow, type WorkflowPlay } from '@cudamatrix/gha-player';
import { parse } from 'yaml';
import { H200_DIR, H200_RUNS } from '../record-fixture.ts';
import { recordPath, type BehaviourRecord } from '../../behaviour/behaviour-record.ts';
import { parseSubmission, renderSubmission } from '../../behaviour/submit.ts';
import { TOOL_VERSION } from '../../core/version.ts';
import { runCli } from '../cli.ts';
import { repoRoot, tempDir } from '../helpers.ts';
import { git } from './gha-lab.ts';

const WORKFLOW = '.github/workflows/record-intake.yml';
const REPOSITORY = 'your-org/cudamatrix';
const attachmentUrl = (id: number) => `https://github.com/user-attachments/files/${id}/cudamatrix-records.txt`;
/** Issue 35 item 4 (refusing impossible values) has landed when the CLI knows its error code. */

/** An issue body as the form writes it: each field under its label. */
const formBody = (submission: string) => `### The submission\n\n${submission}\n\n### Anything the records do not say\n\n_No response_`;

/** gh records its arguments (and a comment's text); pr list answers from the pull requests it opened. */
const GH_STANDIN = `#!/usr/bin/env node
// [player] gh stand-in: records its arguments; nothing reaches GitHub
const fs = require('fs');
const calls = process.env.INTAKE_GH_CALLS;
const args = process.argv.slice(2);
const before = fs.existsSync(calls) ? fs.readFileSync(calls, 'utf8').split('\\n').filter(Boolean).map((line) => JSON.parse(line)) : [];
const opened = before.filter((call) => call.args[0] === 'pr' && call.args[1] === 'create');
const option = (name) => args[args.indexOf(name) + 1];
const call = { args };
if (args[0] === 'issue' && args[1] === 'comment') call.body = fs.readFileSync(option('--body-file'), 'utf8');
fs.appendFileSync(calls, JSON.stringify(call) + '\\n');
const url = (i) => 'https://github.com/${REPOSITORY}/pull/' + (i + 1);
if (args[0] === 'pr' && args[1] === 'create') console.log(url(opened.length));
if (args[0] === 'pr' && args[1] === 'list') opened.forEach((pr, i) => pr.args[pr.args.indexOf('--head') + 1] === option('--head') && console.log(url(i)));
`;

/** curl serves the files of INTAKE_ATTACHMENTS (url -> file) as GitHub's attachment store would; anything else is a 404. */
const CURL_STANDIN = `#!/usr/bin/env node
// [player] curl stand-in: serves the test's attachments; nothing leaves this machine
const fs = require('fs');
const args = process.argv.slice(2);
fs.appendFileSync(process.env.INTAKE_CURL_CALLS, JSON.stringify({ args }) + '\\n');
const files = JSON.parse(fs.readFileSync(process.env.INTAKE_ATTACHMENTS, 'utf8'));
const url = args.at(-1);
if (!files[url]) { process.stderr.write('curl: (22) The requested URL returned error: 404\\n'); process.exit(22); }
fs.copyFileSync(files[url], args[args.indexOf('--output') + 1]);
`;

interface Intake {
  dir: string;
  origin: string;
  attachments: Record<string, string>;
  play(issue: number, body: string): Promise<{ play: WorkflowPlay; gh: { args: string[]; body?: string }[]; curl: { args: string[] }[] }>;
}

const readLines = <T>(file: string): T[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as T)
    : [];

/** This checkout as GitHub's repository (a bare one), less the record of `withheld`'s run. */
function makeOrigin(dir: string, withheld: string): string {
  const src = path.join(dir, 'src');
  const files = execFileSync('git', ['-C', repoRoot, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8' })
    .split('\0')
    .filter((file) => file && file !== withheld && existsSync(path.join(repoRoot, file)));
  for (const file of files) cpSync(path.join(repoRoot, file), path.join(src, file), { verbatimSymlinks: true });
  git(src, 'init', '-q', '-b', 'main');
  git(src, 'add', '.');
  git(src, 'commit', '-q', '-m', 'cudamatrix');
  const origin = path.join(dir, 'origin.git');
  git(dir, 'clone', '-q', '--bare', src, origin);
  return origin;
}

function makeIntake(dir: string, withheld: string): Intake {
  const origin = makeOrigin(dir, withheld);
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(path.join(bin, 'gh'), GH_STANDIN);
  writeFileSync(path.join(bin, 'curl'), CURL_STANDIN);
  for (const standIn of ['gh', 'curl']) chmodSync(path.join(bin, standIn), 0o755);
  const attachments: Record<string, string> = {};
  let runners = 0;
  return {
    dir,
    origin,
    attachments,
    async play(issue, body) {
      const calls = { gh: path.join(dir, `gh-${issue}.jsonl`), curl: path.join(dir, `curl-${issue}.jsonl`) };
      const attachmentsFile = path.join(dir, `attachments-${issue}.json`);
      writeFileSync(attachmentsFile, JSON.stringify(attachments));
      const play = await playWorkflow({
        workflowFile: path.join(repoRoot, WORKFLOW),
        event: 'issues',
        github: { repository: REPOSITORY },
        eventPayload: {
          action: 'opened',
          issue: { number: issue, title: 'Behaviour record: H200', body, state: 'open', labels: [{ name: 'behaviour-record' }] },
          repository: { full_name: REPOSITORY, name: 'cudamatrix', default_branch: 'main' },
        },
        // Each job a fresh runner: a clone of GitHub's repository.
        workspace: () => {
          const ws = path.join(dir, 'runners', String(runners++));
          git(dir, 'clone', '-q', origin, ws);
          return ws;
        },
        artifactsDir: path.join(dir, `artifacts-${issue}`),
        env: {
          ...process.env,
          PATH: `${bin}:${process.env.PATH}`,
          NO_COLOR: '1',
          INTAKE_GH_CALLS: calls.gh,
          INTAKE_CURL_CALLS: calls.curl,
          INTAKE_ATTACHMENTS: attachmentsFile,
        },
        replaceSteps: {
          'validate.install': (ctx) => {
            symlinkSync(path.join(repoRoot, 'node_modules'), path.join(ctx.workspace, 'node_modules'));
            ctx.log(`[player] the install step is replaced: this checkout's node_modules (${repoRoot}) linked into ${ctx.workspace}`);
          },
        },
      });
      return { play, gh: readLines(calls.gh), curl: readLines(calls.curl) };
    },
  };
}

const branches = (origin: string) =>
  git(origin, 'for-each-ref', '--format=%(refname:short)', 'refs/heads').split('\n').filter(Boolean).sort();
const comments = (gh: { args: string[]; body?: string }[]) => gh.filter((call) => call.args[0] === 'issue' && call.args[1] === 'comment');
const pullRequestCalls = (gh: { args: string[] }[]) => gh.filter((call) => call.args[0] === 'pr');

describe('the record intake, played for issues made with the form', () => {
  let intake: Intake;
  let valid: string;
  let newRecord: string;
  beforeAll(async () => {
    const dir = tempDir('cm-intake-');
    const submissions = path.join(dir, 'submissions');
    mkdirSync(submissions);
    valid = path.join(submissions, 'valid.txt');
    const made = await runCli(['record', H200_RUNS[3]!, '--submit', valid]);
    expect(made.code, made.stderr).toBe(0);
    const [record] = parseSubmission(readFileSync(valid, 'utf8'), valid);
    newRecord = `records/${recordPath(record!)}`;
    expect(existsSync(path.join(repoRoot, newRecord)), `${newRecord} is committed`).toBe(true);
    intake = makeIntake(dir, newRecord);
  }, 300_000);

  it('takes a valid attached submission: a pull request branch with the record alone, and a comment naming both', async () => {
    intake.attachments[attachmentUrl(1)] = valid;
    const { play, gh, curl } = await intake.play(101, formBody(`[cudamatrix-records.txt](${attachmentUrl(1)})`));
    expect(play.result, play.jobs.validate?.legs[0]?.log).toBe('success');
    expect(play.order).toEqual(['validate', 'pull-request', 'comment']);
    // The attachment fetched once, over https only, with no credential.
    expect(curl).toHaveLength(1);
    expect(curl[0]!.args).toEqual(expect.arrayContaining(['--proto', '=https', '--proto-redir', '=https', attachmentUrl(1)]));
    expect(curl[0]!.args.filter((arg) => /^(-H|--header|-u|--user|--oauth2-bearer|--netrc)/.test(arg))).toEqual([]);
    // The branch: the default branch plus the record, as `cudamatrix record` writes it.
    expect(branches(intake.origin)).toEqual(['main', 'record-intake/issue-101']);
    expect(git(intake.origin, 'diff', '--name-only', 'main', 'record-intake/issue-101').trim()).toBe(newRecord);
    const stored = JSON.parse(git(intake.origin, 'show', `record-intake/issue-101:${newRecord}`)) as BehaviourRecord;
    const committed = JSON.parse(readFileSync(path.join(repoRoot, newRecord), 'utf8')) as BehaviourRecord;
    expect([stored.id, stored.observed.runId, stored.metrics.length]).toEqual([
      committed.id,
      committed.observed.runId,
      committed.metrics.length,
    ]);
    const create = pullRequestCalls(gh).find((call) => call.args[1] === 'create')!;
    expect(create.args).toEqual(expect.arrayContaining(['--head', 'record-intake/issue-101', '--base', 'main', '--repo', REPOSITORY]));
    const [comment] = comments(gh);
    expect(comment!.args.slice(0, 3)).toEqual(['issue', 'comment', '101']);
    expect(comment!.body).toContain('**Taken.**');
    expect(comment!.body).toContain(`- \`${newRecord}\``);
    expect(comment!.body).toContain(`Pull request: https://github.com/${REPOSITORY}/pull/1`);
  }, 300_000);

  it('refuses a pasted submission whose records were edited: the reason in a comment, no branch, no pull request', async () => {
    const text = readFileSync(valid, 'utf8');
    const json = text.indexOf('<details>');
    const edited = text.slice(0, json) + text.slice(json).replace('"value": "on-free"', '"value": "on-exit"');
    expect(edited).not.toBe(text);
    const { play, gh } = await intake.play(102, formBody(edited));
    expect(play.jobs['pull-request']!.result).toBe('skipped');
    expect(branches(intake.origin)).toEqual(['main', 'record-intake/issue-101']);
    expect(pullRequestCalls(gh)).toEqual([]);
    const [comment] = comments(gh);
    expect(comment!.body).toContain('**Not taken.**');
    expect(comment!.body).toContain(
      "error [RECORD_INVALID]: the submitted file: the records were changed after cudamatrix wrote them (their sha256 is not the marker's)",
    );
    expect(comment!.body).not.toContain(intake.dir); // the runner's paths are not the submitter's business
  }, 300_000);

  it('counts a submission of an observation already committed: a comment and the label record-repeat, no new file', async () => {
    const repeat = path.join(intake.dir, 'submissions', 'repeat.txt');
    expect((await runCli(['record', H200_RUNS[0]!, '--submit', repeat])).code).toBe(0);
    intake.attachments[attachmentUrl(2)] = repeat;
    const { play, gh } = await intake.play(103, formBody(`[cudamatrix-records.txt](${attachmentUrl(2)})`));
    expect(play.jobs.validate!.outputs.outcome).toBe('counted');
    expect(play.jobs['pull-request']!.result).toBe('skipped');
    expect(branches(intake.origin)).toEqual(['main', 'record-intake/issue-101']);
    expect(readdirSync(path.join(intake.dir, 'artifacts-103', 'record-intake'))).toEqual(['comment.md', 'outcome']); // no record
    const [comment] = comments(gh);
    const existing = readdirSync(H200_DIR).find((file) => file.endsWith('.json') && file.includes('2026-11-29'))!;
    expect(comment!.body).toContain('**Nothing new to store.** Counted');
    expect(comment!.body).toContain(`records/driver-580.159.04/${existing}`);
    expect(gh.map((call) => call.args)).toContainEqual(['issue', 'edit', '103', '--repo', REPOSITORY, '--add-label', 'record-repeat']);
  }, 300_000);

  it('fetches no link but a file attached on GitHub, and says so', async () => {
    const elsewhere = 'https://example.com/files/1/cudamatrix-records.txt';
    const { play, gh, curl } = await intake.play(104, formBody(`[cudamatrix-records.txt](${elsewhere})`));
    expect(play.jobs.validate!.outputs.outcome).toBe('refused');
    expect(curl).toEqual([]);
    expect(comments(gh)[0]!.body).toContain(`The links in it (${elsewhere}) are not files attached to this issue, and are not fetched.`);
    expect(branches(intake.origin)).toEqual(['main', 'record-intake/issue-101']);
  }, 300_000);

  // `record` refuses values that cannot be true (behaviour/plausibility.ts), and so does the intake.
  it('refuses a submission of 900 GB/s pinned copies (RECORD_IMPLAUSIBLE, item 4): the bound in a comment, no branch', async () => {
    const records = parseSubmission(readFileSync(valid, 'utf8'), valid);
    for (const metric of records[0]!.metrics)
      if (metric.name === 'transfer-bandwidth.bandwidth_gbps' && metric.attrs?.memory === 'pinned')
        [metric.value, metric.repeats] = [900, undefined];
    const { play, gh } = await intake.play(105, formBody(renderSubmission(records, TOOL_VERSION)));
    expect(play.jobs['pull-request']!.result).toBe('skipped');
    expect(branches(intake.origin)).toEqual(['main', 'record-intake/issue-101']);
    const body = comments(gh)[0]!.body;
    expect(body).toContain('error [RECORD_IMPLAUSIBLE]: 8 values that cannot be true; nothing was written');
    expect(body).toContain('= 900 GB/s, at most 69.3 GB/s: PCIe gen5 x16 (sysinfo pcie_gen_max, pcie_width_max)');
  }, 300_000);
});

describe('record-intake.yml: what the player cannot show', () => {
  const wf = parse(readFileSync(path.join(repoRoot, WORKFLOW), 'utf8')) as {
    on: unknown;
    jobs: Record<
      string,
      { if?: string; permissions?: unknown; steps: { run?: string; env?: Record<string, string>; with?: Record<string, unknown> }[] }
    >;
  };

  it("runs on opened and edited issues with the form's label, which the form sets", () => {
    expect(wf.on).toEqual({ issues: { types: ['opened', 'edited'] } });
    expect(wf.jobs.validate!.if).toContain("contains(github.event.issue.labels.*.name, 'behaviour-record')");
    const form = parse(readFileSync(path.join(repoRoot, '.github/ISSUE_TEMPLATE/submit-behaviour-record.yml'), 'utf8')) as {
      labels: string[];
    };
    expect(form.labels).toEqual(['behaviour-record']);
  });

  it('judges with a read-only token and no secret; writes only in the jobs that must, from the artifact', () => {
    expect(Object.fromEntries(Object.entries(wf.jobs).map(([id, job]) => [id, job.permissions]))).toEqual({
      validate: { contents: 'read', issues: 'read' },
      'pull-request': { contents: 'write', 'pull-requests': 'write' },
      comment: { issues: 'write' },
    });
    const text = readFileSync(path.join(repoRoot, WORKFLOW), 'utf8');
    expect(text).not.toMatch(/secrets\./);
    expect(JSON.stringify(wf.jobs.validate)).not.toMatch(/github\.token/);
    // The issue's text reaches the validate job alone, through env; no script pastes a ${{ }}.
    expect(text.match(/github\.event\.issue\.body/g)).toHaveLength(1);
    expect(wf.jobs.validate!.steps.find((step) => step.env?.ISSUE_BODY)?.env?.ISSUE_BODY).toBe('${{ github.event.issue.body }}');
    for (const job of Object.values(wf.jobs))
      for (const step of job.steps) {
        if (step.run) expect(step.run).not.toMatch(/\$\{\{/);
        if (step.with && 'persist-credentials' in step.with) expect(step.with['persist-credentials']).toBe(false);
      }
  });
});
