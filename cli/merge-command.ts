/**
 * `cudamatrix merge` on the command line: options, arguments and help. The command's code
 * (cli/merge.ts) is imported only when it runs, so that --help loads none of it.
 */
import type { Command } from 'commander';
import { collect } from './options.ts';

export function addMergeCommand(program: Command): void {
  program
    .command('merge')
    .description('merge the event logs of shards (run --shard i/n) or of runs on several machines into one run, and render it as run does')
    .argument('<logs...>', 'events.jsonl files or run folders (results/runs/<run-id>), one per shard or machine, in any order')
    .option(
      '--reporter <name[:path]>',
      'console (default), junit or json, each with an optional path (junit:out.xml; "-" or none is stdout); repeatable; replaces the default console',
      collect,
    )
    .option('--junit <file>', 'also write JUnit XML to this file (as --reporter junit:FILE)')
    .option('--json', 'print the JSON summary on stdout (the console moves to stderr)', false)
    .option(
      '--results-dir <dir>',
      'folder for the merged run folder (<dir>/<run-id>/events.jsonl, junit.xml, summary.json)',
      'results/runs',
    )
    .option('--strict', 'exit 4 when nothing was measured (also when every log ran with --strict)', false)
    .option('-q, --quiet', 'print only the summary, not a line per probe', false)
    .option(
      '--verbose',
      'list every target and cell however many there are (above 20 targets the console lists only problems, with progress)',
      false,
    )
    .option('--no-color', 'no colours (also NO_COLOR=1; FORCE_COLOR=1 forces them)')
    .addHelpText(
      'after',
      `
The merged run is rendered exactly as a single run of the same cells: the console on stdout,
junit.xml and summary.json beside its events.jsonl, and cudamatrix record and report read it as
any run. Its run id is made from the logs' (merging the same logs again replaces the same run
folder); it starts when the earliest log started, has no shard, and is interrupted when any
log was. A log without a run-end (a killed run) leaves the merged log without one: interrupted,
and incomplete as that log is (record refuses both). Each target keeps its events in its log's
order; targets of different logs, which no log orders, follow in name order.

Refused (exit 2, naming both files):
  a newer event schema                   upgrade cudamatrix
  the same log twice, or two logs of one run id and shard
  two logs that planned the same cell    (a shard run again, or shards of two runs): pass one
  logs of different cudamatrix versions  a merged run has one version; record each log instead
  different matrices                     the expectations differ, or a target is defined otherwise
Warned (on stderr): matrix files of different names (expectations the same), a mix of --quick
and full runs, shards missing from a split (1/3 and 3/3 without 2/3), a log without a run-end.

Exit status (the merged run's, as for run):
  0    every expectation met (or nothing to judge)
  1    an expectation failed
  2    a log refused (above), unreadable or not found; or a target's configuration error
  3    a target was unreachable or a probe crashed or timed out in a log
  4    --strict (or every log ran with it), and nothing was measured
  6    an output could not be written (a full disk, no permission): the merged events.jsonl,
       junit.xml or summary.json, or a --junit/--reporter file, each named with the cause
  130  a log was interrupted or killed: what it finished is merged, the rest is missing`,
    )
    .action(async (logs: string[], opts) => {
      process.exitCode = await (await import('./merge.ts')).mergeCommand(logs, opts);
    });
}
