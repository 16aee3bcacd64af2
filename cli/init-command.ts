/**
 * `cudamatrix init` on the command line: options, arguments and help. The command's code
 * (cli/init.ts) is imported only when it runs, so that --help loads none of it.
 */
import type { Command } from 'commander';

export function addInitCommand(program: Command): void {
  program
    .command('init')
    .description(
      'write a commented starter matrix that extends the default expectations (this machine, and an SSH and a Docker target to uncomment)',
    )
    .argument(
      '[file]',
      'the file to write (never overwritten)',
      'cudamatrix.yaml' /* init.ts DEFAULT_INIT_FILE; not imported, so that --help loads no command's code */,
    )
    .addHelpText('after', '\nExit status: 0 written; 2 the file exists already (nothing written) or cannot be written.')
    .action(async (file: string) => {
      process.exitCode = (await import('./init.ts')).initCommand(file);
    });
}
