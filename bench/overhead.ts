/**
 * bench/overhead: what cudamatrix adds per target beyond the probe's own time.
 *
 * Like with like: both sides run `cudaprobe run sysinfo --device 0` once per target, `--targets`
 * times (default 50), one after another.
 * - Peer: the same cudaprobe binary spawned directly from Node, no cudamatrix.
 * - cudamatrix: `cudamatrix run` on a matrix of that many local targets with `probes: [sysinfo]`
 *   and `concurrency: 1` (cudamatrix runs sysinfo first on every target, and nothing else
 *   here), in-process (executePlan, every reporter on) and as the CLI process (which adds Node
 *   and tsx start-up once per run).
 * All in the same process, alternated, several rounds after a warm-up; the table shows medians
 * and says what each side ran. Overhead per target = (cudamatrix - peer) / targets; the budget
 * is 100 ms (exit 1 over it, except with --tiny).
 *
 * Then a row per hop kind, in-process: `--hop-targets` targets (default 10) each running every
 * probe (the default matrix's `probes: all`; the no-driver path here), in a WSL distribution
 * (`wsl`, through the stand-in wsl.exe of the tests: no Windows machine is reachable here), in
 * one behind an SSH host (`[ssh, wsl]`, the loopback sshd), and on a node of a Slurm cluster
 * (`slurm`, the tests' real slurmctld and slurmd on loopback, test/slurm/slurm-lab.ts: a job
 * per target), each against the same targets on `local` in the same rounds. The per-cell overhead of a hop = (its time - local's) / cells /
 * hops, where a target's connection (listing the distributions, starting the session's agent)
 * is shared by its cells as in a real run; budget +50 ms per hop per cell. The per-target
 * column shows the same difference per target. Skipped, with the reason, without root and the
 * stand-in's tools, sshd or Slurm's daemons and tools. `--hops` picks the kinds (all by default).
 *
 *   pnpm bench:overhead [--targets 50] [--hop-targets 10] [--hops wsl,ssh-wsl,slurm] [--rounds 5] [--out FILE] [--tiny]
 *
 * --tiny: 2 targets (1 for the hop rows), 1 round, budget not enforced (for the tests).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseMatrix } from '../matrix/load.ts';
import { planCells } from '../run/plan.ts';
import { buildProbe } from '../probes/build.ts';
import { executePlan } from '../run/execute.ts';
import { summarize } from '../verdicts/verdicts.ts';
import { Reporters } from '../reporters/reporter.ts';
import { jsonReporter } from '../reporters/json.ts';
import { junitReporter } from '../reporters/junit.ts';
import { formatTable } from '../core/text-table.ts';
import { consoleReporter } from '../reporters/console.ts';
import { nodeArch } from '../transports/local.ts';
import { cliEntry, tsxLoader } from '../test/cli.ts';
import { findOnPath, tempDir } from '../test/helpers.ts';
import { sshdAvailable, startSshd, type Sshd } from '../test/sshd.ts';
import { makeStandinMachine, STANDIN_BIN, STANDIN_TOOLS } from '../test/wsl/wsl-standin/machine.ts';
import { SLURM_LAB_TOOLS, startSlurmLab, type SlurmLab } from '../test/slurm/slurm-lab.ts';
import { median, roundOrder } from './stats.ts';

const { values } = parseArgs({
  options: {
    targets: { type: 'string' },
    'hop-targets': { type: 'string' },
    hops: { type: 'string' },
    rounds: { type: 'string' },
    out: { type: 'string' },
    tiny: { type: 'boolean', default: false },
  },
});
const tiny = values.tiny!;
const targets = Number(values.targets ?? (tiny ? 2 : 50));
const rounds = Number(values.rounds ?? (tiny ? 1 : 5));
const hopTargetCount = Number(values['hop-targets'] ?? (tiny ? 1 : 10));
if (![targets, rounds, hopTargetCount].every((count) => Number.isInteger(count) && count >= 1)) {
  console.error('bench/overhead: --targets, --hop-targets and --rounds take whole numbers >= 1');
  process.exit(2);
}
const HOP_KINDS = ['wsl', 'ssh-wsl', 'slurm'];
const hopKinds = (values.hops ?? HOP_KINDS.join(',')).split(',').filter(Boolean);
if (hopKinds.some((kind) => !HOP_KINDS.includes(kind))) {
  console.error(`bench/overhead: --hops takes a comma-separated list of ${HOP_KINDS.join(', ')}`);
  process.exit(2);
}

const probe = await buildProbe({ platform: 'linux', arch: nodeArch() });
const work = tempDir('cm-bench-');
const matrixFile = path.join(work, 'matrix.yaml');
const matrixText = `version: 1\nconcurrency: 1\ndefaults: {probes: [sysinfo]}\ntargets:\n${Array.from({ length: targets }, (_, i) => `  - name: t${i}`).join('\n')}\n`;
writeFileSync(matrixFile, matrixText);

const probeArgv = ['run', 'sysinfo', '--device', '0'];
function peer(): number {
  const t0 = performance.now();
  for (let i = 0; i < targets; i++) {
    const result = spawnSync(probe.path, probeArgv, { encoding: 'utf8' });
    if (result.status !== 0 && result.status !== 3) throw new Error(`cudaprobe exited ${result.status}`);
  }
  return performance.now() - t0;
}

/** How many probe runs (cells) the last in-process run made: the peer must make as many. */
let cudamatrixProbeRuns: Record<string, number> = {};
/** How many cells the last in-process run ended. */
let lastCells = 0;

async function inProcess(): Promise<number> {
  return runMatrixText(matrixText);
}

/** One in-process run of a matrix (executePlan, every reporter on); its wall time in ms. */
async function runMatrixText(text: string): Promise<number> {
  const t0 = performance.now();
  const plan = planCells(parseMatrix(text, matrixFile));
  const sink = { write: () => true };
  const reporters = new Reporters([
    consoleReporter({ out: sink }),
    junitReporter((runDir) => path.join(runDir, 'junit.xml')),
    jsonReporter((runDir) => path.join(runDir, 'summary.json')),
  ]);
  const run = await executePlan(plan, { runsDir: path.join(work, 'runs'), onEvent: (e) => reporters.event(e) });
  await reporters.end(summarize(run.events), { runDir: run.runDir, eventsFile: run.eventsFile, strict: false });
  const ms = performance.now() - t0;
  const failed = run.events.filter((e) => e.type === 'target-error' || (e.type === 'cell-end' && e.status === 'error'));
  if (failed.length) throw new Error(`the run failed: ${JSON.stringify(failed[0]).slice(0, 400)}`);
  lastCells = run.events.filter((e) => e.type === 'cell-end').length;
  if (text === matrixText) {
    cudamatrixProbeRuns = {};
    for (const e of run.events) if (e.type === 'cell-end') cudamatrixProbeRuns[e.probe] = (cudamatrixProbeRuns[e.probe] ?? 0) + 1;
  }
  return ms;
}

function cliProcess(): number {
  const t0 = performance.now();
  const result = spawnSync(
    process.execPath,
    [
      '--import',
      tsxLoader,
      cliEntry,
      'run',
      '-m',
      matrixFile,
      '--results-dir',
      path.join(work, 'runs'),
      '--junit',
      path.join(work, 'junit.xml'),
      '--quiet',
    ],
    {
      encoding: 'utf8',
    },
  );
  if (result.status !== 0) throw new Error(`cudamatrix exited ${result.status}: ${result.stderr}`);
  return performance.now() - t0;
}

const samples = { peer: [] as number[], inProcess: [] as number[], cli: [] as number[] };
const hops = await hopTargets(hopTargetCount);
const sides = {
  peer: async () => samples.peer.push(peer()),
  inProcess: async () => samples.inProcess.push(await inProcess()),
  cli: async () => samples.cli.push(cliProcess()),
};
if (!tiny) {
  // Warm-up, one of each: module loading, the first spawns, the page cache.
  peer();
  await inProcess();
  cliProcess();
}
for (let i = 0; i < rounds; i++) {
  for (const side of roundOrder(i, ['peer', 'inProcess', 'cli'] as const)) await sides[side]();
}
// The hop rows: each hop kind against local, alternated, after a warm-up of each.
const hopSamples: Record<string, number[]> = Object.fromEntries(Object.keys(hops.matrices).map((k) => [k, []]));
const hopCells: Record<string, number> = {};
const kinds = Object.keys(hopSamples);
if (kinds.length > 1) {
  if (!tiny) for (const k of kinds) await runMatrixText(hops.matrices[k]!);
  for (let i = 0; i < rounds; i++) {
    for (const k of roundOrder(i, kinds)) {
      hopSamples[k]!.push(await runMatrixText(hops.matrices[k]!));
      hopCells[k] = lastCells;
    }
  }
}
await hops.stop();
const ran = Object.entries(cudamatrixProbeRuns)
  .map(([probeName, count]) => `${probeName} x ${count}`)
  .join(', ');
const likeWithLike = ran === `sysinfo x ${targets}`;
const peerMs = median(samples.peer);
const rows = [
  ['cudaprobe alone (peer)', `cudaprobe ${probeArgv.join(' ')}, ${targets} times in a row`, peerMs, 0],
  [
    'cudamatrix run, in-process',
    `executePlan + reporters: ${targets} local targets, probes [sysinfo] (${ran})`,
    median(samples.inProcess),
    (median(samples.inProcess) - peerMs) / targets,
  ],
  [
    'cudamatrix run, CLI process',
    `node --import tsx cli/entry.ts run (same matrix), one process`,
    median(samples.cli),
    (median(samples.cli) - peerMs) / targets,
  ],
] as const;
console.log(
  `\n${targets} local targets x sysinfo, median of ${rounds} alternated round(s) (${process.version}, ${process.platform}/${process.arch})\n`,
);
console.log(
  formatTable(
    ['what', 'what it ran', 'total ms', 'ms per target', 'overhead ms per target', 'ratio to peer'],
    rows.map(([what, ranText, total, overhead]) => [
      what,
      ranText,
      total.toFixed(0),
      (total / targets).toFixed(1),
      overhead.toFixed(1),
      (total / peerMs).toFixed(2),
    ]),
  ),
);
if (!likeWithLike) console.log(`\nNOT LIKE WITH LIKE: cudamatrix ran ${ran}, the peer sysinfo x ${targets}`);
const worst = Math.max(rows[1][3], rows[2][3]);
const within = worst < 100;
console.log(
  `\noverhead per target: ${worst.toFixed(1)} ms (budget 100 ms): ${within ? 'within budget' : 'OVER BUDGET'}${tiny ? ' (not enforced: --tiny)' : ''}`,
);
// Per hop: (median of the kind - median of local) / cells / hops.
const hopCount: Record<string, number> = { wsl: 1, 'ssh-wsl': 2, slurm: 1 };
const hopRows =
  kinds.length > 1
    ? kinds
        .filter((k) => k !== 'local')
        .map((k) => {
          const kindMs = median(hopSamples[k]!);
          const extra = kindMs - median(hopSamples.local!);
          if (hopCells[k] !== hopCells.local) throw new Error(`${k} ran ${hopCells[k]} cells, local ${hopCells.local}: not like with like`);
          const perHop = extra / hopCells[k]! / hopCount[k]!;
          return {
            kind: k,
            medianMs: kindMs,
            cells: hopCells[k]!,
            perHopPerTargetMs: extra / hopTargetCount / hopCount[k]!,
            perHopPerCellMs: perHop,
            within: perHop <= 50,
          };
        })
    : [];
if (hopRows.length) {
  console.log(
    `\nper hop kind, in-process, ${hopTargetCount} target(s) x every probe (${hopCells.local} cells), median of ${rounds} alternated round(s) against local in the same rounds (wsl: the tests' stand-in wsl.exe; slurm: the tests' slurmctld and slurmd on loopback)\n`,
  );
  console.log(
    formatTable(
      ['transport', 'total ms', 'overhead ms per hop per target', 'overhead ms per hop per cell', 'budget'],
      [
        ['local', median(hopSamples.local!).toFixed(0), '', '', ''],
        ...hopRows.map((hopRow) => [
          hopRow.kind === 'ssh-wsl' ? '[ssh, wsl]' : hopRow.kind,
          hopRow.medianMs.toFixed(0),
          hopRow.perHopPerTargetMs.toFixed(1),
          hopRow.perHopPerCellMs.toFixed(1),
          `+50 ms per cell: ${hopRow.within ? 'ok' : 'OVER BUDGET'}`,
        ]),
      ],
    ),
  );
}
for (const why of hops.skipped) console.log(`hop rows: ${why}`);
const hopsWithin = hopRows.every((hopRow) => hopRow.within);
const out = path.resolve(values.out ?? path.join(import.meta.dirname, 'out', 'overhead.json'));
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify(
    {
      bench: 'overhead',
      targets,
      rounds,
      tiny,
      node: process.version,
      ran: { peer: `sysinfo x ${targets}`, cudamatrix: cudamatrixProbeRuns },
      likeWithLike,
      samplesMs: samples,
      medianMs: Object.fromEntries(rows.map(([what, , totalMs]) => [what, totalMs])),
      overheadPerTargetMs: worst,
      hops: {
        targets: hopTargetCount,
        cells: hopCells,
        samplesMs: hopSamples,
        rows: hopRows,
        skipped: hops.skipped,
        budgetPerHopPerCellMs: 50,
      },
      budgetMs: 100,
      enforced: !tiny,
    },
    null,
    2,
  )}\n`,
);
process.exitCode = !likeWithLike || ((!within || !hopsWithin) && !tiny) ? 1 : 0;

/**
 * The matrices of the hop rows: `count` targets each in a stand-in WSL distribution, first hop
 * and behind the loopback sshd. What cannot be set up here is skipped, with why.
 */
async function hopTargets(count: number): Promise<{ matrices: Record<string, string>; skipped: string[]; stop(): Promise<void> }> {
  const skipped: string[] = [];
  const targetsOf = (transport: unknown) =>
    `version: 1\nconcurrency: 1\ndefaults: {probes: all}\ntargets:\n${Array.from({ length: count }, (_, i) => `  - name: t${i}\n    transport: ${JSON.stringify(transport)}`).join('\n')}\n`;
  const matrices: Record<string, string> = { local: targetsOf({ kind: 'local' }) };
  const root = process.getuid?.() === 0;
  let sshd: Sshd | undefined;
  let lab: SlurmLab | undefined;
  const wanted = (kind: string) => hopKinds.includes(kind);
  if (wanted('wsl') || wanted('ssh-wsl')) {
    const missing = Object.keys(STANDIN_TOOLS).filter((tool) => !findOnPath(tool));
    if (!root || missing.length) {
      skipped.push(
        `wsl and [ssh, wsl] skipped: the WSL stand-in needs root and ${Object.keys(STANDIN_TOOLS).join(', ')}${missing.length ? ` (missing: ${missing.join(', ')})` : ''}`,
      );
    } else {
      const machine = makeStandinMachine([{ name: 'Bench', version: 2, default: true }], { libsOf: probe.path });
      // This process runs the first-hop wsl.exe: the stand-in goes on its PATH.
      Object.assign(process.env, machine.env());
      if (wanted('wsl')) matrices.wsl = targetsOf({ kind: 'wsl', distribution: 'Bench' });
      if (wanted('ssh-wsl') && sshdAvailable()) {
        const pathDirs = [
          STANDIN_BIN,
          path.dirname(process.execPath),
          '/usr/local/sbin',
          '/usr/local/bin',
          '/usr/sbin',
          '/usr/bin',
          '/sbin',
          '/bin',
        ];
        sshd = await startSshd(1, [`SetEnv PATH=${pathDirs.join(':')} CUDAMATRIX_WSL_STANDIN_ROOT=${machine.root}`]);
        const ssh = {
          kind: 'ssh',
          host: '127.0.0.1',
          port: sshd.ports[0],
          identityFile: sshd.key,
          knownHosts: sshd.knownHosts,
          sshConfig: false,
          agent: false,
        };
        matrices['ssh-wsl'] = targetsOf([ssh, { kind: 'wsl', distribution: 'Bench' }]);
      } else if (wanted('ssh-wsl')) {
        skipped.push('[ssh, wsl] skipped: needs OpenSSH sshd and root');
      }
    }
  }
  if (wanted('slurm')) {
    const missing = Object.keys(SLURM_LAB_TOOLS).filter((tool) => !findOnPath(tool));
    if (!root || missing.length) {
      skipped.push(
        `slurm skipped: the Slurm lab needs root and ${Object.keys(SLURM_LAB_TOOLS).join(', ')}${missing.length ? ` (missing: ${missing.join(', ')})` : ''}`,
      );
    } else {
      lab = await startSlurmLab(1);
      // salloc, srun and squeue, run by this process, find the lab by it.
      process.env.SLURM_CONF = lab.conf;
      matrices.slurm = targetsOf({ kind: 'slurm', queueWait: 120 });
    }
  }
  return {
    matrices,
    skipped,
    stop: async () => {
      await sshd?.stop();
      // As the tests' afterEach: what the jobs leave goes within a few seconds (the agent's watcher
      // ends its last "sleep 1"); then the lab stops, and nothing of a job may be left.
      await lab?.settled(30_000);
      const left = await lab?.stop();
      if (left?.length) throw new Error(`the Slurm lab's jobs left processes behind: ${left.join('; ')}`);
    },
  };
}
