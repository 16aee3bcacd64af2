/**
 * `cudamatrix record` on the command line: options, arguments and help. The command's code
 * (cli/record.ts) is imported only when it runs, so that --help loads none of it.
 */
import type { Command } from 'commander';

export function addRecordCommand(program: Command): void {
  program
    .command('record')
    .description(
      'write behaviour records (records/driver-<version>/*.json, one per observation: a target of a run that measured a GPU) from event logs, run folders or a file a user submitted; with --submit, one file to attach to a pull request instead',
    )
    .argument('<inputs...>', 'events.jsonl files, run folders (results/runs/<run-id>), files made by record --submit, or record files')
    .option(
      '--records-dir <dir>',
      'where the records go: <dir>/driver-<version>/<environment>-<gpu>[-<container>]-<date>-<id>.json',
      'records',
    )
    .option(
      '--submit <file>',
      'write nothing under --records-dir; write FILE (Markdown: a summary and the records) to attach to a pull request ("-": stdout)',
    )
    .addHelpText(
      'after',
      `
A record holds what the run observed: key (environment, GPU, driver, OS, OS build, container),
facts, every metric with its attributes, the memory samples, the cells' outcomes, the sysinfo,
and the verdicts against the default expectations (matrix/default.yaml, whatever matrix the run
used, so that records compare). Before it is written, GPU UUIDs, serial numbers, user and
host names (user@host, this machine's names, wherever they appear), the folders of paths
outside the system's, and IP and MAC addresses are replaced (with --submit by pseudonyms salted
for that file, and every text that leaves is shown first). An event log inside the repository
is named in the record as its evidence.

  repeat     the same key and the same facts as a record already there, and no metric beyond
             its noise against it (diff's rules): written, as one more run of the observation
             (its runs measure the key's run-to-run noise); the same run again is not written
  DRIFTED    the same key and facts, metrics beyond their noise (a same-driver regression):
             written, the series listed, marked driftedFrom (a new segment of the key's
             history); the report shows the drift
  CONFLICT   the same key, a fact both decided with another value: written, both kept, the
             differing facts listed; the report shows the conflict
  NEWLY DECIDED  the same key, a fact one left undecided (null) that the other decided, none
             decided differently: written, the fact listed; not a conflict
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
     run's record does not change); RECORD_IMPLAUSIBLE: a value that cannot be true (faster
     than its PCIe link, more memory than the device or host has, a clock step of zero or
     less), named with its bound: nothing written, no --submit file either
  4  no input holds an observation of a GPU: nothing recorded
  6  a record could not be written (a full disk, no permission: named, with the cause); those
     written before it stay, each whole`,
    )
    .action(async (inputs: string[], opts: { recordsDir: string; submit?: string }) => {
      process.exitCode = await (await import('./record.ts')).recordCommand(inputs, opts);
    });
}
