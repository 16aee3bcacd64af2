/**
 * The GitHub reporter, on under GITHUB_ACTIONS=true (cli/run.ts, cli/merge.ts, cudamatrix gha
 * merge): the run in GitHub's own terms, through its command's GithubStep (github-step.ts).
 * At the end of a run or merge:
 * - log groups: per target a collapsible group with its verdict lines;
 * - annotations: one per failed or errored expectation, per target error and per probe error no
 *   expectation covers, at most MAX_ANNOTATIONS - 1, then one that sums the rest up (GitHub shows
 *   only ten of a kind per step); an interrupted run is a warning;
 * - step outputs (GITHUB_OUTPUT): the counts, the exit status, the run folder and its event log;
 * - the job summary (GITHUB_STEP_SUMMARY, github-summary.ts).
 */
import type { Reporter, RunContext } from './reporter.ts';
import { judgedNothingWords, shownExitCode, type RunSummary } from '../verdicts/verdicts.ts';
import { GithubStep } from './github-step.ts';
import { summaryMarkdown } from './github-summary.ts';
import { countVerdicts, evidenceLines, measuredNothing, probeErrors, skipReason, targetStatus, verdictMark } from './github-targets.ts';
import { cut, LINE_CHARS, oneLine } from './github-text.ts';

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
  /** The command's step: where its workflow commands go and what it masked (default: a step of its own, commands on stdout). */
  step?: GithubStep;
  /** Asked for at the end of the run (after the other reporters have written their files). */
  extras?: () => GithubExtras | Promise<GithubExtras>;
  /** Where a target ran, for its annotations (gha merge: "job win-wddm on [self-hosted, windows]"). */
  runnerOf?: (target: string) => string | undefined;
}

/** GitHub shows ten error annotations of a step (and ten warnings); the last one here sums up the rest. */
export const MAX_ANNOTATIONS = 10;
/** One annotation message. */
const MESSAGE_CHARS = 1000;

export function githubReporter(options: GithubReporterOptions = {}): Reporter {
  const step = options.step ?? new GithubStep();
  return {
    name: 'github',
    async onEnd(summary: RunSummary, context: RunContext) {
      const extras = (await options.extras?.()) ?? {};
      const code = shownExitCode(summary, context);
      step.commands(() => {
        logGroups(step, summary);
        annotate(step, summary, code, extras.annotations ?? [], options.runnerOf);
      });
      const verdictCounts = summary.counts.verdicts;
      step.setOutputs({
        total: String(verdictCounts.passed + verdictCounts.failed + verdictCounts.error + verdictCounts.skipped),
        passed: String(verdictCounts.passed),
        failed: String(verdictCounts.failed),
        errors: String(verdictCounts.error),
        skipped: String(verdictCounts.skipped),
        cells: String(summary.start.cells.length),
        'exit-code': String(code),
        interrupted: String(summary.interrupted),
        'run-dir': context.runDir,
        'events-file': summary.eventsFile ?? context.eventsFile,
        ...extras.outputs,
      });
      await step.appendSummary(summaryMarkdown(summary, code, context, extras.sections ?? []));
    },
  };
}

/** Per target a group with its verdict lines: what the log shows folded, one target at a time. */
function logGroups(step: GithubStep, summary: RunSummary): void {
  for (const target of summary.targets) {
    const vc = countVerdicts(target);
    const lines: string[] = [];
    if (target.error) lines.push(`✗ target error ${target.error.code}: ${target.error.message}`);
    if (target.skipped) lines.push(`- skipped ${target.skipped.code}: ${target.skipped.message}`);
    for (const verdict of target.verdicts)
      lines.push(`${verdictMark[verdict.status]} ${verdict.title} [${verdict.source}]: ${verdict.message}`);
    if (!target.verdicts.length) lines.push('no expectations were judged on this target');
    step.group(
      step.redact(
        oneLine(
          `${target.name}: ${targetStatus(target)} (expectations ${vc.passed} passed, ${vc.failed} failed, ${vc.error} errors, ${vc.skipped} skipped)`,
          LINE_CHARS,
        ),
      ),
      // One line each, never starting with "::": text from a target must not be read as a command.
      lines.map((line) => step.redact(`  ${oneLine(line, LINE_CHARS)}`)),
    );
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
  for (const target of summary.targets) {
    if (target.error)
      out.push({ target: target.name, what: 'target error', title: `${target.name}: ${target.error.code}`, message: target.error.message });
    for (const cell of probeErrors(target)) {
      out.push({
        target: target.name,
        what: 'probe error',
        title: `${target.name}: probe ${cell.probe} ${cell.errorCode ?? 'failed'}`,
        message: cell.reason ?? 'the probe failed',
      });
    }
    for (const verdict of target.verdicts) {
      if (verdict.status !== 'failed' && verdict.status !== 'error') continue;
      // The message says what was expected and observed; the line after it, what the observation rests on.
      const first = evidenceLines(verdict, target).find((line) => !/^(observed|event log): /.test(line));
      out.push({
        target: target.name,
        what: verdict.status === 'failed' ? 'failed expectation' : 'expectation error',
        title: `${target.name}: ${verdict.title}`,
        message: `${verdict.message}${first ? `\n${first}` : ''}`,
      });
    }
  }
  return out;
}

/**
 * Error annotations, at most MAX_ANNOTATIONS: the command's own first, then the problems as they
 * are, then one for the rest; a warning for an interrupted run. A target that measured nothing is
 * named in one (an error when that is why the run fails, --strict, else a warning).
 */
function annotate(
  step: GithubStep,
  summary: RunSummary,
  code: number,
  extras: ExtraAnnotation[],
  runnerOf: GithubReporterOptions['runnerOf'],
): void {
  const say = (level: 'error' | 'warning', message: string, title: string) =>
    step.annotate(level, step.redact(cut(message, MESSAGE_CHARS)), step.redact(oneLine(title, 200)));
  for (const annotation of extras) say(annotation.level, annotation.message, annotation.title);
  const empty = measuredNothing(summary);
  for (const [i, target] of empty.entries()) {
    const level = code === 4 ? 'error' : 'warning';
    if (i === MAX_ANNOTATIONS - 1 && empty.length > MAX_ANNOTATIONS) {
      step.annotate(
        level,
        step.redact(
          `${empty.length - i} more targets measured nothing: ${empty
            .slice(i)
            .map((emptyTarget) => emptyTarget.name)
            .join(', ')}; see the job summary`,
        ),
        `cudamatrix: ${empty.length - i} more targets measured nothing`,
      );
      break;
    }
    const where = runnerOf?.(target.name);
    say(
      level,
      `${where ? `${where}: ` : ''}every probe was skipped, nothing was measured: ${skipReason(target)}`,
      `${target.name}: measured nothing`,
    );
  }
  const budget = Math.max(1, MAX_ANNOTATIONS - extras.filter((annotation) => annotation.level === 'error').length);
  const problems = problemsOf(summary);
  const shown = problems.length > budget ? problems.slice(0, budget - 1) : problems;
  for (const problem of shown) say('error', problem.message, problem.title);
  const rest = problems.slice(shown.length);
  if (rest.length) {
    const kinds = (['failed expectation', 'expectation error', 'target error', 'probe error'] as const)
      .map((k) => [k, rest.filter((problem) => problem.what === k).length] as const)
      .filter(([, count]) => count > 0)
      .map(([k, count]) => `${count} ${k}${count === 1 ? '' : 's'}`);
    const targets = [...new Set(rest.map((problem) => problem.target))];
    const named = targets.slice(0, 10).join(', ') + (targets.length > 10 ? ` and ${targets.length - 10} more` : '');
    const message = `${kinds.join(', ')} on ${targets.length === 1 ? 'target' : 'targets'} ${named}: see the job summary (every one with its evidence: junit.xml and summary.json in the run folder)`;
    step.annotate('error', step.redact(cut(message, MESSAGE_CHARS)), `cudamatrix: ${rest.length} more not shown here`);
  }
  const unjudged = judgedNothingWords(summary);
  if (unjudged) step.annotate('warning', step.redact(`${unjudged.finding} Fix: ${unjudged.fix}.`), 'cudamatrix: this run judged nothing');
  if (summary.interrupted) {
    const notRun = summary.counts.cells['not-run'] ?? 0;
    const cancelled = summary.counts.cells.cancelled ?? 0;
    step.annotate(
      'warning',
      `The run was interrupted (${notRun} cell${notRun === 1 ? '' : 's'} not run, ${cancelled} stopped): the results cover what finished.`,
      'cudamatrix: run interrupted',
    );
  }
}
