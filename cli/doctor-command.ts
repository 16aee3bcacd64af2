/**
 * `cudamatrix doctor` on the command line: options, arguments and help. The command's code
 * (cli/doctor.ts) is imported only when it runs, so that --help loads none of it.
 */
import type { Command } from 'commander';
import { matrixOption } from './options.ts';

/** The exit statuses of `cudamatrix doctor`, for its --help. */
const doctorExitHelp = `
Exit status:
  0  every check passed (✓), or --reap removed what it could prove was left behind; a driver
     of the known-bad registry (matrix/known-bad-drivers.yaml) is a warning (!), not a failure
  2  usage error (a flag without the one it needs, flags that do not go together), or with
     --target or -m a matrix error or an unknown target
  3  a check failed (✗): no cudaprobe (a package without this platform's binary, or a
     checkout without a compiler or whose build failed), no NVIDIA driver, NVML or GPU; with
     --target or -m, a target unreachable (host key, authentication, engine); with --reap, the
     Docker engine unreachable. What to fix is printed at the end.
  With -m alone (every target of the matrix), the highest status of its targets.`;

export function addDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description(
      'check what this machine has (which cudaprobe and why: prebuilt or compiled; driver, NVML, CUDA runtime, GPUs), or with -m what every target of a matrix has (--target: one of them)',
    )
    .option(
      '--target <name>',
      'check one target of the matrix (without it, -m checks every target): reachability, host key, authentication, platform, cudaprobe, driver, NVML',
    )
    .addOption(matrixOption())
    .option('--accept-new', 'accept and record the host key of an SSH host not yet in known_hosts (named on stderr as it is added)', false)
    .option(
      '--reap',
      'remove the containers (and their volumes) of cudamatrix runs that are over: started on this machine by a cudamatrix that is gone; runs of other machines are kept',
      false,
    )
    .option('--endpoint <url>', 'with --reap: the Docker engine (default: DOCKER_HOST, then the current context)')
    .option(
      '--older-than <duration>',
      'with --reap: also remove the containers of runs started longer ago than this (6h, 90m, 2d), whichever machine started them',
    )
    .addHelpText('after', doctorExitHelp)
    .action(
      async (opts: { target?: string; matrix?: string; acceptNew: boolean; reap: boolean; endpoint?: string; olderThan?: string }) => {
        process.exitCode = await (await import('./doctor.ts')).doctorAction(opts);
      },
    );
}
