import { setMaxListeners } from 'node:events';
import path from 'node:path';
import { planCells } from '../matrix/plan.ts';
import { executePlan } from '../results/execute.ts';
import { consoleReporter } from '../results/reporters/console.ts';
import { jsonReporter } from '../results/reporters/json.ts';
import { junitReporter } from '../results/reporters/junit.ts';
import type { Reporter } from '../results/reporter.ts';
import { exitCodeOf } from '../results/verdicts.ts';
import { loadMatrixArg } from './matrix-arg.ts';

export interface RunOptions {
  matrix?: string;
  target?: string[];
  probe?: string[];
  shard?: string;
  strict: boolean;
  quick: boolean;
  acceptNew: boolean;
  junit: string;
  json?: string;
  resultsDir: string;
  concurrency?: number;
  quiet: boolean;
}

export async function runCommand(opts: RunOptions): Promise<number> {
  const matrix = await loadMatrixArg(opts.matrix);
  const plan = planCells(matrix, { targets: opts.target, probes: opts.probe, shard: opts.shard });

  // First Ctrl-C: stop the running probes, then write results for what finished.
  // Second Ctrl-C: leave at once.
  const controller = new AbortController();
  // Every running probe listens for the abort: many at once is expected, not a leak.
  setMaxListeners(0, controller.signal);
  const onSigint = (): void => {
    if (controller.signal.aborted) process.exit(130);
    process.stderr.write('\ninterrupted: stopping running probes and writing results (Ctrl-C again to quit at once)\n');
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);

  const console = consoleReporter();
  const reporters: Reporter[] = [
    opts.quiet ? { name: 'console', onEnd: console.onEnd } : console,
    junitReporter((runDir) => path.join(runDir, 'junit.xml')),
    jsonReporter((runDir) => path.join(runDir, 'summary.json')),
    junitReporter(opts.junit),
  ];
  if (opts.json) reporters.push(jsonReporter(opts.json));
  try {
    const { summary } = await executePlan(plan, {
      runsDir: opts.resultsDir,
      strict: opts.strict,
      quick: opts.quick,
      acceptNewHostKeys: opts.acceptNew,
      concurrency: opts.concurrency,
      signal: controller.signal,
      reporters,
      onProgress: (m) => process.stderr.write(`${m}\n`),
    });
    return exitCodeOf(summary, { strict: opts.strict });
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
  }
}
