/**
 * The cudamatrix command line. Expected failures (a bad matrix, an unreachable target) print
 * one clear message and exit with their code; only a bug prints a stack trace (and only with
 * CUDAMATRIX_DEBUG=1). Each command's code is imported when the command runs, so that
 * --version and --help start without the transports, reporters and matrix loader.
 */
import { Command, CommanderError } from 'commander';
import { CudamatrixError, ExitCode, exitCodeFor } from '../core/errors.ts';
import { TOOL_VERSION } from '../core/version.ts';
import { addDiffCommand } from './diff-command.ts';
import { addDoctorCommand } from './doctor-command.ts';
import { addExportCommand } from './export-command.ts';
import { addGateCommand } from './gate-command.ts';
import { addGhaCommand } from './gha-command.ts';
import { addInitCommand } from './init-command.ts';
import { addMergeCommand } from './merge-command.ts';
import { exitCodesHelp } from './options.ts';
import { addPlanCommand } from './plan-command.ts';
import { addProbesCommand } from './probes-command.ts';
import { addRecordCommand } from './record-command.ts';
import { addReportCommand } from './report-command.ts';
import { addRunCommand } from './run-command.ts';

const commands = [
  addRunCommand,
  addPlanCommand,
  addInitCommand,
  addProbesCommand,
  addDoctorCommand,
  addReportCommand,
  addRecordCommand,
  addDiffCommand,
  addExportCommand,
  addGateCommand,
  addMergeCommand,
  addGhaCommand,
];

export function buildProgram(): Command {
  const program = new Command('cudamatrix')
    .description('Measures what the NVIDIA driver really does on each target of a matrix, and checks it against expectations.')
    .version(TOOL_VERSION)
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText(
      'after',
      `${exitCodesHelp.replace('Exit status:', 'Exit status of run (and merge; the other commands list their own in their --help):')}`,
    )
    .exitOverride();
  // In this order in --help.
  for (const add of commands) add(program);
  return program;
}

/**
 * Drops a "--" that comes before any option: `pnpm matrix -- --quick` hands the script
 * ["run", "--", "--quick"], and "--quick" is meant as an option, not an argument.
 */
export function withoutLeadingDashes(argv: string[]): string[] {
  const args = argv.slice(2);
  const at = args.indexOf('--');
  const beforeIsCommands = args.slice(0, at).every((arg) => !arg.startsWith('-'));
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
      if (error.exitCode !== 0 && process.env.GITHUB_ACTIONS === 'true')
        (await import('../reporters/github-step.ts')).annotateFatal('USAGE', error.message.replace(/^error: /, ''));
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.configuration;
    }
    if (error instanceof CudamatrixError) {
      process.stderr.write(`error [${error.code}]: ${error.message}\n`);
      // In a GitHub Actions step, also an annotation (the module is loaded only there).
      if (process.env.GITHUB_ACTIONS === 'true') (await import('../reporters/github-step.ts')).annotateFatal(error.code, error.message);
      return exitCodeFor(error);
    }
    if ((error as NodeJS.ErrnoException)?.syscall === 'uv_cwd') {
      process.stderr.write(
        'error [USAGE]: the current folder no longer exists (it was removed or moved); cd to one that does and run again\n',
      );
      return ExitCode.configuration;
    }
    const e = error as Error;
    process.stderr.write(
      `internal error: ${e?.message ?? String(error)}\nThis is a bug in cudamatrix; run again with CUDAMATRIX_DEBUG=1 for the stack trace and report it.\n`,
    );
    if (process.env.CUDAMATRIX_DEBUG) process.stderr.write(`${e?.stack ?? ''}\n`);
    return ExitCode.infrastructure;
  }
}
