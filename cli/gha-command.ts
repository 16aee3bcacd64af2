/**
 * `cudamatrix gha matrix` and `gha merge` on the command line: options, arguments and help.
 * The commands' code (cli/gha.ts) is imported only when one runs, so that --help loads none of it.
 */
import type { Command } from 'commander';
import { collect, matrixOption, positiveInt } from './options.ts';

export function addGhaCommand(program: Command): void {
  const gha = program
    .command('gha')
    .description("GitHub Actions: the job matrix of a fanned-out run (gha matrix), and its jobs' event logs put back together (gha merge)");
  gha
    .command('matrix')
    .addOption(matrixOption())
    .option('-t, --target <glob>', 'only targets whose name matches (repeatable, or comma-separated)', collect)
    .option('-p, --probe <glob>', 'only probes whose name matches (repeatable, or comma-separated); pass the same to gha merge', collect)
    .description('print the job matrix for fromJSON: one job per target with runsOn labels, --shards jobs for the targets without')
    .option(
      '--shards <n>',
      'jobs for the targets without runsOn (split into whole hosts, as run --shard)',
      (value) => positiveInt(value, '--shards'),
      1,
    )
    .option(
      '--runs-on <labels>',
      'runner labels of the jobs for the targets without runsOn, comma-separated (default: self-hosted,linux,cudamatrix-shared: a label of its own, so that GPU runners do not take them)',
    )
    .addHelpText(
      'after',
      `
Prints one line of JSON on stdout, {"include":[{"name","targets","runsOn","labelled"}...]}, for
  strategy: { matrix: \${{ fromJSON(needs.plan.outputs.matrix) }} }
each job then running  cudamatrix run --target <targets>  on runs-on: \${{ matrix.runsOn }} and
uploading its results folder as the artifact cudamatrix-events-<name>. A target with runsOn
(labels such as [self-hosted, windows, gpu, wddm]) gets a job of its own; the others are reached
through their transports from --shards shared jobs, whole hosts each (no host is measured by two
jobs at once). Under GitHub Actions (GITHUB_ACTIONS=true) it also sets the step outputs matrix
and count, and writes the plan into the job summary.

Exit status: 0 the matrix printed; 2 a matrix or command-line error (named).`,
    )
    .action(async (opts) => {
      process.exitCode = await (await import('./gha.ts')).ghaMatrixCommand(opts);
    });
  gha
    .command('merge')
    .description(
      'merge the event logs of the jobs of a gha matrix plan into one run: lost jobs marked, JUnit, job summary, behaviour records, report',
    )
    .argument('<paths...>', 'folders the event-log artifacts were downloaded to (searched for events.jsonl), or events.jsonl files')
    .requiredOption('--plan <json|file>', "the plan gha matrix printed (the plan job's matrix output), as JSON text or a file")
    .addOption(matrixOption())
    .option('-p, --probe <glob>', 'the --probe the jobs ran with (repeatable, or comma-separated)', collect)
    .option('--junit <file>', 'also write JUnit XML to this file')
    .option(
      '--results-dir <dir>',
      'folder for the merged run folder (<dir>/<run-id>/events.jsonl, junit.xml, summary.json)',
      'results/runs',
    )
    .option('--records-dir <dir>', "the behaviour records: the merged run's are written there, as cudamatrix record writes them", 'records')
    .option('--report-dir <dir>', 'folder for BEHAVIOUR.md and behaviour.html, regenerated when a record was written', 'records')
    .option('--no-record', 'write no records and no report')
    .option(
      '--strict',
      'exit 4 when nothing was measured, as run --strict (also when every log ran with it); each target that measured nothing is named',
      false,
    )
    .option(
      '--fail-on-change',
      'exit 5 when behaviour changed against the committed records (behaviour-changed), each change an error annotation',
      false,
    )
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
Every planned cell that no log finished (a job cancelled or timed out, a runner lost, an artifact
missing, a step killed mid-run; a run that ended interrupted counts so too: the runner sends Ctrl-C
to a job that times out) ends as an error with code JOB_LOST on its target, which names the job
and what is known: the merged run is complete, says which targets were lost, and the other
targets are judged, recorded and reported as usual (lost targets are not recorded). The records
are compared with those already in --records-dir before they are written.

Under GitHub Actions (GITHUB_ACTIONS=true) the job summary, annotations and outputs are written as
for run, with these outputs besides: behaviour-changed (true when a fact, a probe's outcome or a
metric beyond its noise differs from the committed record of the same environment, GPU and OS),
new-observations, records-written, records (the files, one per line), lost (target names), run-dir.

Exit status (the merged run's, as for run):
  0    every expectation met (or nothing to judge)
  1    an expectation failed
  2    a log refused, unreadable, not found, or of a target the plan does not list; --plan or
       --matrix invalid; a configuration error
  3    a target was lost (JOB_LOST), unreachable, or a probe crashed or timed out
  4    --strict (or every log ran with it), and nothing was measured
  5    --fail-on-change, and behaviour changed (the run otherwise passed)
  6    an output could not be written (a full disk, no permission), each named with the cause
A target whose every probe was skipped (no usable driver: a runner that cannot see its GPU) is
named in the job summary with its job and runner labels, and in an annotation: an error when that
fails the run (--strict, nothing measured anywhere), else a warning.`,
    )
    .action(async (paths: string[], opts) => {
      process.exitCode = await (await import('./gha.ts')).ghaMergeCommand(paths, opts);
    });
}
