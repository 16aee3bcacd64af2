/**
 * cudamatrix merge: event logs of shards or machines into one run folder, rendered as `run`
 * renders its own: the merged events.jsonl, junit.xml and summary.json in the folder, the console
 * (a replay of the merged log) on stdout, and --junit / --json / --reporter as run takes them.
 * The exit status is the merged run's, as run's is.
 */
import path from 'node:path';
import { mergeEventLogs, readLogs, writeMergedRun } from '../events/merge.ts';
import { Reporters } from '../reporters/reporter.ts';
import { secretValues } from '../matrix/secrets.ts';
import { githubReporter } from '../reporters/github.ts';
import { GithubStep, isGithubActions } from '../reporters/github-step.ts';
import { createReporters } from '../reporters/index.ts';
import { COLLAPSE_ABOVE } from '../reporters/console.ts';
import { jsonReporter } from '../reporters/json.ts';
import { junitReporter } from '../reporters/junit.ts';
import { exitCodeOf, summarize } from '../verdicts/verdicts.ts';
import { checkOutputs, chooseReporters, stdoutTaken } from './run.ts';

export interface MergeCommandOptions {
  reporter?: string[];
  junit?: string;
  json: boolean;
  resultsDir: string;
  strict: boolean;
  quiet: boolean;
  verbose?: boolean;
}

export async function mergeCommand(logs: string[], opts: MergeCommandOptions): Promise<number> {
  const choices = chooseReporters(opts);
  // No matrix here to name its secrets: those the environment's variable names give away.
  const github = isGithubActions() ? new GithubStep({ stdoutTaken: stdoutTaken(choices) }) : undefined;
  github?.mask(secretValues(process.env, []));
  // Every log is read and checked before anything is written: a refused merge leaves nothing behind.
  // Without the samples in memory: no output here shows them, and the merged log copies them from the logs' lines.
  const merged = mergeEventLogs(readLogs(logs, { leaveOutSamples: true }), { strict: opts.strict });
  checkOutputs(choices, opts.resultsDir);
  const { runDir, eventsFile } = writeMergedRun(merged, opts.resultsDir);

  // The run folder always gets the whole record, whatever the user chose to see (as run).
  const reporters = new Reporters([
    ...createReporters(choices, { quiet: opts.quiet, verbose: opts.verbose }),
    junitReporter((dir) => path.join(dir, 'junit.xml')),
    jsonReporter((dir) => path.join(dir, 'summary.json')),
    ...(github ? [githubReporter({ step: github })] : []),
  ]);
  for (const warning of merged.warnings) reporters.message(`warning: ${warning}`);
  const from = merged.start.mergedFrom.map(
    (mergeSource) =>
      `${mergeSource.file} (${mergeSource.shard ? `shard ${mergeSource.shard.index}/${mergeSource.shard.total}` : `run ${mergeSource.runId}`})`,
  );
  // Many logs (a fleet's): counted, not listed in one line of thousands of paths, unless --verbose.
  const which = from.length <= COLLAPSE_ABOVE || opts.verbose ? `: ${from.join(', ')}` : ` (--verbose names each)`;
  reporters.message(`merged ${from.length} log${from.length === 1 ? '' : 's'} into ${eventsFile}${which}`);
  for (const e of merged.events) reporters.event(e);
  const strict = merged.start.options.strict;
  const summary = summarize(merged.events);
  const unwritten = await reporters.end(summary, { runDir, eventsFile, strict });
  return exitCodeOf(summary, { strict, unwritten });
}
