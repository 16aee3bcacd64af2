/**
 * bench/startup: how long the CLI takes to start, against bare Node.js, hyperfine-style: every
 * command once per round, in an order rotated each round (so that none always runs first or
 * after the same neighbour), after warm-up runs of each; medians and spreads over the rounds.
 *
 *   node -e 0                        bare Node.js, the floor
 *   node CLI --version
 *   node CLI plan                    on the embedded default matrix
 *   node CLI probes list
 *
 * Each is spawned without a shell (spawnSync of this same node binary, stdout to /dev/null) and
 * timed with performance.now() around the spawn. The budget: --version and plan within 60 ms of
 * bare Node's median; over it, OVER BUDGET and exit 1 (not with --tiny, which only runs the code
 * path: 2 rounds after 1 warm-up).
 *
 *   pnpm bench:startup [--cli FILE] [--rounds 20] [--warmup 3] [--out FILE] [--tiny]
 *
 * --cli FILE: the CLI to measure, a JavaScript file run with this node (an installed package's
 * bin script). Default: the built CLI of this checkout (pnpm build): bin/cudamatrix.cjs, which runs
 * dist/cudamatrix.cjs (bench/cli-file.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../core/package-root.ts';
import { cliFile } from './cli-file.ts';
import { formatTable } from '../core/text-table.ts';
import { formatSpread, roundOrder, spread, type Spread } from './stats.ts';

const BUDGET_MS = 60;

function usage(message: string): never {
  console.error(`bench/startup: ${message}`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    options: {
      cli: { type: 'string' },
      rounds: { type: 'string' },
      warmup: { type: 'string' },
      out: { type: 'string' },
      tiny: { type: 'boolean', default: false },
    },
  });
} catch (error) {
  usage((error as Error).message);
}
const { values } = parsed;
const tiny = values.tiny!;
const rounds = Number(values.rounds ?? (tiny ? 2 : 20));
const warmup = Number(values.warmup ?? (tiny ? 1 : 3));
if (!Number.isInteger(rounds) || rounds < 1 || !Number.isInteger(warmup) || warmup < 0)
  usage('--rounds takes a whole number >= 1 and --warmup one >= 0');

const cli = cliFile(values.cli, usage);

interface Command {
  key: string;
  label: string;
  args: string[];
  budgeted: boolean;
}
const commands: Command[] = [
  { key: 'bare', label: 'node -e 0', args: ['-e', '0'], budgeted: false },
  { key: 'version', label: 'cudamatrix --version', args: [cli, '--version'], budgeted: true },
  { key: 'plan', label: 'cudamatrix plan (default matrix)', args: [cli, 'plan'], budgeted: true },
  { key: 'probesList', label: 'cudamatrix probes list', args: [cli, 'probes', 'list'], budgeted: false },
];

// The commands run in a folder of their own, so that nothing they might write lands in the checkout.
const cwd = mkdtempSync(path.join(tmpdir(), 'cm-bench-startup-'));
process.once('exit', () => rmSync(cwd, { recursive: true, force: true }));
const env = { ...process.env, NO_COLOR: '1' };

function time(command: Command): number {
  const t0 = performance.now();
  const result = spawnSync(process.execPath, command.args, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (result.error || result.status !== 0) {
    console.error(
      `bench/startup: \`${command.label}\` (${process.execPath} ${command.args.join(' ')}) failed (${result.error?.message ?? `exit ${result.status}`}):\n${result.stderr.trim().slice(-2000)}`,
    );
    process.exit(1);
  }
  return ms;
}

const samples: Record<string, number[]> = Object.fromEntries(commands.map((command) => [command.key, []]));
for (let i = 0; i < warmup; i++) for (const command of roundOrder(i, commands)) time(command);
for (let i = 0; i < rounds; i++) for (const command of roundOrder(i, commands)) samples[command.key]!.push(time(command));

const bare = spread(samples.bare!);
interface Result {
  key: string;
  command: string;
  ms: Spread;
  deltaMs: number;
  budgetMs: number | null;
  over: boolean;
}
const results: Result[] = commands.map((command) => {
  const timing = spread(samples[command.key]!);
  const deltaMs = timing.median - bare.median;
  return {
    key: command.key,
    command: command.label,
    ms: timing,
    deltaMs,
    budgetMs: command.budgeted ? BUDGET_MS : null,
    over: command.budgeted && deltaMs > BUDGET_MS,
  };
});
console.log(
  `\nstart-up of ${path.relative(process.cwd(), cli) || cli} against bare Node.js ${process.version} (${process.platform}/${process.arch}), median of ${rounds} alternated round(s) after ${warmup} warm-up round(s)\n`,
);
console.log(
  formatTable(
    ['command', 'median ms', 'min-max ms', 'spread', 'vs bare node', 'budget'],
    results.map((result) => [
      result.command,
      result.ms.median.toFixed(1),
      `${result.ms.min.toFixed(1)}-${result.ms.max.toFixed(1)}`,
      formatSpread(result.ms),
      result.key === 'bare' ? '' : `+${result.deltaMs.toFixed(1)} ms`,
      result.budgetMs === null ? '' : `+${result.budgetMs} ms: ${result.over ? 'OVER BUDGET' : 'ok'}`,
    ]),
  ),
);
const over = results.filter((result) => result.over);
console.log(
  over.length
    ? `\nOVER BUDGET: ${over.map((result) => `${result.command} +${result.deltaMs.toFixed(1)} ms`).join(', ')} (budget +${BUDGET_MS} ms over bare node)${tiny ? ' (not enforced: --tiny)' : ''}`
    : `\nwithin budget: --version and plan within +${BUDGET_MS} ms of bare node`,
);
const out = path.resolve(values.out ?? path.join(packageRoot(), 'bench', 'out', 'startup.json'));
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify({ bench: 'startup', node: process.version, cli, rounds, warmup, tiny, budgetMs: BUDGET_MS, enforced: !tiny, samplesMs: samples, results, overBudget: over.map((result) => result.key) }, null, 2)}\n`,
);
process.exitCode = over.length && !tiny ? 1 : 0;
