/**
 * `cudamatrix diff` on the command line: options, arguments and help. The command's code
 * (cli/diff.ts) is imported only when it runs, so that --help loads none of it.
 */
import type { Command } from 'commander';

export function addDiffCommand(program: Command): void {
  program
    .command('diff')
    .description(
      'what changed between two runs, records or driver versions: facts, cell outcomes, and metrics that moved beyond their noise',
    )
    .argument(
      '<a>',
      'the old side: an events.jsonl, a run folder, a record, a file made by record --submit, or a folder of records (records/driver-<version>)',
    )
    .argument('<b>', 'the new side, the same kinds')
    .option('--json', 'print the diff as JSON (schema cudamatrix-diff/1, every metric compared)', false)
    .option('--all', 'list every metric compared, with its move and its noise, not only those beyond it', false)
    .option(
      '--history <dir>',
      "the records whose runs of each compared key measure its run-to-run noise (besides the two sides' own); none if the folder does not exist",
      'records',
    )
    .option('--no-history', "measure the noise from the two sides' records and repetitions alone")
    .addHelpText(
      'after',
      `
Records are paired by key without the driver (environment, GPU, OS, OS build, container), so
two driver versions' folders compare like with like; of several records of one key on a side,
the newest that observed facts is compared (a side whose records of one key disagree says
CONFLICT). Of each pair: facts both have whose values differ, cells whose outcome
differs, and metrics (each name and attrs both have) that moved beyond their noise. A move is
|a - b| / max(|a|, |b|). A metric changed when its move is beyond both its minimum effect (its
tolerance in the probe catalogue) and its measured noise: the spread of the key's earlier runs
(--history's records of the same environment, GPU and driver, and the sides' own), or, with
none, of the two runs' own repetitions, at a 5 % chance at most per pair of records that any
series is called changed by noise alone (docs/records.md, "Noise"). A move beyond the minimum effect but
within the noise is "too noisy to tell", not a change. Cells during which another process used
the GPU, and pageable copies whose host control moved with them, are not called the driver's.
What is on one side only is
listed, not counted as a change.

Exit status:
  0  the same behaviour: no fact or cell outcome changed, no metric beyond its noise
  1  behaviour changed
  2  an input that cannot be read (named), a side with no GPU observation, no record of one
     side that pairs with one of the other, or pairs that share no fact and no metric`,
    )
    .action(async (sourceA: string, sourceB: string, opts: { json: boolean; all: boolean; history: string | false }) => {
      process.exitCode = await (await import('./diff.ts')).diffCommand(sourceA, sourceB, opts);
    });
}
