import { setMaxListeners } from 'node:events';
import path from 'node:path';
import { CudamatrixError } from '../core/errors.ts';
import { closestName } from '../core/suggest.ts';
import { checkOutputPath, makeDir } from '../core/fs.ts';
import { Reporters } from '../reporters/reporter.ts';
import { secretValues } from '../matrix/secrets.ts';
import { githubReporter } from '../reporters/github.ts';
import { GithubStep, isGithubActions } from '../reporters/github-step.ts';
import { createReporters, reporterNames, usesStdout, type ReporterChoice, type ReporterName } from '../reporters/index.ts';
import { jsonReporter } from '../reporters/json.ts';
import { junitReporter } from '../reporters/junit.ts';
import { exitCodeOf, summarize } from '../verdicts/verdicts.ts';
import type { Matrix } from '../matrix/load.ts';
import { executePlan } from '../run/execute.ts';
import { resolveFanOuts, secretEnvsOf } from '../transports/registry.ts';
import { planCells } from '../run/plan.ts';
import { watchInterrupts } from './interrupt.ts';
import { loadMatrixArg } from './matrix-arg.ts';

export interface RunOptions {
  matrix?: string;
  target?: string[];
  probe?: string[];
  shard?: string;
  strict: boolean;
  quick: boolean;
  acceptNew: boolean;
  reporter?: string[];
  junit?: string;
  json: boolean;
  resultsDir: string;
  concurrency?: number;
  quiet: boolean;
  verbose?: boolean;
}

/** "junit:out.xml", "junit=out.xml", "json" -> a reporter choice; a wrong name is a usage error. */
export function parseReporter(spec: string): ReporterChoice {
  const match = /^([a-z]+)(?:[:=](.+))?$/.exec(spec.trim());
  const name = match?.[1] as ReporterName | undefined;
  if (!match || !name || !reporterNames.includes(name)) {
    const hint = closestName(/^[a-z]+/i.exec(spec.trim())?.[0] ?? spec, reporterNames);
    throw new CudamatrixError(
      'USAGE',
      `--reporter ${JSON.stringify(spec)}: ${hint && hint !== name ? `did you mean "${hint}"? ` : ''}the reporters are ${reporterNames.join(', ')}, each optionally with a path (junit:out.xml or junit=out.xml; "-" is stdout)`,
    );
  }
  if (name === 'console' && match[2] !== undefined)
    throw new CudamatrixError('USAGE', '--reporter console prints to the terminal and takes no path');
  return { name, path: match[2] };
}

/** The reporters a run uses: --reporter, plus the shorthands --junit FILE and --json; console by default. */
export function chooseReporters(opts: Pick<RunOptions, 'reporter' | 'junit' | 'json'>): ReporterChoice[] {
  const choices = (opts.reporter ?? [])
    .flatMap((option) => option.split(','))
    .filter(Boolean)
    .map(parseReporter);
  if (opts.junit) choices.push({ name: 'junit', path: opts.junit });
  if (opts.json) choices.push({ name: 'json', path: '-' });
  if (!choices.some((choice) => choice.name === 'console') && (opts.reporter ?? []).length === 0) choices.unshift({ name: 'console' });
  return choices;
}

/**
 * Checks the outputs before anything runs: at most one reporter on stdout (two would make it
 * unreadable), and every file where it can be written.
 */
/** Where run folders go unless --results-dir says otherwise (relative to the current folder). */
export const DEFAULT_RESULTS_DIR = 'results/runs';

/** Whether a reporter prints to stdout (which then carries a report, and nothing else may write there). */
export function stdoutTaken(choices: ReporterChoice[]): boolean {
  return choices.some(usesStdout);
}

export function checkOutputs(choices: ReporterChoice[], resultsDir: string): void {
  const onStdout = choices.filter(usesStdout);
  if (onStdout.length > 1) {
    throw new CudamatrixError(
      'USAGE',
      `${onStdout.map((choice) => choice.name).join(' and ')} would both print to stdout, and neither could be read; give all but one a file (--reporter ${onStdout[1]!.name}:FILE)`,
    );
  }
  for (const choice of choices) if (choice.path !== undefined) checkOutputPath(choice.path, `--reporter ${choice.name}:`);
  makeDir(resultsDir, resultsDir === DEFAULT_RESULTS_DIR ? 'the default --results-dir' : '--results-dir');
}

export async function runCommand(opts: RunOptions): Promise<number> {
  const loaded = await loadMatrixArg(opts.matrix, { acceptNew: opts.acceptNew });
  const choices = chooseReporters(opts);
  const github = isGithubActions() ? new GithubStep({ stdoutTaken: stdoutTaken(choices) }) : undefined;
  // In a GitHub Actions step the runner is told the secrets' values before anything runs or prints.
  github?.mask(secretValues(process.env, secretEnvNames(loaded)));
  // A fan-out only the cluster can list (slurm's nodes: all) becomes its targets before the plan.
  const matrix = {
    ...loaded,
    targets: await resolveFanOuts(loaded.targets, { runId: `fan-out-${Date.now()}`, acceptNewHostKeys: opts.acceptNew }),
  };
  const plan = planCells(matrix, { targets: opts.target, probes: opts.probe, shard: opts.shard });
  for (const warning of plan.warnings) process.stderr.write(`warning: ${warning}\n`);
  checkOutputs(choices, opts.resultsDir);
  // The run folder always gets the whole record, whatever the user chose to see.
  const reporters = new Reporters([
    ...createReporters(choices, { quiet: opts.quiet, verbose: opts.verbose }),
    junitReporter((runDir) => path.join(runDir, 'junit.xml')),
    jsonReporter((runDir) => path.join(runDir, 'summary.json')),
    ...(github ? [githubReporter({ step: github })] : []),
  ]);
  const interrupts = watchInterrupts((message) => reporters.message(message));
  // Every running probe listens for the abort: many at once is expected, not a leak.
  setMaxListeners(0, interrupts.signal);
  let code: number;
  try {
    const result = await executePlan(plan, {
      runsDir: opts.resultsDir,
      strict: opts.strict,
      quick: opts.quick,
      acceptNewHostKeys: opts.acceptNew,
      concurrency: opts.concurrency,
      signal: interrupts.signal,
      onEvent: (e) => reporters.event(e),
      onProgress: (message) => reporters.message(message),
    });
    interrupts.ended();
    const summary = summarize(result.events);
    const logFailure = result.logFailure ? [result.logFailure.message] : [];
    const unwritten = await reporters.end(summary, {
      runDir: result.runDir,
      eventsFile: result.eventsFile,
      strict: opts.strict,
      unwritten: logFailure,
    });
    code = exitCodeOf(summary, { strict: opts.strict, unwritten });
  } catch (error) {
    interrupts.dispose();
    throw error;
  }
  // Printed ("Exit status: N") and written (summary.json): a Ctrl-C from now on changes nothing.
  interrupts.settle(code);
  return code;
}

/** The environment variables the matrix names as holding secrets (an SSH key's passphraseEnv), as their kinds tell. */
export function secretEnvNames(matrix: Matrix): string[] {
  return matrix.targets.flatMap((target) => secretEnvsOf(target.hops));
}
