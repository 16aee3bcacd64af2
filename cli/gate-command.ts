/**
 * `cudamatrix gate` on the command line: options, arguments and help. The command's code
 * (cli/gate.ts) is imported only when it runs, so that --help loads none of it.
 */
import type { Command } from 'commander';

export function addGateCommand(program: Command): void {
  program
    .command('gate')
    .description(
      'one verdict for CI before a driver rollout: a run against the records of its key, and its driver against the known-bad registry',
    )
    .argument('<run>', 'the run to judge: a run folder (results/runs/<run-id>), its events.jsonl, or a record')
    .option('--records-dir <dir>', "the records: each key's baseline and the runs that measure its noise", 'records')
    .option('--baseline <path>', 'judge against these records instead (a folder of records, a record, or a run folder)')
    .option('--known-bad <file>', 'the known-bad registry to use instead of the one shipped (matrix/known-bad-drivers.yaml; same format)')
    .option('--json <file>', 'also write the verdict as JSON (schema cudamatrix-gate/1; "-": stdout, the lines then on stderr)')
    .addHelpText(
      'after',
      `
Each target of the run is compared, as \`cudamatrix diff\` compares, with the records of its key
in --records-dir: those of its own driver where there are some (has this node drifted?), else
those of the newest driver recorded (what does the new driver change?). Every record of that
driver is a run of the baseline, and the key's other records measure its run-to-run noise.
Its driver is looked up in the known-bad registry (matrix/known-bad-drivers.yaml).

  pass          the same behaviour, and no known-bad entry that fails it
  changed       a fact or cell outcome changed, or a metric moved beyond its noise
  known-bad     the driver is listed for a behaviour this run checked (a probe that ran), by a
                source more than a single report (a single report is said, not failed on)
  inconclusive  no record of the key to judge against, or what moved did so while another
                process used the GPU: run again on an idle GPU

Exit status (the most severe target's):
  0  pass
  1  changed
  2  an input that cannot be read, an incomplete event log, a folder of records as the run,
     or --records-dir that is not a folder
  4  the run holds no observation of a GPU
  7  known-bad
  8  inconclusive
  130  interrupted (Ctrl-C or SIGTERM)`,
    )
    .action(async (run: string, opts: { recordsDir: string; baseline?: string; json?: string; knownBad?: string }) => {
      process.exitCode = await (await import('./gate.ts')).gateCommand(run, opts);
    });
}
