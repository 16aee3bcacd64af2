/**
 * bench/sigint: Ctrl-C through `pnpm matrix`, as a person at a terminal sends it: SIGINT to the
 * whole process group (pnpm, the shell it starts, node, and anything else in the group), while a
 * probe hangs, with every core kept busy. Repeated N times in a row; each round must keep every
 * result (events.jsonl closed with run-end, junit.xml, summary.json) and leave no probe process
 * (and, with --docker, no container) behind. Before the fix, 2/10 local runs lost everything
 * (tsx's CLI wrapper relayed the signal, then SIGKILLed node 30 ms later when it did not exit).
 *
 *   pnpm bench:sigint [--rounds 20] [--load N busy loops, default 4 per core] [--docker] [--out FILE] [--tiny]
 *
 * --tiny: 1 round, no busy loops (for the tests); its checks still apply (exit 1 when a round
 * lost its results or left something behind).
 *
 * The hanging probe is cudaprobe's test hook CUDAPROBE_TEST_DELAY_MS (it waits before starting).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readEventLog } from '../events/events.ts';
import { buildProbe } from '../probes/build.ts';
import { formatTable } from '../core/text-table.ts';
import { nodeArch } from '../transports/local.ts';
import { repoRoot, tempDir } from '../test/helpers.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string' },
    load: { type: 'string' },
    docker: { type: 'boolean', default: false },
    out: { type: 'string' },
    tiny: { type: 'boolean', default: false },
  },
});
const tiny = values.tiny!;
const rounds = Number(values.rounds ?? (tiny ? 1 : 20));
const load = Number(values.load ?? (tiny ? 0 : 4 * availableParallelism()));
if (!Number.isInteger(rounds) || rounds < 1 || !Number.isInteger(load) || load < 0) {
  console.error('bench/sigint: --rounds takes a whole number >= 1 and --load one >= 0');
  process.exit(2);
}
const work = tempDir('cm-bench-sigint-');
const matrixFile = path.join(work, 'matrix.yaml');
const targets = ['  - name: here-a', '  - name: here-b'];
if (values.docker) {
  // A Docker target on the engine DOCKER_HOST names (or the default socket), with network none.
  targets.push('  - name: in-docker', '    transport: {kind: docker, gpus: none, base: cudamatrix-test-base}');
}
writeFileSync(matrixFile, `version: 1\nconcurrency: 4\ndefaults: {probes: [sysinfo, sync-latency]}\ntargets:\n${targets.join('\n')}\n`);

/** Processes whose environment carries the marker (pnpm, node, the probes); `probesOnly`: the hung cudaprobes. */
function marked(marker: string, probesOnly = false): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (!readFileSync(`/proc/${pid}/environ`, 'utf8').includes(marker)) continue;
      if (probesOnly && !/cudaprobe\0run\0/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))) continue;
      found.push(Number(pid));
    } catch {
      // gone, or not readable
    }
  }
  return found;
}

function containersOf(runsDir: string): string[] {
  if (!values.docker) return [];
  const runs = existsSync(runsDir) ? readdirSync(runsDir) : [];
  return runs.flatMap((run) =>
    execFileSync('docker', ['ps', '-aq', '--filter', `label=cudamatrix.run-id=${run}`], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean),
  );
}

/** Live processes of a process group (pnpm exits first; node, which writes the results, later). */
function groupMembers(pgid: number): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') found.push(Number(pid));
    } catch {
      // gone
    }
  }
  return found;
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}

// The probe is built before the cores are loaded: the rounds measure Ctrl-C, not the compiler.
await buildProbe({ platform: 'linux', arch: nodeArch() });
// Load every core, as a busy CI machine is.
const burners = Array.from({ length: load }, () => spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }));
const rows: string[][] = [];
const results: { round: number; exitCode: number | null; kept: boolean; leftovers: number; exitMs: number }[] = [];
try {
  for (let round = 1; round <= rounds; round++) {
    const marker = `CUDAPROBE_TEST_DELAY_MS=600000.${round}${process.pid}`;
    const runsDir = path.join(work, `runs-${round}`);
    const out = openSync(path.join(work, `out-${round}.txt`), 'w');
    // detached: a process group of its own, led by pnpm, as a terminal's foreground job is.
    const child = spawn('pnpm', ['-s', 'matrix', '-m', matrixFile, '--results-dir', runsDir], {
      cwd: repoRoot,
      detached: true,
      stdio: ['ignore', out, out],
      env: { ...process.env, NO_COLOR: '1', CUDAPROBE_TEST_DELAY_MS: marker.split('=')[1] },
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    if (!(await until(() => marked(marker, true).length >= 1, 60_000)))
      throw new Error(`round ${round}: the probes never started; see ${work}/out-${round}.txt`);
    const signalled = performance.now();
    process.kill(-child.pid!, 'SIGINT');
    let timer: NodeJS.Timeout | undefined;
    const exitCode = await Promise.race([exited, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), 60_000)))]);
    // (a pending timer would keep this process alive for a minute after the last round)
    clearTimeout(timer);
    // The run is over when the whole group is gone (pnpm may exit before node has written).
    await until(() => groupMembers(child.pid!).length === 0, 60_000);
    const exitMs = performance.now() - signalled;
    const run = existsSync(runsDir) ? readdirSync(runsDir)[0] : undefined;
    const runDir = run ? path.join(runsDir, run) : '';
    const kept =
      Boolean(run) &&
      ['events.jsonl', 'junit.xml', 'summary.json'].every((file) => existsSync(path.join(runDir, file))) &&
      readEventLog(path.join(runDir, 'events.jsonl')).at(-1)?.type === 'run-end';
    await until(() => marked(marker).length === 0 && containersOf(runsDir).length === 0, 10_000);
    const leftovers = marked(marker).length + containersOf(runsDir).length;
    for (const pid of marked(marker)) process.kill(pid, 'SIGKILL');
    results.push({ round, exitCode, kept, leftovers, exitMs: Math.round(exitMs) });
    rows.push([String(round), String(exitCode ?? 'signal'), kept ? 'yes' : 'LOST', String(leftovers), Math.round(exitMs).toString()]);
    process.stdout.write(
      `round ${round}: pnpm exit ${exitCode ?? 'by signal'}, results ${kept ? 'kept' : 'LOST'}, ${leftovers} left behind, ${Math.round(exitMs)} ms\n`,
    );
  }
} finally {
  for (const burner of burners) burner.kill('SIGKILL');
}

const keptCount = results.filter((result) => result.kept).length;
const clean = results.filter((result) => result.leftovers === 0).length;
console.log(
  `\nSIGINT to the process group of \`pnpm matrix\` while a probe hangs, ${load} busy loops on ${availableParallelism()} cores${values.docker ? ', with a Docker target' : ''}\n`,
);
console.log(formatTable(['round', 'pnpm exit', 'results', 'left behind', 'ms until the group is gone'], rows));
console.log(`\nresults kept in ${keptCount}/${rounds} rounds; nothing left behind in ${clean}/${rounds}`);
const outFile = path.resolve(values.out ?? path.join(import.meta.dirname, 'out', 'sigint.json'));
mkdirSync(path.dirname(outFile), { recursive: true });
writeFileSync(
  outFile,
  `${JSON.stringify({ bench: 'sigint', rounds, tiny, load, docker: values.docker, node: process.version, cores: availableParallelism(), keptCount, clean, results }, null, 2)}\n`,
);
rmSync(work, { recursive: true, force: true });
process.exitCode = keptCount === rounds && clean === rounds ? 0 : 1;
