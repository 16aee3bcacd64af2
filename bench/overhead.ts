/**
 * bench/overhead: what cudamatrix adds per target beyond the probe's own time.
 *
 * Peer: the same cudaprobe binary run directly, `cudaprobe run sysinfo`, 50 times in a row
 * (spawned from Node, no cudamatrix). Measured: `cudamatrix run` on a matrix of 50 local
 * targets, each running sysinfo, in-process (executePlan, every reporter on) and as the CLI
 * process (which adds Node and tsx start-up once per run). Both in the same process, alternated,
 * several rounds; the table shows medians. Overhead per target = (cudamatrix - peer) / 50.
 *
 *   pnpm bench:overhead [--targets 50] [--rounds 5]
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseMatrix } from '../matrix/load.ts';
import { planCells } from '../run/plan.ts';
import { buildProbe } from '../probes/build.ts';
import { executePlan } from '../run/execute.ts';
import { summarize } from '../results/verdicts.ts';
import { Reporters } from '../results/reporter.ts';
import { jsonReporter } from '../results/reporters/json.ts';
import { junitReporter } from '../results/reporters/junit.ts';
import { consoleReporter, formatTable } from '../results/reporters/console.ts';
import { nodeArch } from '../runners/local.ts';
import { cliEntry } from '../test/cli.ts';
import { tempDir } from '../test/helpers.ts';

const { values } = parseArgs({ options: { targets: { type: 'string', default: '50' }, rounds: { type: 'string', default: '5' } } });
const targets = Number(values.targets);
const rounds = Number(values.rounds);

const probe = await buildProbe({ platform: 'linux', arch: nodeArch() });
const work = tempDir('cm-bench-');
const matrixFile = path.join(work, 'matrix.yaml');
const matrixText = `version: 1\nconcurrency: 1\ntargets:\n${Array.from({ length: targets }, (_, i) => `  - name: t${i}`).join('\n')}\n`;
writeFileSync(matrixFile, matrixText);

function peer(): number {
  const t0 = performance.now();
  for (let i = 0; i < targets; i++) {
    const r = spawnSync(probe.path, ['run', 'sysinfo', '--device', '0'], { encoding: 'utf8' });
    if (r.status !== 0 && r.status !== 3) throw new Error(`cudaprobe exited ${r.status}`);
  }
  return performance.now() - t0;
}

async function inProcess(): Promise<number> {
  const t0 = performance.now();
  const plan = planCells(parseMatrix(matrixText, matrixFile));
  const sink = { write: () => true };
  const reporters = new Reporters([consoleReporter({ out: sink }), junitReporter((d) => path.join(d, 'junit.xml')), jsonReporter((d) => path.join(d, 'summary.json'))]);
  const run = await executePlan(plan, { runsDir: path.join(work, 'runs'), onEvent: (e) => reporters.event(e) });
  await reporters.end(summarize(run.events), { runDir: run.runDir, eventsFile: run.eventsFile, strict: false });
  return performance.now() - t0;
}

function cliProcess(): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', cliEntry, 'run', '-m', matrixFile, '--results-dir', path.join(work, 'runs'), '--junit', path.join(work, 'junit.xml'), '--quiet'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cudamatrix exited ${r.status}: ${r.stderr}`);
  return performance.now() - t0;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const samples = { peer: [] as number[], inProcess: [] as number[], cli: [] as number[] };
await inProcess(); // warm-up: module loading, first spawn
for (let i = 0; i < rounds; i++) {
  samples.peer.push(peer());
  samples.inProcess.push(await inProcess());
  samples.cli.push(cliProcess());
}
const p = median(samples.peer);
const rows = [
  ['cudaprobe alone (peer)', p, 0],
  ['cudamatrix run, in-process', median(samples.inProcess), (median(samples.inProcess) - p) / targets],
  ['cudamatrix run, CLI process', median(samples.cli), (median(samples.cli) - p) / targets],
] as const;
console.log(`\n${targets} local targets x sysinfo, median of ${rounds} rounds (${process.version}, ${process.platform}/${process.arch})\n`);
console.log(
  formatTable(
    ['what', 'total ms', 'ms per target', 'overhead ms per target', 'ratio to peer'],
    rows.map(([what, total, overhead]) => [what, total.toFixed(0), (total / targets).toFixed(1), overhead.toFixed(1), (total / p).toFixed(2)]),
  ),
);
const worst = Math.max(rows[1][2], rows[2][2]);
console.log(`\noverhead per target: ${worst.toFixed(1)} ms (budget 100 ms): ${worst < 100 ? 'within budget' : 'OVER BUDGET'}`);
const outDir = path.join(import.meta.dirname, 'out');
mkdirSync(outDir, { recursive: true });
writeFileSync(
  path.join(outDir, 'overhead.json'),
  `${JSON.stringify({ targets, rounds, node: process.version, samplesMs: samples, medianMs: Object.fromEntries(rows.map(([w, t]) => [w, t])), overheadPerTargetMs: worst }, null, 2)}\n`,
);
process.exitCode = worst < 100 ? 0 : 1;
