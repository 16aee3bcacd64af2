/**
 * The built-in reporters, by name, as `--reporter NAME[:PATH]` selects them. A reporter with a
 * path writes there ("-" is stdout); junit, json and nhc without a path write to stdout, and the
 * console then moves to stderr so that stdout stays machine-readable.
 */
import { isStdout } from '../core/fs.ts';
import type { Reporter } from './reporter.ts';
import { consoleReporter } from './console.ts';
import { jsonReporter } from './json.ts';
import { junitReporter } from './junit.ts';
import { nhcReporter } from './nhc.ts';

export interface ReporterChoice {
  name: ReporterName;
  /** Where a file reporter writes; "-" is stdout. */
  path?: string;
}

export interface ReporterEnv {
  quiet: boolean;
  /** Every target and cell on the console, however many (no collapsing). */
  verbose?: boolean;
}

const builtIn = {
  console: (_choice: ReporterChoice, env: ReporterEnv & { toStderr: boolean }): Reporter =>
    consoleReporter({ out: env.toStderr ? process.stderr : process.stdout, quiet: env.quiet, verbose: env.verbose }),
  junit: (choice: ReporterChoice): Reporter => junitReporter(choice.path ?? '-'),
  json: (choice: ReporterChoice): Reporter => jsonReporter(choice.path ?? '-'),
  nhc: (choice: ReporterChoice): Reporter => nhcReporter(choice.path ?? '-'),
} as const;

export type ReporterName = keyof typeof builtIn;
export const reporterNames = Object.keys(builtIn) as ReporterName[];

/** Whether a choice prints to stdout. */
export function usesStdout(choice: ReporterChoice): boolean {
  return choice.name !== 'console' && (choice.path === undefined || isStdout(choice.path));
}

export function createReporters(choices: ReporterChoice[], env: ReporterEnv): Reporter[] {
  const toStderr = choices.some(usesStdout);
  return choices.map((choice) => builtIn[choice.name](choice, { ...env, toStderr }));
}
