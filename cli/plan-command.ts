/**
 * `cudamatrix plan` on the command line: options, arguments and help. The command's code
 * (cli/plan.ts) is imported only when it runs, so that --help loads none of it.
 */
import type { Command } from 'commander';
import { filterOptions } from './options.ts';

export function addPlanCommand(program: Command): void {
  filterOptions(program.command('plan'))
    .description('list the cells (target/probe) a run would execute, without running anything')
    .option('--json', 'print the plan as JSON', false)
    .addHelpText(
      'after',
      '\nExit status: 0 planned (an empty shard too, said); 2 a matrix or command-line error, or a --probe/--target that matches no cell (named, with the fix).',
    )
    .action(async (opts) => {
      process.exitCode = await (await import('./plan.ts')).planCommand(opts);
    });
}
