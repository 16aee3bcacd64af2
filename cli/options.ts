/** What several commands' command lines share: options, their parsers and the run's exit statuses. */
import { Command, Option } from 'commander';
import { CudamatrixError } from '../core/errors.ts';

/** The exit statuses of run and merge, for their --help and the program's. */
export const exitCodesHelp = `
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

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function positiveInt(value: string, flag: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1)
    throw new CudamatrixError('USAGE', `${flag} needs a whole number of at least 1, got "${value}"`);
  return parsed;
}

export const matrixOption = () =>
  new Option('-m, --matrix <file>', 'matrix file (default: the embedded matrix/default.yaml: this machine, every probe)');

/** --matrix, --target, --probe and --shard: which cells (run, plan). */
export const filterOptions = (cmd: Command) =>
  cmd
    .addOption(matrixOption())
    .option('-t, --target <glob>', 'only targets whose name matches (repeatable, or comma-separated)', collect)
    .option('-p, --probe <glob>', 'only probes whose name matches (repeatable, or comma-separated)', collect)
    .option('--shard <i/n>', 'run the i-th of n deterministic slices of the cells');
