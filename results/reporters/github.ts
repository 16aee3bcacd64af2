/**
 * The GitHub reporter, on under GITHUB_ACTIONS=true (cli/run.ts, cli/merge.ts, cudamatrix gha
 * merge): the run in GitHub's own terms, through @actions/core (the only module that imports it).
 * At the end of a run or merge:
 * - log groups: per target a collapsible group with its verdict lines;
 * - annotations: one per failed or errored expectation, per target error and per probe error no
 *   expectation covers, at most MAX_ANNOTATIONS - 1, then one that sums the rest up (GitHub shows
 *   only ten of a kind per step); an interrupted run is a warning;
 * - step outputs (GITHUB_OUTPUT): the counts, the exit status, the run folder and its event log;
 * - the job summary (GITHUB_STEP_SUMMARY): the counts, a table with a row per target, then the
 *   failed expectations with their evidence, kept under SUMMARY_BUDGET_BYTES (GitHub refuses a
 *   step's summary over 1 MiB): what does not fit is counted and pointed to (junit.xml and
 *   summary.json in the run folder hold every one).
 *
 * Workflow commands go to stdout, as @actions/core writes them, except when stdout carries a
 * report (--json, --junit -): then to stderr, which the runner reads commands from too.
 * A missing GITHUB_OUTPUT or GITHUB_STEP_SUMMARY is said once on stderr and skipped, not thrown.
 * Values masked by maskSecretValues are also replaced by *** in whatever this module writes.
 */
import { existsSync, statSync } from 'node:fs';
import * as core from '@actions/core';
import { attrsText, readingLabels, sampleValueText } from '../evidence.ts';
import type { Reporter, RunContext } from '../reporter.ts';
import { exitCodeOf, shownExitCode, type RunSummary, type TargetResult, type Verdict } from '../verdicts.ts';

/**
 * A command that stops with an error (a matrix that does not load, a bad --plan) as an annotation,
 * so that the run's page shows why the step failed, not only its log. On stderr: stdout may be
 * promised to a report.
 */
export function annotateFatal(code: string, message: string): void {
  onStream(true, () => core.error(redact(message), { title: `cudamatrix: ${code}` }));
}

/** Whether this process runs in a GitHub Actions step. */
export function isGithubActions(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.GITHUB_ACTIONS === 'true';
}

/** An annotation a command adds (gha merge: what changed, with --fail-on-change). */
export interface ExtraAnnotation {
  level: 'error' | 'warning';
  title: string;
  message: string;
}

/** What a command adds to the reporter's end: more step outputs, annotations (before the reporter's own), and Markdown sections after the summary's own. */
export interface GithubExtras {
  outputs?: Record<string, string>;
  annotations?: ExtraAnnotation[];
  sections?: string[];
}

export interface GithubReporterOptions {
  /** Asked for at the end of the run (after the other reporters have written their files). */
  extras?: () => GithubExtras | Promise<GithubExtras>;
  /** stdout carries a report (--json, --junit -): workflow commands go to stderr. */
  stdoutTaken?: boolean;
  /** Where a target ran, for its annotations (gha merge: "job win-wddm on [self-hosted, windows]"). */
  runnerOf?: (target: string) => string | undefined;
}

/** GitHub shows ten error annotations of a step (and ten warnings); the last one here sums up the rest. */
export const MAX_ANNOTATIONS = 10;
/** The job summary this reporter writes, extras included: half of GitHub's 1 MiB per step. */
export const SUMMARY_BUDGET_BYTES = 512 * 1024;
/** appendGithubSummary never lets the summary file pass this (GitHub's 1 MiB, less a margin). */
const SUMMARY_FILE_LIMIT_BYTES = 1024 * 1024 - 64 * 1024;
/** The evidence of one expectation in the summary: lines and characters. */
const EVIDENCE_LINES = 24;
const EVIDENCE_CHARS = 2400;
/** One table cell, one log line, one annotation message. */
const CELL_CHARS = 80;
const LINE_CHARS = 600;
const MESSAGE_CHARS = 1000;
/** Secret values shorter than this are masked (::add-mask::) but not replaced in this module's text. */
const MIN_REDACTED_LENGTH = 4;

// ---------------------------------------------------------------------------------------------
// Workflow commands, files, secrets

/** Values masked by maskSecretValues: replaced by *** in everything this module writes. */
const secrets = new Set<string>();
/** What was already said about a missing file, so that it is said once. */
const said = new Set<string>();

function redact(text: string): string {
  let out = text;
  for (const s of secrets) if (s.length >= MIN_REDACTED_LENGTH) out = out.split(s).join('***');
  return out;
}

/**
 * Runs `fn` (synchronous calls of @actions/core) with its workflow commands on stderr instead of
 * stdout. @actions/core writes every command with process.stdout.write and has no other stream;
 * the swap lasts for the synchronous call only, so nothing else can write in between.
 */
function onStream<T>(toStderr: boolean, fn: () => T): T {
  if (!toStderr) return fn();
  const write = process.stdout.write;
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof write;
  try {
    return fn();
  } finally {
    process.stdout.write = write;
  }
}

function sayOnce(key: string, text: string): void {
  if (said.has(key)) return;
  said.add(key);
  process.stderr.write(`warning: ${text}\n`);
}

/** The file a GitHub file command names, or undefined (said once on stderr) when it is not set or not there. */
function commandFile(variable: 'GITHUB_OUTPUT' | 'GITHUB_STEP_SUMMARY', what: string): string | undefined {
  const file = process.env[variable];
  if (!file) {
    sayOnce(variable, `GITHUB_ACTIONS is true but ${variable} is not set: writing no ${what} (the runner sets it in every step; set it to a file to get one)`);
    return undefined;
  }
  if (!existsSync(file)) {
    sayOnce(variable, `${variable} names ${file}, which does not exist: writing no ${what} (the runner makes the file for each step)`);
    return undefined;
  }
  return file;
}

/**
 * Names of environment variables whose values are secrets by their name: a TOKEN, SECRET,
 * PASSWORD, PASSPHRASE, CREDENTIALS or a KEY of a secret kind, as a whole word of the name
 * (GITHUB_TOKEN, DB_PASSWORD, AWS_SECRET_ACCESS_KEY, SSH_PRIVATE_KEY). A name that goes on past
 * the word names something about the secret, not the secret (PASSWORD_FILE, TOKEN_URL).
 */
const SECRET_NAME = /(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|(?:PRIVATE|API|ACCESS|SECRET|SIGNING|CLIENT|ENCRYPTION)_?KEY)$/i;

/**
 * Issues ::add-mask:: for the values of the variables `names` (the matrix's passphraseEnv) and of
 * every variable whose name says it holds a secret (SECRET_NAME), so that the runner prints ***
 * wherever one would appear in the log; they are also replaced in this module's summary,
 * annotations and outputs. Empty values are skipped; a value of several lines is masked whole and
 * line by line (the runner matches a mask within a line). Returns how many distinct values were masked.
 */
export function maskSecretValues(env: NodeJS.ProcessEnv, names: string[], options: { stdoutTaken?: boolean } = {}): number {
  const chosen = new Set([...names, ...Object.keys(env).filter((n) => SECRET_NAME.test(n))]);
  const values = new Set<string>();
  for (const name of chosen) {
    const value = env[name];
    if (value) values.add(value);
  }
  onStream(Boolean(options.stdoutTaken), () => {
    for (const value of values) {
      const lines = value.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && l !== value);
      for (const v of [value, ...lines]) {
        core.setSecret(v);
        secrets.add(v);
      }
    }
  });
  return values.size;
}

/** Sets step outputs (GITHUB_OUTPUT, in its name<<delimiter form); without the file, says so once and sets none. */
export function setGithubOutputs(outputs: Record<string, string>): void {
  if (!commandFile('GITHUB_OUTPUT', 'step outputs')) return;
  for (const [name, value] of Object.entries(outputs)) core.setOutput(name, redact(value));
}

/**
 * Appends Markdown to the job summary (GITHUB_STEP_SUMMARY); without the file, says so once and
 * writes nothing. The file never passes SUMMARY_FILE_LIMIT_BYTES: what would is cut, with a note.
 */
export async function appendGithubSummary(markdown: string): Promise<void> {
  const file = commandFile('GITHUB_STEP_SUMMARY', 'job summary');
  if (!file) return;
  let text = redact(markdown);
  const room = SUMMARY_FILE_LIMIT_BYTES - statSync(file).size;
  if (bytes(text) > room) {
    const note = `\n\n_The rest of this section is left out: the job summary would pass GitHub's limit of 1 MiB per step._\n`;
    text = `${cutBytes(text, Math.max(0, room - bytes(note)))}${note}`;
    if (bytes(text) > room) return sayOnce('summary-full', `the job summary ${file} is full (GitHub takes 1 MiB per step): a section was left out`);
  }
  await core.summary.emptyBuffer().addRaw(text, true).write();
}

// ---------------------------------------------------------------------------------------------
// The reporter

export function githubReporter(options: GithubReporterOptions = {}): Reporter {
  const toStderr = Boolean(options.stdoutTaken);
  return {
    name: 'github',
    async onEnd(summary: RunSummary, context: RunContext) {
      const extras = (await options.extras?.()) ?? {};
      const code = shownExitCode(summary, context);
      onStream(toStderr, () => {
        logGroups(summary);
        annotate(summary, code, extras.annotations ?? [], options.runnerOf);
      });
      const v = summary.counts.verdicts;
      setGithubOutputs({
          total: String(v.passed + v.failed + v.error + v.skipped),
          passed: String(v.passed),
          failed: String(v.failed),
          errors: String(v.error),
          skipped: String(v.skipped),
          cells: String(summary.start.cells.length),
          'exit-code': String(code),
          interrupted: String(summary.interrupted),
          'run-dir': context.runDir,
          'events-file': summary.eventsFile ?? context.eventsFile,
          ...extras.outputs,
      });
      await appendGithubSummary(summaryMarkdown(summary, code, context, extras.sections ?? []));
    },
  };
}

type Status = 'passed' | 'failed' | 'error' | 'interrupted' | 'skipped';
const statusMark: Record<Status, string> = { passed: '✅', failed: '❌', error: '💥', interrupted: '⏹️', skipped: '⏭️' };

/** A target in a word: an error (of the target, a probe or an expectation) first, as the exit status ranks them. */
function targetStatus(t: TargetResult): Status {
  const planned = t.cells.filter((c) => c.planned);
  if (t.error || planned.some((c) => c.status === 'error') || t.verdicts.some((v) => v.status === 'error')) return 'error';
  if (t.verdicts.some((v) => v.status === 'failed')) return 'failed';
  if (planned.some((c) => c.status === 'cancelled' || c.status === 'not-run')) return 'interrupted';
  if (planned.length > 0 && planned.every((c) => c.status === 'skipped')) return 'skipped';
  return 'passed';
}

const verdictMark = { passed: '✓', failed: '✗', error: '✗', skipped: '-' } as const;

/** Per target a group with its verdict lines: what the log shows folded, one target at a time. */
function logGroups(summary: RunSummary): void {
  for (const t of summary.targets) {
    const vc = countVerdicts(t);
    core.startGroup(redact(oneLine(`${t.name}: ${targetStatus(t)} (expectations ${vc.passed} passed, ${vc.failed} failed, ${vc.error} errors, ${vc.skipped} skipped)`, LINE_CHARS)));
    try {
      const lines: string[] = [];
      if (t.error) lines.push(`✗ target error ${t.error.code}: ${t.error.message}`);
      if (t.skipped) lines.push(`- skipped ${t.skipped.code}: ${t.skipped.message}`);
      for (const v of t.verdicts) lines.push(`${verdictMark[v.status]} ${v.title} [${v.source}]: ${v.message}`);
      if (!t.verdicts.length) lines.push('no expectations were judged on this target');
      // One line each, never starting with "::": text from a target must not be read as a command.
      for (const line of lines) core.info(redact(`  ${oneLine(line, LINE_CHARS)}`));
    } finally {
      core.endGroup();
    }
  }
}

interface Problem {
  title: string;
  message: string;
  what: 'failed expectation' | 'expectation error' | 'target error' | 'probe error';
  target: string;
}

/** Everything the run failed at, in the targets' order: target errors, probe errors no verdict covers, failed and errored expectations. */
function problemsOf(summary: RunSummary): Problem[] {
  const out: Problem[] = [];
  for (const t of summary.targets) {
    if (t.error) out.push({ target: t.name, what: 'target error', title: `${t.name}: ${t.error.code}`, message: t.error.message });
    for (const c of probeErrors(t)) {
      out.push({ target: t.name, what: 'probe error', title: `${t.name}: probe ${c.probe} ${c.errorCode ?? 'failed'}`, message: c.reason ?? 'the probe failed' });
    }
    for (const v of t.verdicts) {
      if (v.status !== 'failed' && v.status !== 'error') continue;
      // The message says what was expected and observed; the line after it, what the observation rests on.
      const first = evidenceLines(v, t).find((l) => !/^(observed|event log): /.test(l));
      out.push({
        target: t.name,
        what: v.status === 'failed' ? 'failed expectation' : 'expectation error',
        title: `${t.name}: ${v.title}`,
        message: `${v.message}${first ? `\n${first}` : ''}`,
      });
    }
  }
  return out;
}

/** The targets whose every planned cell was skipped: nothing measured there (no usable driver, or a target that cannot have a GPU). */
export function measuredNothing(summary: RunSummary): TargetResult[] {
  // As RunSummary.nothingMeasured, per target: whatever its verdicts (a fact of a skipped sysinfo is still judged).
  return summary.targets.filter((t) => {
    const planned = t.cells.filter((c) => c.planned);
    return !t.error && planned.length > 0 && planned.every((c) => c.status === 'skipped');
  });
}

/** Why a target measured nothing: its not-applicable error, or its first skipped probe's reason. */
export function skipReason(t: TargetResult): string {
  return t.skipped?.message ?? t.cells.find((c) => c.planned && c.status === 'skipped')?.reason ?? 'every probe was skipped';
}

/**
 * Error annotations, at most MAX_ANNOTATIONS: the command's own first, then the problems as they
 * are, then one for the rest; a warning for an interrupted run. A target that measured nothing is
 * named in one (an error when that is why the run fails, --strict, else a warning).
 */
function annotate(summary: RunSummary, code: number, extras: ExtraAnnotation[], runnerOf: GithubReporterOptions['runnerOf']): void {
  for (const a of extras) (a.level === 'error' ? core.error : core.warning)(redact(cut(a.message, MESSAGE_CHARS)), { title: redact(oneLine(a.title, 200)) });
  const empty = measuredNothing(summary);
  for (const [i, t] of empty.entries()) {
    const level = code === 4 ? core.error : core.warning;
    if (i === MAX_ANNOTATIONS - 1 && empty.length > MAX_ANNOTATIONS) {
      level(redact(`${empty.length - i} more targets measured nothing: ${empty.slice(i).map((x) => x.name).join(', ')}; see the job summary`), { title: `cudamatrix: ${empty.length - i} more targets measured nothing` });
      break;
    }
    const where = runnerOf?.(t.name);
    level(redact(cut(`${where ? `${where}: ` : ''}every probe was skipped, nothing was measured: ${skipReason(t)}`, MESSAGE_CHARS)), { title: redact(oneLine(`${t.name}: measured nothing`, 200)) });
  }
  const budget = Math.max(1, MAX_ANNOTATIONS - extras.filter((a) => a.level === 'error').length);
  const problems = problemsOf(summary);
  const shown = problems.length > budget ? problems.slice(0, budget - 1) : problems;
  for (const p of shown) core.error(redact(cut(p.message, MESSAGE_CHARS)), { title: redact(oneLine(p.title, 200)) });
  const rest = problems.slice(shown.length);
  if (rest.length) {
    const kinds = (['failed expectation', 'expectation error', 'target error', 'probe error'] as const)
      .map((k) => [k, rest.filter((p) => p.what === k).length] as const)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${n} ${k}${n === 1 ? '' : 's'}`);
    const targets = [...new Set(rest.map((p) => p.target))];
    const named = targets.slice(0, 10).join(', ') + (targets.length > 10 ? ` and ${targets.length - 10} more` : '');
    core.error(redact(cut(`${kinds.join(', ')} on ${targets.length === 1 ? 'target' : 'targets'} ${named}: see the job summary (every one with its evidence: junit.xml and summary.json in the run folder)`, MESSAGE_CHARS)), {
      title: `cudamatrix: ${rest.length} more not shown here`,
    });
  }
  if (summary.interrupted) {
    const notRun = summary.counts.cells['not-run'] ?? 0;
    const cancelled = summary.counts.cells.cancelled ?? 0;
    core.warning(`The run was interrupted (${notRun} cell${notRun === 1 ? '' : 's'} not run, ${cancelled} stopped): the results cover what finished.`, { title: 'cudamatrix: run interrupted' });
  }
}

// ---------------------------------------------------------------------------------------------
// The job summary

const exitWords: Record<number, string> = {
  0: 'every expectation met',
  1: 'expectations not met',
  2: 'a configuration error',
  3: 'a target or a probe failed',
  4: 'nothing measured (--strict)',
  5: 'behaviour changed against the committed records (--fail-on-change)',
  6: 'an output could not be written',
  130: 'interrupted',
};

function summaryMarkdown(summary: RunSummary, code: number, context: RunContext, sections: string[]): string {
  const runDir = context.runDir;
  const where = `\`junit.xml\` and \`summary.json\` in the run folder \`${esc(runDir)}\``;
  const start = summary.start as RunSummary['start'] & { mergedFrom?: unknown[] };
  const c = summary.counts.cells;
  const v = summary.counts.verdicts;
  const what = start.mergedFrom ? ` (merged from ${start.mergedFrom.length} log${start.mergedFrom.length === 1 ? '' : 's'})` : start.shard ? ` (shard ${start.shard.index}/${start.shard.total})` : '';
  const head = [
    `## ${statusMark[code === 0 ? 'passed' : code === 1 || code === 5 ? 'failed' : code === 130 ? 'interrupted' : code === 4 ? 'skipped' : 'error']} cudamatrix run \`${esc(start.runId)}\`${what}`,
    '',
    `**Exit status ${code}**: ${exitWords[code] ?? 'see the table'} · ${summary.targets.length} target${summary.targets.length === 1 ? '' : 's'} from \`${esc(start.matrix.file)}\``,
    '',
    `**Cells**: ${start.cells.length} planned: ${c.passed ?? 0} passed, ${c.skipped ?? 0} skipped, ${(c.error ?? 0) + (c.cancelled ?? 0)} errors${c['not-run'] ? `, ${c['not-run']} not run` : ''} · ` +
      `**Expectations**: ${v.passed} passed, ${v.failed} failed, ${v.error} errors, ${v.skipped} skipped`,
  ];
  head.push('', `**Run folder**: \`${esc(runDir)}\`: \`events.jsonl\` (every sample and reading), \`junit.xml\`, \`summary.json\``);
  if (summary.interrupted) head.push('', '> [!WARNING]', '> The run was interrupted: the results cover what finished.');
  if (summary.nothingMeasured) head.push('', code === 4 ? '> [!CAUTION]' : '> [!NOTE]', `> Nothing was measured: every probe was skipped (no usable NVIDIA driver, or targets that cannot run probes)${code === 4 ? ', and --strict fails such a run' : ''}.`);
  else {
    const empty = measuredNothing(summary);
    if (empty.length) head.push('', '> [!WARNING]', `> Nothing was measured on ${empty.length === 1 ? 'target' : 'targets'} ${esc(empty.map((t) => t.name).join(', '))}: every probe there was skipped (see the table).`);
  }
  head.push('', ...table(summary.targets, Math.floor(SUMMARY_BUDGET_BYTES / 2), where), '');

  let extras = sections.map((s) => s.trim()).filter(Boolean).join('\n\n');
  const maxExtras = Math.floor(SUMMARY_BUDGET_BYTES / 4);
  if (bytes(extras) > maxExtras) extras = `${cutBytes(extras, maxExtras - 200)}\n\n_(cut here: this section passed its share of the job summary)_`;
  const headText = head.join('\n');
  const detailBudget = SUMMARY_BUDGET_BYTES - bytes(headText) - bytes(extras) - 2048;
  const detail = details(summary.targets, detailBudget, where);
  return [headText, detail, extras].filter(Boolean).join('\n\n').concat('\n');
}

/** The table: a row per target; over `budget` (hundreds of targets), the rest is counted instead. */
function table(targets: TargetResult[], budget: number, where: string): string[] {
  const rows = ['| target | environment | GPU | driver | OS | cells<br>pass/skip/err | expectations<br>pass/fail/err/skip | status |', '|---|---|---|---|---|---|---|---|'];
  let size = bytes(rows.join('\n'));
  for (const [i, t] of targets.entries()) {
    const s = t.sysinfo;
    const planned = t.cells.filter((x) => x.planned);
    const count = (...st: string[]) => planned.filter((x) => st.includes(x.status)).length;
    const vc = countVerdicts(t);
    const env = t.detectedEnvironment ?? 'unknown';
    const notRun = count('not-run');
    const status = targetStatus(t);
    const row = [
      t.name,
      t.declaredEnvironment === 'auto' ? env : t.declaredEnvironment === env ? env : `${t.declaredEnvironment} (detected ${env})`,
      str(s.gpu_name) ?? '—',
      str(s.driver_version) ?? (s.driver_found === false ? 'none found' : '—'),
      [str(s.os_name) ?? str(s.os_family), str(s.arch)].filter(Boolean).join(', ') || '—',
      `${count('passed')}/${count('skipped')}/${count('error', 'cancelled')}${notRun ? ` (${notRun} not run)` : ''}`,
      `${vc.passed}/${vc.failed}/${vc.error}/${vc.skipped}`,
      `${statusMark[status]} ${status}${t.error ? ` (${t.error.code})` : t.skipped ? ` (${t.skipped.code})` : ''}`,
    ].map((x) => cellText(x));
    const line = `| ${row.join(' | ')} |`;
    if (size + bytes(line) > budget) {
      rows.push('', `_${targets.length - i} more targets are not in this table (it would pass its share of the job summary): see ${where}._`);
      break;
    }
    rows.push(line);
    size += bytes(line) + 1;
  }
  return rows;
}

/**
 * The targets with failed or errored expectations (or a target error), each with every such
 * expectation in a <details>: expected and observed, its why, its evidence. The budget is shared
 * out: each target may take an equal part of what is left, so that one target's long evidence
 * cannot push the others out; what a target's part cannot hold is counted.
 */
function details(targets: TargetResult[], budget: number, where: string): string {
  const bad = targets.filter((t) => t.error || probeErrors(t).length || t.verdicts.some((v) => v.status === 'failed' || v.status === 'error'));
  if (!bad.length) return '';
  const heading = '### Expectations not met, and errors';
  let left = budget - bytes(heading);
  let omitted = 0;
  const blocks: string[] = [heading];
  for (const [i, t] of bad.entries()) {
    const share = Math.floor(left / (bad.length - i));
    const verdicts = t.verdicts.filter((v) => v.status === 'failed' || v.status === 'error');
    const vc = countVerdicts(t);
    const what = [t.error && `target error ${t.error.code}`, vc.failed && `${vc.failed} failed`, vc.error && `${vc.error} not judged (error)`].filter(Boolean);
    const lines = [`#### ${statusMark[targetStatus(t)]} ${esc(t.name)}: ${esc(what.join(', ') || 'probe errors')}`];
    if (t.error) lines.push('', `**Target error** \`${esc(t.error.code)}\`: ${esc(oneLine(t.error.message, LINE_CHARS))}`);
    for (const c of probeErrors(t)) lines.push('', `**Probe ${esc(c.probe)} failed** \`${esc(c.errorCode ?? 'PROBE_CRASHED')}\`: ${esc(oneLine(c.reason ?? '', LINE_CHARS))}`);
    let size = bytes(lines.join('\n'));
    let dropped = 0;
    for (const v of verdicts) {
      const item = detailItem(v, t);
      // Room is kept for the line that counts what is left out.
      if (dropped || size + bytes(item) + 300 > share) {
        dropped++;
        continue;
      }
      lines.push('', item);
      size += bytes(item) + 1;
    }
    if (dropped) lines.push('', `_${dropped} more of ${esc(t.name)}'s expectations not met are not shown here._`);
    omitted += dropped;
    const block = lines.join('\n');
    left -= bytes(block) + 2;
    blocks.push(block);
  }
  if (omitted) blocks.push(`**${omitted} failed or errored expectation${omitted === 1 ? ' is' : 's are'} not shown** (the summary is kept under ${SUMMARY_BUDGET_BYTES / 1024} KiB; GitHub takes 1 MiB per step): every one, with its evidence, is in ${where}.`);
  return blocks.join('\n\n');
}

function detailItem(v: Verdict, t: TargetResult): string {
  const lines = evidenceLines(v, t);
  let shown = lines.slice(0, EVIDENCE_LINES).map((l) => cut(l, 300));
  let text = shown.join('\n');
  if (text.length > EVIDENCE_CHARS) {
    text = cut(text, EVIDENCE_CHARS);
    shown = text.split('\n');
  }
  const more = lines.length - shown.length;
  const evidence = `${esc(text)}${more > 0 ? `\n… ${more} more line${more === 1 ? '' : 's'}: the whole evidence is in junit.xml and summary.json in the run folder` : ''}`;
  return [
    `<details><summary>${verdictMark[v.status]} <code>${esc(cut(v.title, 300))}</code> [${esc(v.source)}]: ${v.status}</summary>`,
    '',
    `**Expected** <code>${esc(cut(v.title, 300))}</code> · ${observedText(v)}`,
    ...(v.why ? ['', `**Why**: ${esc(cut(oneLine(v.why, LINE_CHARS), LINE_CHARS))}`] : []),
    ...(evidence ? ['', `<pre>${evidence}</pre>`] : []),
    '</details>',
  ].join('\n');
}

/** What was observed: a fact's value; a metric's failing samples, as the verdict's message words them; or why nothing was judged. */
function observedText(v: Verdict): string {
  if (v.status === 'error') return `**not judged**: ${esc(oneLine(v.message, LINE_CHARS))}`;
  if (v.evidence?.kind === 'fact') return `**observed** <code>${esc(cut(v.actual, 400))}</code>`;
  const lead = `expected ${v.title}, observed `;
  return `**observed** ${esc(oneLine(v.message.startsWith(lead) ? v.message.slice(lead.length) : v.message, LINE_CHARS))}`;
}

/**
 * The evidence behind a verdict as lines: for a metric every matching sample, those outside the
 * bounds first (marked FAIL); for a fact the value, its source and the probe's evidence; for a
 * probe that failed, the end of its stderr; then the event log.
 */
function evidenceLines(v: Verdict, t: TargetResult): string[] {
  const lines: string[] = [];
  const e = v.evidence;
  if (e?.kind === 'metric') {
    const row = (mark: string, s: (typeof e.outside)[number]) => `${mark.padEnd(4)}  ${sampleValueText(s)}${Object.keys(s.attrs).length ? `  ${attrsText(s.attrs)}` : ''}`;
    for (const s of e.outside) lines.push(row('FAIL', s));
    for (const s of e.within) lines.push(row('ok', s));
  } else if (e?.kind === 'fact') {
    if (e.summary) lines.push(`evidence: ${e.summary}`);
    const deciding = e.evidence?.source;
    if (typeof deciding === 'string') lines.push(`deciding source: ${readingLabels[deciding] ? `${readingLabels[deciding]} (${deciding})` : deciding}`);
    if (e.source) lines.push(`source: ${e.source}`);
    lines.push(`observed: ${JSON.stringify(e.value)}${e.reason ? ` (${e.reason})` : ''}`);
  } else if (v.status === 'error') {
    const cell = t.cells.find((c) => c.planned && c.probe === probeOf(v));
    const tail = cell?.stderrTail?.trim();
    if (tail) lines.push('probe stderr (the end):', ...tail.split('\n').slice(-8).map((l) => `  ${l}`));
  }
  if (v.eventsFile) lines.push(`event log: ${v.eventsFile}`);
  return lines;
}

// ---------------------------------------------------------------------------------------------

/** The probes that failed where no target error or errored expectation says so already. */
function probeErrors(t: TargetResult): TargetResult['cells'] {
  if (t.error) return [];
  const judged = new Set(t.verdicts.filter((v) => v.status === 'error').map((v) => probeOf(v)));
  return t.cells.filter((c) => c.planned && c.status === 'error' && !judged.has(c.probe));
}

function countVerdicts(t: TargetResult): Record<Verdict['status'], number> {
  const n = { passed: 0, failed: 0, error: 0, skipped: 0 };
  for (const v of t.verdicts) n[v.status]++;
  return n;
}

function probeOf(v: Verdict): string {
  const name = (v.expectation.fact ?? v.expectation.metric)!;
  return name.slice(0, name.indexOf('.'));
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v ? v : undefined;
}

function bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** At most `max` UTF-8 bytes of `text`, cut at a character. */
function cutBytes(text: string, max: number): string {
  if (bytes(text) <= max) return text;
  const buf = Buffer.from(text, 'utf8').subarray(0, Math.max(0, max));
  // A cut inside a character leaves U+FFFD at the end: drop it.
  return buf.toString('utf8').replace(/\uFFFD$/, '');
}

/** At most `max` characters, with … where cut. */
function cut(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

function oneLine(text: string, max: number): string {
  return cut(text.replace(/\s*\r?\n\s*/g, ' ⏎ '), max);
}

/** Text for HTML (the summary's <details>, <pre> and <code>, and Markdown around them). */
function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A table cell: one line, bounded, HTML escaped, no column separator. */
function cellText(text: string): string {
  return esc(oneLine(text, CELL_CHARS)).replace(/\|/g, '&#124;');
}
