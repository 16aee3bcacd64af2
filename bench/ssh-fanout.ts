/**
 * bench/ssh-fanout: `cudaprobe run sysinfo` on 32 SSH targets on loopback (sshd listening on 32
 * ports, each port a target with its own host-key entry, its own probe cache and temp folder on
 * the "remote" side: SetEnv XDG_CACHE_HOME/TMPDIR per port), through cudamatrix, against
 * OpenSSH's own client doing the same work in parallel, in the same run:
 *
 *   warm  cudamatrix CLI (probe already in every target's cache)
 *           against  xargs -P 32 ssh ... cudaprobe run sysinfo   (binary already in place)
 *   cold  cudamatrix CLI with every target's cache emptied first (the probe is uploaded)
 *           against  xargs -P 32 sh -c 'scp cudaprobe TARGET:fresh-folder && ssh TARGET it run sysinfo'
 *
 * plus cudamatrix in-process (executePlan, this checkout's sources), warm, for information.
 * One warm-up run of each, then --rounds rounds (default 5) with the five runs in an order rotated
 * each round; medians and spreads. Budgets: warm CLI <= 1.0 x OpenSSH warm, cold CLI <= 1.5 x
 * scp + run; warm runs must upload nothing and cold runs must upload to every target. Over a
 * budget: OVER BUDGET and exit 1 (with --tiny the budgets are printed, not enforced).
 *
 *   pnpm bench:ssh-fanout [--targets 32] [--rounds 5] [--cli FILE] [--out FILE] [--port-base N] [--tiny]
 *
 * --cli FILE: the cudamatrix to run as a child process (node FILE run ...): an installed
 * package's bin script. Default: the built CLI of this checkout (bin/cudamatrix.cjs over
 * dist/cudamatrix.cjs; none: run pnpm build; bench/cli-file.ts). --tiny: 2 targets, 1 round.
 * Needs sshd, ssh, scp, xargs, and root (sshd's privilege separation).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../core/package-root.ts';
import { cliFile } from './cli-file.ts';
import { readEventLog, type TargetReadyEvent } from '../events/events.ts';
import { parseMatrix } from '../matrix/load.ts';
import { planCells } from '../run/plan.ts';
import { buildProbe } from '../probes/build.ts';
import { executePlan } from '../run/execute.ts';
import { summarize } from '../verdicts/verdicts.ts';
import { formatTable } from '../core/text-table.ts';
import { nodeArch } from '../transports/local.ts';
import { tempDir } from '../test/helpers.ts';
import { sshdAvailable, startSshd } from '../test/sshd.ts';
import { portBaseOption } from './sshd.ts';
import { formatSpread, median, roundOrder, spread } from './stats.ts';

function usage(message: string): never {
  console.error(`bench/ssh-fanout: ${message}`);
  process.exit(2);
}
let parsed;
try {
  parsed = parseArgs({
    options: {
      targets: { type: 'string' },
      rounds: { type: 'string' },
      cli: { type: 'string' },
      out: { type: 'string' },
      'port-base': { type: 'string' },
      tiny: { type: 'boolean', default: false },
    },
  });
} catch (error) {
  usage((error as Error).message);
}
const { values } = parsed;
const tiny = values.tiny!;
const targetCount = Number(values.targets ?? (tiny ? 2 : 32));
const rounds = Number(values.rounds ?? (tiny ? 1 : 5));
if (!(Number.isInteger(targetCount) && targetCount >= 1 && Number.isInteger(rounds) && rounds >= 1))
  usage('--targets and --rounds take whole numbers >= 1');
const portBase = portBaseOption(values['port-base'], targetCount);
const WARM_BUDGET = 1.0;
const COLD_BUDGET = 1.5;

const cli = cliFile(values.cli, usage);
if (!sshdAvailable()) usage('needs OpenSSH sshd and root (apt-get install openssh-server openssh-client; run as root)');

const work = tempDir('cm-fanout-');
/** The "remote" side of target i: its own probe cache and temp folder. */
const remote = (port: number) => path.join(work, 'remote', String(port));
const sshd = await startSshd(targetCount, [], {
  portBase,
  perPort: (port) => [`SetEnv XDG_CACHE_HOME=${path.join(remote(port), 'cache')} TMPDIR=${path.join(remote(port), 'tmp')}`],
});
for (const port of sshd.ports) mkdirSync(path.join(remote(port), 'tmp'), { recursive: true });

const probe = await buildProbe({ platform: 'linux', arch: nodeArch() });
// The baseline's binary, already in place on the "remote" (the same machine).
const placed = path.join(work, 'cudaprobe');
copyFileSync(probe.path, placed);
spawnSync('chmod', ['755', placed]);

const matrixText = [
  'version: 1',
  `concurrency: ${targetCount}`,
  'defaults: {probes: [sysinfo]}',
  'targets:',
  ...sshd.ports.map(
    (port, i) =>
      `  - name: t${i}\n    transport: {kind: ssh, host: 127.0.0.1, port: ${port}, identityFile: ${sshd.key}, knownHosts: ${sshd.knownHosts}, sshConfig: false, agent: false, shell: posix}`,
  ),
].join('\n');
const matrixFile = path.join(work, 'matrix.yaml');
writeFileSync(matrixFile, `${matrixText}\n`);

// ---- OpenSSH ---------------------------------------------------------------------------------

const sshOptions = `-i ${sshd.key} -o UserKnownHostsFile=${sshd.knownHosts} -o StrictHostKeyChecking=yes -o BatchMode=yes -o IdentitiesOnly=yes -o LogLevel=ERROR`;
// Per target (its port is $1). cudaprobe's exit 3 (no GPU: everything skipped) is a run, as for cudamatrix.
const warmScript = path.join(work, 'openssh-warm.sh');
writeFileSync(
  warmScript,
  `ssh -p "$1" ${sshOptions} root@127.0.0.1 ${placed} run sysinfo >/dev/null\nc=$?; [ $c -eq 3 ] && c=0; exit $c\n`,
);
const coldScript = path.join(work, 'openssh-cold.sh');
writeFileSync(
  coldScript,
  `scp -q -P "$1" ${sshOptions} ${placed} "root@127.0.0.1:$COLD_DIR/$1-cudaprobe" || exit 1\n` +
    `ssh -p "$1" ${sshOptions} root@127.0.0.1 "$COLD_DIR/$1-cudaprobe" run sysinfo >/dev/null\nc=$?; [ $c -eq 3 ] && c=0; exit $c\n`,
);

let coldRuns = 0;
function openssh(kind: 'warm' | 'cold'): number {
  const env = { ...process.env };
  if (kind === 'cold') {
    // A fresh folder: the binary is not there yet (made here, untimed, as cudamatrix's cache root exists).
    env.COLD_DIR = path.join(work, `openssh-cold-${++coldRuns}`);
    mkdirSync(env.COLD_DIR);
  }
  const script = kind === 'warm' ? warmScript : coldScript;
  const t0 = performance.now();
  const result = spawnSync('xargs', ['-P', String(targetCount), '-n', '1', 'sh', script], {
    input: `${sshd.ports.join('\n')}\n`,
    encoding: 'utf8',
    env,
  });
  const ms = performance.now() - t0;
  if (result.error || result.status !== 0)
    throw new Error(
      `OpenSSH ${kind} (xargs -P ${targetCount} sh ${script}) failed (${result.error?.message ?? `exit ${result.status}`}): ${result.stderr.trim().slice(-1000)}`,
    );
  if (kind === 'cold') rmSync(env.COLD_DIR!, { recursive: true, force: true });
  return ms;
}

// ---- cudamatrix ------------------------------------------------------------------------------

let cliRuns = 0;
const seenProbes = new Map<string, string>();
/** The CLI as a child process; returns its time and how many targets it uploaded the probe to. */
function cudamatrixCli(kind: 'warm' | 'cold'): { ms: number; uploaded: number } {
  if (kind === 'cold') for (const port of sshd.ports) rmSync(path.join(remote(port), 'cache'), { recursive: true, force: true });
  const runsDir = path.join(work, 'runs', `cli-${++cliRuns}-${kind}`);
  const t0 = performance.now();
  const result = spawnSync(
    process.execPath,
    [cli, 'run', '-m', matrixFile, '--results-dir', runsDir, '--junit', path.join(work, 'junit.xml'), '--quiet'],
    {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
    },
  );
  const ms = performance.now() - t0;
  if (result.error || result.status !== 0)
    throw new Error(
      `cudamatrix (${cli}) exited ${result.error?.message ?? result.status}: ${result.stdout.slice(-500)} ${result.stderr.slice(-1000)}`,
    );
  const runDir = path.join(runsDir, readdirSync(runsDir)[0]!);
  const ready = readEventLog(path.join(runDir, 'events.jsonl')).filter((e): e is TargetReadyEvent => e.type === 'target-ready');
  if (ready.length !== targetCount) throw new Error(`cudamatrix reached ${ready.length} of ${targetCount} targets (see ${runDir})`);
  for (const e of ready) seenProbes.set(e.probe.hash, e.probe.path ?? '');
  rmSync(runsDir, { recursive: true, force: true });
  return { ms, uploaded: ready.filter((e) => e.probe.uploaded).length };
}

async function inProcess(): Promise<{ ms: number; uploaded: number }> {
  const t0 = performance.now();
  const run = await executePlan(planCells(parseMatrix(matrixText, matrixFile)), { runsDir: path.join(work, 'runs', 'in-process') });
  const ms = performance.now() - t0;
  const summary = summarize(run.events);
  const ready = summary.targets.map((target) => target.ready);
  if (ready.some((readyEvent) => !readyEvent) || summary.hasInfrastructureError) throw new Error(`a target failed (see ${run.runDir})`);
  rmSync(run.runDir, { recursive: true, force: true });
  return { ms, uploaded: ready.filter((readyEvent) => readyEvent!.probe.uploaded).length };
}

// ---- the rounds ------------------------------------------------------------------------------

const samplesMs = {
  opensshWarm: [] as number[],
  cliWarm: [] as number[],
  inProcessWarm: [] as number[],
  opensshCold: [] as number[],
  cliCold: [] as number[],
};
const uploads = { cliWarm: [] as number[], inProcessWarm: [] as number[], cliCold: [] as number[] };
type Side = keyof typeof samplesMs;
const sides: Record<Side, (record: boolean) => Promise<void>> = {
  opensshWarm: async (record) => void (record && samplesMs.opensshWarm.push(openssh('warm'))),
  opensshCold: async (record) => void (record && samplesMs.opensshCold.push(openssh('cold'))),
  cliWarm: async (record) => {
    const measured = cudamatrixCli('warm');
    if (record) {
      samplesMs.cliWarm.push(measured.ms);
      uploads.cliWarm.push(measured.uploaded);
    }
  },
  cliCold: async (record) => {
    const measured = cudamatrixCli('cold');
    if (record) {
      samplesMs.cliCold.push(measured.ms);
      uploads.cliCold.push(measured.uploaded);
    }
  },
  inProcessWarm: async (record) => {
    const measured = await inProcess();
    if (record) {
      samplesMs.inProcessWarm.push(measured.ms);
      uploads.inProcessWarm.push(measured.uploaded);
    }
  },
};
const order: Side[] = ['opensshWarm', 'cliWarm', 'inProcessWarm', 'opensshCold', 'cliCold'];
const started = performance.now();
try {
  // Warm-up, one of each (the first CLI run also fills the targets' caches for the warm runs).
  for (const side of order) await sides[side](false);
  for (let i = 0; i < rounds; i++) {
    for (const side of roundOrder(i, order)) await sides[side](true);
    if (!tiny) process.stdout.write(`round ${i + 1}/${rounds} done\n`);
  }
} catch (error) {
  await sshd.stop();
  console.error(`bench/ssh-fanout: ${(error as Error).message}`);
  process.exit(1);
}
await sshd.stop();

const warmRatio = median(samplesMs.cliWarm) / median(samplesMs.opensshWarm);
const coldRatio = median(samplesMs.cliCold) / median(samplesMs.opensshCold);
const warmUploadsNone = uploads.cliWarm.every((uploaded) => uploaded === 0);
const coldUploadsAll = uploads.cliCold.every((uploaded) => uploaded === targetCount);
const bytes = (file: string) => (existsSync(file) ? statSync(file).size : NaN);
const cliProbes = [...seenProbes].map(([hash, probeFile]) => ({ hash, bytes: bytes(probeFile) }));
const row = (what: string, xs: number[], base: number[] | null, budget: string) => {
  const sp = spread(xs);
  return [
    what,
    sp.median.toFixed(0),
    `${sp.min.toFixed(0)}-${sp.max.toFixed(0)}`,
    formatSpread(sp),
    base ? (sp.median / median(base)).toFixed(2) : '',
    budget,
  ];
};
const verdict = (ratio: number, budget: number) => `<= ${budget.toFixed(2)}: ${ratio <= budget ? 'ok' : 'OVER BUDGET'}`;
console.log(
  `\n${targetCount} SSH targets on loopback, median of ${rounds} alternated round(s) after one warm-up run each (${process.version}, ${process.platform}/${process.arch}); cudamatrix: node ${path.relative(process.cwd(), cli) || cli}\n`,
);
console.log(
  formatTable(
    ['what', 'median ms', 'min-max ms', 'spread', 'ratio to OpenSSH', 'budget'],
    [
      row(`warm: OpenSSH xargs -P ${targetCount} ssh ... cudaprobe run sysinfo (binary in place)`, samplesMs.opensshWarm, null, ''),
      row(
        `warm: cudamatrix run, CLI process (uploads: ${Math.max(...uploads.cliWarm)})`,
        samplesMs.cliWarm,
        samplesMs.opensshWarm,
        verdict(warmRatio, WARM_BUDGET),
      ),
      row(
        `warm: cudamatrix run, in-process, this checkout (info; uploads: ${Math.max(...uploads.inProcessWarm)})`,
        samplesMs.inProcessWarm,
        samplesMs.opensshWarm,
        '',
      ),
      row(`cold: OpenSSH xargs -P ${targetCount} (scp the binary + ssh run it) per target`, samplesMs.opensshCold, null, ''),
      row(
        `cold: cudamatrix run, CLI process, caches emptied (uploads: ${Math.min(...uploads.cliCold)})`,
        samplesMs.cliCold,
        samplesMs.opensshCold,
        verdict(coldRatio, COLD_BUDGET),
      ),
    ],
  ),
);
const binaries = `OpenSSH copies ${probe.hash} (${bytes(probe.path)} bytes); cudamatrix deployed ${cliProbes.map((cliProbe) => `${cliProbe.hash} (${cliProbe.bytes} bytes)`).join(', ')}`;
console.log(`\n${binaries}`);
console.log(`warm CLI runs uploaded to ${Math.max(...uploads.cliWarm)} targets (must be 0): ${warmUploadsNone ? 'ok' : 'FAIL'}`);
console.log(
  `cold CLI runs uploaded to ${Math.min(...uploads.cliCold)} of ${targetCount} targets (must be all): ${coldUploadsAll ? 'ok' : 'FAIL'}`,
);
const over = [
  warmRatio > WARM_BUDGET ? `warm ${warmRatio.toFixed(2)} > ${WARM_BUDGET.toFixed(2)}` : '',
  coldRatio > COLD_BUDGET ? `cold ${coldRatio.toFixed(2)} > ${COLD_BUDGET.toFixed(2)}` : '',
].filter(Boolean);
console.log(
  `cudamatrix / OpenSSH: warm ${warmRatio.toFixed(2)} (budget ${WARM_BUDGET.toFixed(2)}), cold ${coldRatio.toFixed(2)} (budget ${COLD_BUDGET.toFixed(2)}): ` +
    `${over.length ? `OVER BUDGET (${over.join(', ')})` : 'within budget'}${tiny ? ' (not enforced: --tiny)' : ''} (${((performance.now() - started) / 1000).toFixed(0)} s)`,
);
const out = path.resolve(values.out ?? path.join(packageRoot(), 'bench', 'out', 'ssh-fanout.json'));
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify(
    {
      bench: 'ssh-fanout',
      targets: targetCount,
      rounds,
      tiny,
      node: process.version,
      cli,
      probes: { openssh: { hash: probe.hash, bytes: bytes(probe.path) }, cudamatrix: cliProbes },
      samplesMs,
      uploads,
      medianMs: Object.fromEntries(Object.entries(samplesMs).map(([k, xs]) => [k, median(xs)])),
      ratios: { warm: warmRatio, cold: coldRatio },
      budgets: { warm: WARM_BUDGET, cold: COLD_BUDGET },
      enforced: !tiny,
      overBudget: over,
      warmUploadsNone,
      coldUploadsAll,
    },
    null,
    2,
  )}\n`,
);
process.exitCode = !warmUploadsNone || !coldUploadsAll || (over.length && !tiny) ? 1 : 0;
