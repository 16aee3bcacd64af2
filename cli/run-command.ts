/**
 * `cudamatrix run` on the command line: options, arguments and help. The command's code
 * (cli/run.ts) is imported only when it runs, so that --help loads none of it.
 */
import type { Command } from 'commander';
import { collect, exitCodesHelp, filterOptions, positiveInt } from './options.ts';

export function addRunCommand(program: Command): void {
  filterOptions(program.command('run'))
    .description('run the probes on every target and judge the expectations')
    .option('--strict', 'exit 4 when nothing was measured (no usable driver on any target)', false)
    .option(
      '--accept-new',
      'accept and record the host keys of SSH hosts not yet in known_hosts (as ssh -o StrictHostKeyChecking=accept-new); each key added is named on stderr and in the event log',
      false,
    )
    .option('--quick', "small parameters for every probe (CI-sized runs); the matrix's own parameters still win", false)
    .option(
      '--reporter <name[:path]>',
      'console (default), junit, json or nhc (a line per node, for health checks), each with an optional path (junit:out.xml or junit=out.xml; "-" or none is stdout); repeatable; replaces the default console',
      collect,
    )
    .option('--junit <file>', 'also write JUnit XML to this file (as --reporter junit:FILE)')
    .option('--json', 'print the JSON summary on stdout (the console moves to stderr)', false)
    .option(
      '--results-dir <dir>',
      'folder for run folders (each run writes <dir>/<run-id>/events.jsonl, junit.xml, summary.json)',
      'results/runs' /* run.ts DEFAULT_RESULTS_DIR; not imported, so that --help loads no command's code */,
    )
    .option('--concurrency <n>', "targets at once (default: the matrix's; never two on one host)", (value) =>
      positiveInt(value, '--concurrency'),
    )
    .option('-q, --quiet', 'print only the summary, not a line per probe', false)
    .option(
      '--verbose',
      'list every target and cell however many there are (above 20 targets the console lists only problems, with progress)',
      false,
    )
    .option('--no-color', 'no colours (also NO_COLOR=1; FORCE_COLOR=1 forces them)')
    .addHelpText('after', exitCodesHelp)
    .action(async (opts) => {
      process.exitCode = await (await import('./run.ts')).runCommand(opts);
    });
}
