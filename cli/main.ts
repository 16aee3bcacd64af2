/**
 * The cudamatrix command line. Expected failures (a bad matrix, an unreachable target) print
 * one clear message and exit with their code; only a bug prints a stack trace (and only with
 * CUDAMATRIX_DEBUG=1). Each command's code is imported when the command runs, so that
 * --version and --help start without the transports, reporters and matrix loader.
 */
import { Command, CommanderError, Option } from 'commander';
import { CudamatrixError, ExitCode, exitCodeFor } from '../core/errors.ts';
import { TOOL_VERSION } from '../core/version.ts';

const exitCodesHelp = `
Exit status:
  0    every expectation met (or nothing to judge)
  1    an expectation failed
  2    configuration error (matrix, command line, declared environment differs from the detected one)
  3    infrastructure error (target unreachable, probe crashed or timed out)
  4    --strict, and nothing was measured (no usable driver on any target)
  6    an output could not be written (a full disk, no permission): the event log, junit.xml
       or summary.json of the run folder, or a --junit/--reporter file; each is named with
       the cause. What was written is whole (the event log is cut back to its last whole line)
  130  interrupted (results for what finished are still written)`;

/** The exit statuses of `cudamatrix doctor`, for its --help. */
const doctorExitHelp = `
Exit status:
  0  every check passed (✓), or --reap removed what it could prove was left behind
  2  usage error (a flag without the one it needs, flags that do not go together), or with
     --target a matrix error or an unknown target
  3  a check failed (✗): no cudaprobe (a package without this platform's binary, or a
     checkout without a compiler or whose build failed), no NVIDIA driver, NVML or GPU; with
     --target, the target unreachable (host key, authentication, engine); with --reap, the
     Docker engine unreachable. What to fix is printed at the end.`;

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function buildProgram(): Command {
  const program = new Command('cudamatrix')
    .description('Measures what the NVIDIA driver really does on each target of a matrix, and checks it against expectations.')
    .version(TOOL_VERSION)
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', `${exitCodesHelp.replace('Exit status:', 'Exit status of run (and merge; every other command lists its own in its --help):')}`)
    .exitOverride();

  const matrixOption = () => new Option('-m, --matrix <file>', 'matrix file (default: the embedded matrix/default.yaml: this machine, every probe)');
  const filterOptions = (cmd: Command) =>
    cmd
      .addOption(matrixOption())
      .option('-t, --target <glob>', 'only targets whose name matches (repeatable, or comma-separated)', collect)
      .option('-p, --probe <glob>', 'only probes whose name matches (repeatable, or comma-separated)', collect)
      .option('--shard <i/n>', 'run the i-th of n deterministic slices of the cells');

  filterOptions(program.command('run'))
    .description('run the probes on every target and judge the expectations')
    .option('--strict', 'exit 4 when nothing was measured (no usable driver on any target)', false)
    .option('--accept-new', 'accept and record the host keys of SSH hosts not yet in known_hosts (as ssh -o StrictHostKeyChecking=accept-new); each key added is named on stderr and in the event log', false)
    .option('--quick', 'small parameters for every probe (CI-sized runs); the matrix\'s own parameters still win', false)
    .option('--reporter <name[:path]>', 'console (default), junit, json or nhc (a line per node, for health checks), each with an optional path (junit:out.xml or junit=out.xml; "-" or none is stdout); repeatable; replaces the default console', collect)
    .option('--junit <file>', 'also write JUnit XML to this file (as --reporter junit:FILE)')
    .option('--json', 'print the JSON summary on stdout (the console moves to stderr)', false)
    .option('--results-dir <dir>', 'folder for run folders (each run writes <dir>/<run-id>/events.jsonl, junit.xml, summary.json)', 'results/runs' /* run.ts DEFAULT_RESULTS_DIR; not imported, so that --help loads no command's code */)
    .option('--concurrency <n>', 'targets at once (default: the matrix\'s; never two on one host)', (v) => positiveInt(v, '--concurrency'))
    .option('-q, --quiet', 'print only the summary, not a line per probe', false)
    .option('--verbose', 'list every target and cell however many there are (above 20 targets the console lists only problems, with progress)', false)
    .option('--no-color', 'no colours (also NO_COLOR=1; FORCE_COLOR=1 forces them)')
    .addHelpText('after', exitCodesHelp)
    .action(async (opts) => {
      process.exitCode = await (await import('./run.ts')).runCommand(opts);
    });

  filterOptions(program.command('plan'))
    .description('list the cells (target/probe) a run would execute, without running anything')
    .option('--json', 'print the plan as JSON', false)
    .action(async (opts) => {
      process.exitCode = await (await import('./plan.ts')).planCommand(opts);
    });

  program
    .command('init')
    .description('write a commented starter matrix that extends the default expectations (this machine, and an SSH and a Docker target to uncomment)')
    .argument('[file]', 'the file to write (never overwritten)', 'cudamatrix.yaml' /* init.ts DEFAULT_INIT_FILE; not imported, so that --help loads no command's code */)
    .addHelpText('after', '\nExit status: 0 written; 2 the file exists already (nothing written) or cannot be written.')
    .action(async (file: string) => {
      process.exitCode = (await import('./init.ts')).initCommand(file);
    });

  const probes = program.command('probes').description('the probe catalogue');
  probes
    .command('list')
    .description('list the probes, the claims they decide, and (with --facts) every fact and metric')
    .option('--facts', 'also list each probe\'s facts and metrics', false)
    .option('--json', 'print the catalogue as JSON', false)
    .action(async (opts) => {
      process.exitCode = (await import('./probes.ts')).probesListCommand(opts);
    });

  program
    .command('doctor')
    .description('check what this machine has (which cudaprobe and why: prebuilt or compiled; driver, NVML, CUDA runtime, GPUs), or with --target what a target has')
    .option('--target <name>', 'check one target of the matrix: reachability, host key, authentication, platform, cudaprobe, driver, NVML')
    .addOption(matrixOption())
    .option('--accept-new', 'accept and record the host key of an SSH host not yet in known_hosts (named on stderr as it is added)', false)
    .option('--reap', 'remove the containers (and their volumes) of cudamatrix runs that are over: started on this machine by a cudamatrix that is gone; runs of other machines are kept', false)
    .option('--endpoint <url>', 'with --reap: the Docker engine (default: DOCKER_HOST, then the current context)')
    .option('--older-than <duration>', 'with --reap: also remove the containers of runs started longer ago than this (6h, 90m, 2d), whichever machine started them')
    .addHelpText('after', doctorExitHelp)
    .action(async (opts: { target?: string; matrix?: string; acceptNew: boolean; reap: boolean; endpoint?: string; olderThan?: string }) => {
      process.exitCode = await (await import('./doctor.ts')).doctorAction(opts);
    });

  program
    .command('report')
    .description('regenerate BEHAVIOUR.md (the behaviour table: facts as rows, environment x GPU x driver as columns, each value linking to its record) and behaviour.html (the same with charts, one self-contained page) from the behaviour records')
    .option('--records-dir <dir>', 'the records: <dir>/driver-<version>/*.json, as cudamatrix record writes them', 'results/records')
    .option('--out <dir>', 'folder for BEHAVIOUR.md and behaviour.html (links to the records are relative to it)', 'results')
    .option('--check', 'write nothing; exit 1 when the files in --out differ from what the records give (for CI)', false)
    .addHelpText(
      'after',
      `
The page works offline (no CDN, nothing fetched): open behaviour.html in a browser. Its charts
show the newest record of each column: memory per phase per source for pinned-vram,
pinned-release and multi-process-pinned (C1-C3, C14), bandwidth against transfer size,
latencies, and the pinned ceiling against free VRAM, with another column drawn over them on
request; its tables show the numbers as the console does (the exact value on hover). A fact
that changed from the previous driver, and metrics that drifted beyond their noise from a
column's record before the newest, are marked (docs/records.md).
The same records always give the same bytes, so both files can be committed and checked.

Exit status:
  0  written (with --check: the files match the records)
  1  --check, and the files differ from what the records give
  2  a record that cannot be read (named, with what is wrong), or a records folder that is not there
  6  BEHAVIOUR.md or behaviour.html could not be written (a full disk, no permission: named, with the cause)`,
    )
    .action(async (opts: { recordsDir: string; out: string; check: boolean }) => {
      process.exitCode = (await import('./report.ts')).reportCommand(opts);
    });

  program
    .command('record')
    .description('write behaviour records (results/records/driver-<version>/*.json, one per observation: a target of a run that measured a GPU) from event logs, run folders or a file a user submitted; with --submit, one file to attach to a pull request instead')
    .argument('<inputs...>', 'events.jsonl files, run folders (results/runs/<run-id>), files made by record --submit, or record files')
    .option('--records-dir <dir>', 'where the records go: <dir>/driver-<version>/<environment>-<gpu>[-<container>]-<date>-<id>.json', 'results/records')
    .option('--submit <file>', 'write nothing under --records-dir; write FILE (Markdown: a summary and the records) to attach to a pull request ("-": stdout)')
    .addHelpText(
      'after',
      `
A record holds what the run observed: key (environment, GPU, driver, OS, OS build, container),
facts, every metric with its attributes, the memory samples, the cells' outcomes, the sysinfo,
and the verdicts against the default expectations (matrix/default.yaml, whatever matrix the run
used, so that records compare). Before it is written the GPU UUID and user and host names
(user@host, home folders in paths) are removed. An event log inside the repository is named in
the record as its evidence.

  identical  the same key and the same facts as a record already there, and no metric beyond
             its noise against it (diff's rules): not written, that file named (a second
             run that saw the same is the same observation)
  DRIFTED    the same key and facts, metrics beyond their noise (a same-driver regression):
             written, the series listed; the report shows the drift
  CONFLICT   the same key, a fact with another value: written, both kept, the differing
             facts listed; the report shows the conflict
  no GPU     a log whose targets found no driver or GPU, or measured no fact and no metric
             (only sysinfo ran), gives no record, and says why
  REPLACED   a record of the same run that a cut-off log gave, replaced by the full log's

Measured elsewhere (Windows, WSL2, another GPU)? Run the probes, then
  cudamatrix record results/runs/<run-id> --submit cudamatrix-records.txt
and attach that file to a pull request or an issue (GitHub takes .txt attachments); a
maintainer runs cudamatrix record FILE and commits what it writes.

Exit status:
  0  written, or already recorded (conflicts included: they are data, and listed)
  2  an input that cannot be read (named, with what is wrong), an incomplete event log (a
     cut-off last line or no run-end: a crashed run or a killed shard), --records-dir that is
     not a records root, or a record file at the path of this record with other facts (a
     run's record does not change)
  4  no input holds an observation of a GPU: nothing recorded
  6  a record could not be written (a full disk, no permission: named, with the cause); those
     written before it stay, each whole`,
    )
    .action(async (inputs: string[], opts: { recordsDir: string; submit?: string }) => {
      process.exitCode = await (await import('./record.ts')).recordCommand(inputs, opts);
    });

  program
    .command('diff')
    .description('what changed between two runs, records or driver versions: facts, cell outcomes, and metrics that moved beyond their noise')
    .argument('<a>', 'the old side: an events.jsonl, a run folder, a record, a file made by record --submit, or a folder of records (results/records/driver-<version>)')
    .argument('<b>', 'the new side, the same kinds')
    .option('--json', 'print the diff as JSON (schema cudamatrix-diff/1, every metric compared)', false)
    .option('--all', 'list every metric compared, with its move and its noise, not only those beyond it', false)
    .addHelpText(
      'after',
      `
Records are paired by key without the driver (environment, GPU, OS, OS build, container), so
two driver versions' folders compare like with like; of several records of one key on a side,
the newest that observed facts is compared (a side whose records of one key disagree says
CONFLICT). Of each pair: facts both have whose values differ, cells whose outcome
differs, and metrics (each name and attrs both have) that moved beyond their noise. A move is
|a - b| / max(|a|, |b|). Noise is the metric's tolerance in the probe catalogue
(probes/catalogue.ts, calibrated on four runs of one driver on the H200), or the spread of
the series' repeated values in a record where that is larger. What is on one side only is
listed, not counted as a change.

Exit status:
  0  the same behaviour: no fact or cell outcome changed, no metric beyond its noise
  1  behaviour changed
  2  an input that cannot be read (named), a side with no GPU observation, no record of one
     side that pairs with one of the other, or pairs that share no fact and no metric`,
    )
    .action(async (a: string, b: string, opts: { json: boolean; all: boolean }) => {
      process.exitCode = await (await import('./diff.ts')).diffCommand(a, b, opts);
    });

  program
    .command('merge')
    .description('merge the event logs of shards (run --shard i/n) or of runs on several machines into one run, and render it as run does')
    .argument('<logs...>', 'events.jsonl files or run folders (results/runs/<run-id>), one per shard or machine, in any order')
    .option('--reporter <name[:path]>', 'console (default), junit, json or nhc (a line per node, for health checks), each with an optional path (junit:out.xml; "-" or none is stdout); repeatable; replaces the default console', collect)
    .option('--junit <file>', 'also write JUnit XML to this file (as --reporter junit:FILE)')
    .option('--json', 'print the JSON summary on stdout (the console moves to stderr)', false)
    .option('--results-dir <dir>', 'folder for the merged run folder (<dir>/<run-id>/events.jsonl, junit.xml, summary.json)', 'results/runs')
    .option('--strict', 'exit 4 when nothing was measured (also when every log ran with --strict)', false)
    .option('-q, --quiet', 'print only the summary, not a line per probe', false)
    .option('--verbose', 'list every target and cell however many there are (above 20 targets the console lists only problems, with progress)', false)
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
  130  a log was interrupted or killed: what it finished is merged, the rest is missing`,
    )
    .action(async (logs: string[], opts) => {
      process.exitCode = await (await import('./merge.ts')).mergeCommand(logs, opts);
    });

  const gha = program.command('gha').description('GitHub Actions: the job matrix of a fanned-out run (gha matrix), and its jobs\' event logs put back together (gha merge)');
  gha
    .command('matrix')
    .addOption(matrixOption())
    .option('-t, --target <glob>', 'only targets whose name matches (repeatable, or comma-separated)', collect)
    .option('-p, --probe <glob>', 'only probes whose name matches (repeatable, or comma-separated); pass the same to gha merge', collect)
    .description('print the job matrix for fromJSON: one job per target with runsOn labels, --shards jobs for the targets without')
    .option('--shards <n>', 'jobs for the targets without runsOn (split into whole hosts, as run --shard)', (v) => positiveInt(v, '--shards'), 1)
    .option('--runs-on <labels>', 'runner labels of the jobs for the targets without runsOn, comma-separated (default: self-hosted,linux)')
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
    .description('merge the event logs of the jobs of a gha matrix plan into one run: lost jobs marked, JUnit, job summary, behaviour records, report')
    .argument('<paths...>', 'folders the event-log artifacts were downloaded to (searched for events.jsonl), or events.jsonl files')
    .requiredOption('--plan <json|file>', 'the plan gha matrix printed (the plan job\'s matrix output), as JSON text or a file')
    .addOption(matrixOption())
    .option('-p, --probe <glob>', 'the --probe the jobs ran with (repeatable, or comma-separated)', collect)
    .option('--junit <file>', 'also write JUnit XML to this file')
    .option('--results-dir <dir>', 'folder for the merged run folder (<dir>/<run-id>/events.jsonl, junit.xml, summary.json)', 'results/runs')
    .option('--records-dir <dir>', 'the behaviour records: the merged run\'s are written there, as cudamatrix record writes them', 'results/records')
    .option('--report-dir <dir>', 'folder for BEHAVIOUR.md and behaviour.html, regenerated when a record was written', 'results')
    .option('--no-record', 'write no records and no report')
    .option('--strict', 'exit 4 when nothing was measured, as run --strict (also when every log ran with it); each target that measured nothing is named', false)
    .option('--fail-on-change', 'exit 5 when behaviour changed against the committed records (behaviour-changed), each change an error annotation', false)
    .option('-q, --quiet', 'print only the summary, not a line per probe', false)
    .option('--verbose', 'list every target and cell however many there are (above 20 targets the console lists only problems, with progress)', false)
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
  return program;
}

function positiveInt(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CudamatrixError('USAGE', `${flag} needs a whole number of at least 1, got "${value}"`);
  return n;
}

/**
 * Drops a "--" that comes before any option: `pnpm matrix -- --quick` hands the script
 * ["run", "--", "--quick"], and "--quick" is meant as an option, not an argument.
 */
export function withoutLeadingDashes(argv: string[]): string[] {
  const args = argv.slice(2);
  const at = args.indexOf('--');
  const beforeIsCommands = args.slice(0, at).every((a) => !a.startsWith('-'));
  return at >= 0 && at <= 2 && beforeIsCommands ? [...argv.slice(0, 2), ...args.slice(0, at), ...args.slice(at + 1)] : argv;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(withoutLeadingDashes(argv));
    return Number(process.exitCode ?? 0);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; usage mistakes are configuration errors (commander said what; in a GitHub Actions step also an annotation).
      if (error.exitCode !== 0 && process.env.GITHUB_ACTIONS === 'true') (await import('../results/reporters/github.ts')).annotateFatal('USAGE', error.message.replace(/^error: /, ''));
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.configuration;
    }
    if (error instanceof CudamatrixError) {
      process.stderr.write(`error [${error.code}]: ${error.message}\n`);
      // In a GitHub Actions step, also an annotation (the module is loaded only there).
      if (process.env.GITHUB_ACTIONS === 'true') (await import('../results/reporters/github.ts')).annotateFatal(error.code, error.message);
      return exitCodeFor(error);
    }
    if ((error as NodeJS.ErrnoException)?.syscall === 'uv_cwd') {
      process.stderr.write('error [USAGE]: the current folder no longer exists (it was removed or moved); cd to one that does and run again\n');
      return ExitCode.configuration;
    }
    const e = error as Error;
    process.stderr.write(`internal error: ${e?.message ?? String(error)}\nThis is a bug in cudamatrix; run again with CUDAMATRIX_DEBUG=1 for the stack trace and report it.\n`);
    if (process.env.CUDAMATRIX_DEBUG) process.stderr.write(`${e?.stack ?? ''}\n`);
    return ExitCode.infrastructure;
  }
}
