/**
 * cudamatrix gha matrix | gha merge: the two ends of a fanned-out run on GitHub Actions. GitHub
 * Actions is the scheduler (one job per labelled target, a few for the rest); cudamatrix says which
 * jobs there are (gha matrix, for `fromJSON`) and puts their event logs back together (gha merge:
 * merge, account for lost jobs, JUnit, the summary, the behaviour records and the report).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { CudamatrixError, ExitCode } from '../core/errors.ts';
import { formatValue } from '../core/units.ts';
import type { RunEvent } from '../events/events.ts';
import type { Matrix } from '../matrix/load.ts';
import { accountForLostJobs, type JobEnds, type LostTarget, type OwedTarget } from '../events/lost-jobs.ts';
import { mergeEventLogs, readLogs, writeMergedRun, type LogInput, type MergedRun, type MergedRunStart } from '../events/merge.ts';
import { diffRecords, type RecordsDiff } from '../behaviour/diff.ts';
import { readInput } from '../behaviour/read.ts';
import { loadRecords } from '../report/load.ts';
import { Reporters } from '../reporters/reporter.ts';
import { secretValues } from '../matrix/secrets.ts';
import { githubReporter, type ExtraAnnotation, type GithubExtras } from '../reporters/github.ts';
import { GithubStep, isGithubActions } from '../reporters/github-step.ts';
import { measuredNothing, skipReason } from '../reporters/github-targets.ts';
import { createReporters } from '../reporters/index.ts';
import { jsonReporter } from '../reporters/json.ts';
import { junitReporter } from '../reporters/junit.ts';
import { exitCodeOf, shownExitCode, summarize, type RunSummary } from '../verdicts/verdicts.ts';
import { EVENTS_SCHEMA_VERSION } from '../events/events.ts';
import { TOOL_VERSION } from '../core/version.ts';
import { ghaMatrix, type GhaEntry, type GhaMatrix } from '../run/gha-matrix.ts';
import { planCells } from '../run/plan.ts';
import { loadMatrixArg } from './matrix-arg.ts';
import { recordInputs } from './record.ts';
import { reportCommand } from './report.ts';
import { checkOutputs, chooseReporters, secretEnvNames } from './run.ts';

export interface GhaMatrixOptions {
  matrix?: string;
  target?: string[];
  probe?: string[];
  shards: number;
  runsOn?: string;
}

const labels = (text: string) =>
  text
    .split(',')
    .map((label) => label.trim())
    .filter(Boolean);

export async function ghaMatrixCommand(opts: GhaMatrixOptions): Promise<number> {
  // The plan and merge jobs need not have the targets' SSH keys: only the jobs that connect check them.
  const matrix = await loadMatrixArg(opts.matrix, { checkFiles: false });
  // stdout is the plan's JSON alone: the masks go to stderr (the runner reads commands there too).
  const github = isGithubActions() ? new GithubStep({ stdoutTaken: true }) : undefined;
  github?.mask(secretValues(process.env, secretEnvNames(matrix)));
  if (opts.runsOn !== undefined && labels(opts.runsOn).length === 0)
    throw new CudamatrixError('USAGE', '--runs-on needs at least one label (e.g. --runs-on self-hosted,linux,cudamatrix-shared)');
  const jobs = ghaMatrix(matrix, {
    targets: opts.target,
    probes: opts.probe,
    shards: opts.shards,
    runsOn: opts.runsOn ? labels(opts.runsOn) : undefined,
  });
  const json = JSON.stringify(jobs);
  // stdout is the JSON alone (for fromJSON and pipes); what it means goes to stderr.
  process.stdout.write(`${json}\n`);
  process.stderr.write(
    `${jobs.include.length} job${jobs.include.length === 1 ? '' : 's'} for ${matrix.file}:\n${jobs.include.map((e) => `  ${e.name}: ${e.targets} on [${e.runsOn.join(', ')}]`).join('\n')}\n`,
  );
  if (github) {
    github.setOutputs({ matrix: json, count: String(jobs.include.length) });
    await github.appendSummary(planSummary(matrix, jobs));
  }
  return ExitCode.ok;
}

function planSummary(matrix: Matrix, jobs: GhaMatrix): string {
  const rows = jobs.include.map((e) => `| ${e.name} | ${e.targets.split(',').join(', ')} | ${e.runsOn.join(', ')} |`);
  return [
    `## cudamatrix plan: ${jobs.include.length} job${jobs.include.length === 1 ? '' : 's'}`,
    '',
    `Matrix: \`${matrix.file}\``,
    '',
    '| job | targets | runs on |',
    '| --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
}

export interface GhaMergeOptions {
  plan: string;
  matrix?: string;
  probe?: string[];
  resultsDir: string;
  junit?: string;
  recordsDir: string;
  reportDir: string;
  record: boolean;
  quiet: boolean;
  /** Exit 4 when nothing was measured, as run --strict (also when every log ran with it). */
  strict: boolean;
  /** Exit 5 when behaviour changed against the committed records, each change an error annotation. */
  failOnChange: boolean;
  verbose?: boolean;
}

/** The file's stat, or nothing when there is none (JSON text is often too long to be a file name at all). */
function statOrNothing(arg: string) {
  try {
    return statSync(arg, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** --plan: the JSON gha matrix printed, given as text or as a file holding it. */
export function readPlan(arg: string): GhaEntry[] {
  const hint = 'pass the JSON that cudamatrix gha matrix printed (the plan job\'s "matrix" output), as text or as a file';
  if (arg.trim() === '') throw new CudamatrixError('USAGE', `--plan is empty (did the plan job's matrix output reach this step?); ${hint}`);
  const st = statOrNothing(arg);
  const shown = arg.length > 80 ? `${arg.slice(0, 77)}...` : arg;
  if (st?.isDirectory()) throw new CudamatrixError('USAGE', `--plan ${shown} is a folder; ${hint}`);
  const isFile = Boolean(st?.isFile());
  // Neither a file nor anything like JSON: most likely a file name mistyped.
  if (!isFile && !/^\s*[[{]/.test(arg)) throw new CudamatrixError('USAGE', `--plan ${shown}: no such file, and not JSON; ${hint}`);
  const text = isFile ? readFileSync(arg, 'utf8') : arg;
  const where = isFile ? `--plan ${shown}` : '--plan';
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new CudamatrixError('USAGE', `${where} is not JSON (${(e as Error).message}); pass what cudamatrix gha matrix printed`);
  }
  const include = (data as { include?: unknown })?.include;
  const ok =
    Array.isArray(include) && include.every((e) => typeof e?.name === 'string' && typeof e?.targets === 'string' && e.targets.length > 0);
  if (!ok)
    throw new CudamatrixError(
      'USAGE',
      `${where} is not a gha matrix plan ({"include":[{"name","targets","runsOn"}...]}); pass what cudamatrix gha matrix printed`,
    );
  return include as GhaEntry[];
}

/** The events.jsonl files under the given folders (artifacts downloaded one folder each), and the files given. */
export function findEventLogs(args: string[]): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    for (const name of readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      const st = statSync(full);
      if (st.isDirectory() && depth < 6) walk(full, depth + 1);
      else if (st.isFile() && name === 'events.jsonl') found.push(full);
    }
  };
  for (const arg of args) {
    const st = statSync(arg, { throwIfNoEntry: false });
    if (!st)
      throw new CudamatrixError(
        'USAGE',
        `${arg} does not exist; pass the folder the event-log artifacts were downloaded to (or events.jsonl files)`,
      );
    if (st.isDirectory()) walk(arg, 0);
    else found.push(arg);
  }
  return found;
}

/** What each job of the plan owed: its targets, as run would start them, with their planned cells. */
function owedBy(plan: GhaEntry[], matrix: Matrix, probes: string[] | undefined): OwedTarget[] {
  const byName = new Map(matrix.targets.map((target) => [target.name, target]));
  return plan.flatMap((entry) =>
    entry.targets.split(',').map((name) => {
      const target = byName.get(name);
      if (!target)
        throw new CudamatrixError(
          'USAGE',
          `--plan: job "${entry.name}" owes target "${name}", which ${matrix.file} does not define; pass the matrix the plan was made from (--matrix)`,
        );
      const cells = planCells(matrix, { targets: [name], probes }).cells;
      return {
        job: entry.name,
        cells: cells.map((plannedCell) => plannedCell.name),
        start: {
          target: name,
          environment: target.environment,
          transport: target.hops.map((hop) => hop.kind),
          probes: cells.map((plannedCell) => plannedCell.probe),
          expect: target.expect,
        },
      };
    }),
  );
}

/** A log of targets the plan does not list is of another run (or another plan): refused, naming it. */
function checkLogsInPlan(logs: LogInput[], owed: OwedTarget[]): void {
  const planned = new Set(owed.map((owedTarget) => owedTarget.start.target));
  for (const log of logs) {
    const strangers = [...new Set(log.events.flatMap((e) => ('target' in e && !planned.has(e.target) ? [e.target] : [])))];
    if (strangers.length) {
      throw new CudamatrixError(
        'USAGE',
        `${log.file} holds target${strangers.length === 1 ? '' : 's'} ${strangers.join(', ')}, which the plan does not list (it lists ${[...planned].join(', ')}): the log is of another run or another matrix; pass the plan and the matrix (--matrix) of the run the logs come from`,
      );
    }
  }
}

/** With no log at all (every job lost), the merged run starts from the matrix. */
function emptyRun(matrix: Matrix, now: string): MergedRun {
  const start: MergedRunStart = {
    type: 'run-start',
    schemaVersion: EVENTS_SCHEMA_VERSION,
    tool: 'cudamatrix',
    version: TOOL_VERSION,
    runId: `${now.replace(/[:.]/g, '-')}-merged-nolog`,
    started: now,
    shard: null,
    matrix: {
      file: matrix.file,
      ...(matrix.description !== undefined ? { description: matrix.description } : {}),
      expectations: matrix.expectations,
    },
    cells: [],
    options: { strict: false },
    mergedFrom: [],
  };
  return { start, events: [start], warnings: [] };
}

/** How each log ended, by its targets: without a run-end (killed mid-run), or interrupted (the job timed out or was cancelled). */
function jobEnds(logs: { events: RunEvent[] }[]): JobEnds {
  const cutShort = new Set<string>();
  const interrupted = new Set<string>();
  for (const log of logs) {
    const end = log.events.find((e) => e.type === 'run-end');
    const into = !end ? cutShort : end.interrupted ? interrupted : undefined;
    if (into) for (const e of log.events) if ('target' in e) into.add(e.target);
  }
  return { cutShort, interrupted };
}

export async function ghaMergeCommand(args: string[], opts: GhaMergeOptions): Promise<number> {
  if (opts.failOnChange && !opts.record)
    throw new CudamatrixError(
      'USAGE',
      "--fail-on-change compares the run's records with the committed ones, and --no-record makes none: drop one of the two",
    );
  const plan = readPlan(opts.plan);
  // The plan and merge jobs need not have the targets' SSH keys: only the jobs that connect check them.
  const matrix = await loadMatrixArg(opts.matrix, { checkFiles: false });
  // Before anything prints: the secrets the matrix names, and those the environment's names give away.
  const github = isGithubActions() ? new GithubStep() : undefined;
  github?.mask(secretValues(process.env, secretEnvNames(matrix)));
  const owed = owedBy(plan, matrix, opts.probe);
  const files = findEventLogs(args);
  const logs = readLogs(files);
  checkLogsInPlan(logs, owed);
  const choices = chooseReporters({ junit: opts.junit, json: false });
  checkOutputs(choices, opts.resultsDir);

  const now = new Date().toISOString();
  const merged = logs.length ? mergeEventLogs(logs) : emptyRun(matrix, now);
  const { events, lost } = accountForLostJobs(merged.events, owed, jobEnds(logs), now);
  // The accounted run-start (every owed cell in it), still saying where the run came from; strict when asked or when every log was.
  const accounted = events[0] as MergedRunStart;
  const strict = opts.strict || accounted.options.strict;
  const start: MergedRunStart = { ...accounted, options: { ...accounted.options, strict }, mergedFrom: merged.start.mergedFrom };
  const run: MergedRun = { ...merged, start, events: [start, ...events.slice(1)] };
  const { runDir, eventsFile } = writeMergedRun(run, opts.resultsDir);

  // The records are made before the reporters end (the job summary and the outputs say what
  // changed), and what was recorded is said after the run's own summary.
  const recordLines: string[] = [];
  const recorded = opts.record
    ? recordRun(eventsFile, lost, (await loadMatrixArg(undefined)).expectations, opts, (line) => recordLines.push(line))
    : undefined;
  const summary = summarize(run.events);
  const status = mergeStatus(summary, strict, recorded, opts.failOnChange);
  const jobOf = new Map(owed.map((owedTarget) => [owedTarget.start.target, plan.find((e) => e.name === owedTarget.job)!]));
  const runnerOf = (target: string) => {
    const entry = jobOf.get(target);
    return entry && `job ${entry.name} on [${entry.runsOn.join(', ')}]`;
  };
  const extras = ghaExtras(lost, recorded, runDir);
  extras.sections = [...measuredNothingSection(summary, runnerOf, strict), ...(extras.sections ?? [])];
  if (opts.failOnChange) extras.annotations = changeAnnotations(recorded);

  const reporters = new Reporters([
    ...createReporters(choices, { quiet: opts.quiet, verbose: opts.verbose }),
    junitReporter((dir) => path.join(dir, 'junit.xml')),
    jsonReporter((dir) => path.join(dir, 'summary.json')),
    ...(github ? [githubReporter({ step: github, extras: () => extras, runnerOf })] : []),
  ]);
  // mergeEventLogs' warning about a log without a run-end is answered here: its target is accounted for below.
  for (const warning of merged.warnings.filter((text) => !/has no run-end/.test(text))) reporters.message(`warning: ${warning}`);
  reporters.message(
    `merged ${logs.length} event log${logs.length === 1 ? '' : 's'} of ${plan.length} job${plan.length === 1 ? '' : 's'} into ${eventsFile}`,
  );
  for (const lostTarget of lost)
    reporters.message(
      `LOST: target ${lostTarget.target} (job ${lostTarget.job}): ${HOW[lostTarget.how]}; ${lostTarget.cells.length} cell${lostTarget.cells.length === 1 ? '' : 's'} ended as JOB_LOST`,
    );
  for (const e of run.events) reporters.event(e);
  const unwritten = await reporters.end(summary, { runDir, eventsFile, strict, exitCode: status });
  if (recordLines.length) process.stdout.write(`${recordLines.join('\n')}\n`);
  // The report shows the records folder as it now is.
  if (recorded?.written.length) reportCommand({ recordsDir: opts.recordsDir, out: opts.reportDir, check: false });
  return shownExitCode(summary, { strict, exitCode: status, unwritten });
}

/**
 * The merged run's exit status, and what only gha merge adds to it where the run otherwise
 * passed: a record that could not be written (a clash: a file of this run with other facts) is 2,
 * and with --fail-on-change changed behaviour is 5.
 */
function mergeStatus(summary: RunSummary, strict: boolean, recorded: Recorded | undefined, failOnChange: boolean): number {
  const status = exitCodeOf(summary, { strict });
  if (status !== ExitCode.ok || !recorded) return status;
  if (recorded.status === ExitCode.configuration) return recorded.status;
  if (failOnChange && recorded.diff?.changed) return ExitCode.behaviourChanged;
  return status;
}

/** The targets that measured nothing, each with its job and runner labels: a runner that cannot see its GPU shows here. */
function measuredNothingSection(summary: RunSummary, runnerOf: (target: string) => string | undefined, strict: boolean): string[] {
  const empty = measuredNothing(summary);
  if (!empty.length) return [];
  const all = summary.nothingMeasured;
  return [
    [
      `### Measured nothing: ${empty.length} target${empty.length === 1 ? '' : 's'}`,
      '',
      `Every probe of ${empty.length === 1 ? 'this target' : 'these targets'} was skipped: the runner found no usable NVIDIA driver (a Windows runner service in session 0 may not see the GPU), or the target cannot have one. ` +
        (all
          ? strict
            ? 'Nothing was measured anywhere, so the run fails (strict: exit 4).'
            : 'Nothing was measured anywhere; with strict this run would fail (exit 4).'
          : 'Other targets were measured.'),
      '',
      '| target | ran in | why |',
      '| --- | --- | --- |',
      ...empty.map((target) => `| ${cell(target.name)} | ${cell(runnerOf(target.name) ?? '—')} | ${cell(skipReason(target))} |`),
      '',
    ].join('\n'),
  ];
}

const cell = (text: string) =>
  text
    .replace(/\s*\r?\n\s*/g, ' ')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\|/g, '&#124;');

/** --fail-on-change: an error annotation per record whose behaviour changed, saying what changed. */
function changeAnnotations(recorded: Recorded | undefined): ExtraAnnotation[] {
  const changed = recorded?.diff?.pairs.filter((pair) => pair.changed) ?? [];
  return changed.map((pair) => ({
    level: 'error',
    title: `cudamatrix: behaviour changed: ${pair.key}`,
    message: [
      `driver ${pair.a.driver} (${pair.a.date.slice(0, 10)}) -> ${pair.b.driver} (${pair.b.date.slice(0, 10)}), against the committed record (fail-on-change):`,
      ...changeLines(pair),
    ].join('\n'),
  }));
}

type ChangedPair = RecordsDiff['pairs'][number];

/** What changed in a pair, a line each: facts, probes' outcomes, metrics beyond their noise. */
function changeLines(pair: ChangedPair): string[] {
  return [
    ...pair.facts.map((fact) => `fact \`${fact.name}\`: ${valueText(fact.a)} -> ${valueText(fact.b)}`),
    ...pair.cells.map((changedCell) => `probe ${changedCell.probe}: ${changedCell.a} -> ${changedCell.b}`),
    ...pair.metrics
      .filter((metric) => metric.flagged)
      .map(
        (metric) =>
          `metric \`${metric.name}\` ${JSON.stringify(metric.attrs)}: ${formatValue(metric.a, metric.unit)} -> ${formatValue(metric.b, metric.unit)} (${metric.move === null ? 'not comparable' : `${(metric.move * 100).toFixed(1)} %`}, noise ${(metric.noise * 100).toFixed(0)} %)`,
      ),
  ];
}

interface Recorded {
  written: string[];
  diff: RecordsDiff | null;
  status: number;
}

/** Records of the merged run (less its lost targets) into --records-dir, compared with those already there first. */
function recordRun(
  eventsFile: string,
  lost: LostTarget[],
  defaults: Matrix['expectations'],
  opts: GhaMergeOptions,
  say: (line: string) => void,
): Recorded {
  const lostNames = new Set(lost.map((lostTarget) => lostTarget.target));
  const committed = statSync(opts.recordsDir, { throwIfNoEntry: false })?.isDirectory()
    ? loadRecords(opts.recordsDir).map((loaded) => loaded.record)
    : [];
  const input = readInput(eventsFile, defaults, { complete: true });
  const kept = { ...input, records: input.records.filter(({ record }) => !lostNames.has(record.observed.target)) };
  say(`\nBehaviour records (${opts.recordsDir}):`);
  const { status, records, written } = recordInputs([kept], opts.recordsDir, say);
  // The committed records are the baseline and, all of them, the key's history (its noise).
  const diff = records.length ? diffRecords(committed, records, { history: committed }) : null;
  return { written, diff, status };
}

/** What is known of a lost target's job, in a few words. */
const HOW: Record<LostTarget['how'], string> = {
  'no-log': 'no event log (artifact missing)',
  'cut-short': 'its event log stops without an end',
  interrupted: 'stopped before it finished (timed out or cancelled)',
};

const valueText = (value: unknown) => (value === null ? 'null' : typeof value === 'string' ? value : JSON.stringify(value));

/** What gha merge adds to the GitHub reporter's outputs and job summary: the lost jobs, and the behaviour against the committed records. */
function ghaExtras(lost: LostTarget[], recorded: Recorded | undefined, runDir: string): GithubExtras {
  const diff = recorded?.diff ?? null;
  const fresh = diff ? diff.onlyB.filter((unpaired) => unpaired.comparedInstead === undefined) : [];
  const outputs: Record<string, string> = {
    'run-dir': runDir,
    lost: lost.map((lostTarget) => lostTarget.target).join(','),
    'behaviour-changed': String(Boolean(diff?.changed)),
    'new-observations': String(fresh.length),
    'records-written': String(recorded?.written.length ?? 0),
    records: (recorded?.written ?? []).join('\n'),
  };
  const sections: string[] = [];
  if (lost.length) {
    sections.push(
      [
        `### Lost: ${lost.length} target${lost.length === 1 ? '' : 's'}`,
        '',
        '| target | job | what is known | cells ended as JOB_LOST |',
        '| --- | --- | --- | --- |',
        ...lost.map((lostTarget) => `| ${lostTarget.target} | ${lostTarget.job} | ${HOW[lostTarget.how]} | ${lostTarget.cells.length} |`),
        '',
      ].join('\n'),
    );
  }
  if (recorded)
    sections.push(
      behaviourSection(
        recorded,
        fresh.map((unpaired) => unpaired.key),
      ),
    );
  return { outputs, sections };
}

function behaviourSection(recorded: Recorded, freshKeys: string[]): string {
  const lines = ['### Behaviour against the committed records', ''];
  const diff = recorded.diff;
  if (!diff)
    lines.push('Nothing recorded: no target of this run observed a GPU (a record needs a driver, a GPU and a measured fact or metric).');
  else {
    lines.push(
      diff.changed
        ? '**Behaviour changed.**'
        : 'No behaviour changed: every fact and cell outcome is the same, and no metric moved beyond its noise.',
      '',
    );
    for (const pair of diff.pairs.filter((candidate) => candidate.changed)) {
      lines.push(
        `- **${pair.key}**: driver ${pair.a.driver} (${pair.a.date.slice(0, 10)}) -> ${pair.b.driver} (${pair.b.date.slice(0, 10)})`,
      );
      for (const line of changeLines(pair)) lines.push(`  - ${line}`);
    }
    for (const k of freshKeys) lines.push(`- new observation: ${k}`);
  }
  if (recorded.written.length)
    lines.push('', `Written (${recorded.written.length}):`, '', ...recorded.written.map((file) => `- \`${file}\``));
  lines.push('');
  return lines.join('\n');
}
