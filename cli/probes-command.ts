/**
 * `cudamatrix probes` on the command line: options, arguments and help. The command's code
 * (cli/probes.ts) is imported only when it runs, so that --help loads none of it.
 */
import type { Command } from 'commander';

export function addProbesCommand(program: Command): void {
  const probes = program.command('probes').description('the probe catalogue');
  probes
    .command('list')
    .description('list the probes, the claims they decide, and (with --facts) every fact and metric')
    .option('--facts', "also list each probe's facts and metrics", false)
    .option('--json', 'print the catalogue as JSON', false)
    .addHelpText('after', '\nExit status: 0 listed; 2 a command-line error.')
    .action(async (opts) => {
      process.exitCode = (await import('./probes.ts')).probesListCommand(opts);
    });
}
