/**
 * bench/schedule: does a slow host hold up the fast ones? One slow host with 8 targets and 8 fast
 * hosts with one target each, `concurrency: 4`, one target at a time per host. The hosts are real
 * sshd instances on 127.0.0.1 (one port = one host); each host's probes take a known time through
 * cudaprobe's test hook (CUDAPROBE_TEST_DELAY_MS, set per sshd with SetEnv): 1 s on the slow host,
 * 0.2 s on the fast ones. The slow host's targets come first in the matrix, the worst order for
 * a scheduler that takes targets in order.
 *
 * The ideal schedule is bounded below by the slow host's own work (its targets must run one after
 * another) and by all the work spread over the 4 slots; the bench measures every target's time
 * from its events and compares the wall time with that bound. Median of several rounds.
 *
 *   pnpm bench:schedule [--rounds 3] [--out FILE] [--port-base N] [--tiny]
 *
 * --tiny: 2 slow targets (300 ms) and 2 fast hosts (100 ms), concurrency 2, 1 round after the
 * warm-up, budget not enforced (for the tests). --port-base N: the sshd ports (N for the slow
 * host, N+1... for the fast ones; default: free ports from the kernel).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { RunEvent } from '../events/events.ts';
import { parseMatrix } from '../matrix/load.ts';
import { buildProbe } from '../probes/build.ts';
import { formatTable } from '../core/text-table.ts';
import { executePlan } from '../run/execute.ts';
import { planCells } from '../run/plan.ts';
import { nodeArch } from '../transports/local.ts';
import { tempDir } from '../test/helpers.ts';
import { sshdAvailable, startSshd, type Sshd } from '../test/sshd.ts';
import { portBaseOption } from './sshd.ts';
import { median } from './stats.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string' },
    out: { type: 'string' },
    'port-base': { type: 'string' },
    tiny: { type: 'boolean', default: false },
  },
});
const tiny = values.tiny!;
const rounds = Number(values.rounds ?? (tiny ? 1 : 3));
if (!Number.isInteger(rounds) || rounds < 1) {
  console.error('bench/schedule: --rounds takes a whole number >= 1');
  process.exit(2);
}
if (!sshdAvailable()) {
  console.error('bench/schedule: needs OpenSSH sshd and root (apt-get install openssh-server; run as root)');
  process.exit(2);
}
await buildProbe({ platform: 'linux', arch: nodeArch() });

const SLOW_MS = tiny ? 300 : 1000;
const FAST_MS = tiny ? 100 : 200;
const SLOW_TARGETS = tiny ? 2 : 8;
const FAST_HOSTS = tiny ? 2 : 8;
const CONCURRENCY = tiny ? 2 : 4;
const portBase = portBaseOption(values['port-base'], 1 + FAST_HOSTS);
const slow = await startSshd(1, [`SetEnv CUDAPROBE_TEST_DELAY_MS=${SLOW_MS}`], { portBase });
const fast = await startSshd(FAST_HOSTS, [`SetEnv CUDAPROBE_TEST_DELAY_MS=${FAST_MS}`], {
  portBase: portBase === undefined ? undefined : portBase + 1,
});
const work = tempDir('cm-bench-schedule-');
const hop = (sshd: Sshd, port: number) =>
  JSON.stringify({
    kind: 'ssh',
    host: '127.0.0.1',
    port,
    identityFile: sshd.key,
    knownHosts: sshd.knownHosts,
    sshConfig: false,
    retries: 0,
  });
const targets = [
  ...Array.from({ length: SLOW_TARGETS }, (_, i) => `  - name: slow-${i}\n    transport: ${hop(slow, slow.ports[0]!)}`),
  ...fast.ports.map((port, i) => `  - name: fast-${i}\n    transport: ${hop(fast, port)}`),
];
const matrixText = `version: 1\nconcurrency: ${CONCURRENCY}\nhostConcurrency: 1\ndefaults: {probes: [sysinfo]}\ntargets:\n${targets.join('\n')}\n`;

interface Round {
  wallMs: number;
  idealMs: number;
  ratio: number;
  /** How long after its slot could have been given to it each fast target started (ms). */
  fastWaitedMs: number;
  slowChainMs: number;
}

function span(events: RunEvent[], target: string): { start: number; end: number } {
  const start = events.find((e) => e.type === 'target-start' && e.target === target) as { time: string };
  const ends = events.filter((e) => (e.type === 'cell-end' || e.type === 'target-error') && e.target === target) as { time: string }[];
  return { start: Date.parse(start.time), end: Date.parse(ends.at(-1)!.time) };
}

async function round(): Promise<Round> {
  const plan = planCells(parseMatrix(matrixText, path.join(work, 'matrix.yaml')));
  const t0 = performance.now();
  const { events } = await executePlan(plan, { runsDir: path.join(work, 'runs') });
  const wallMs = performance.now() - t0;
  const failed = events.filter((e) => e.type === 'target-error');
  if (failed.length) throw new Error(`a target failed: ${JSON.stringify(failed[0])}`);
  const runStart = Date.parse((events[0] as { started: string }).started);
  const slowSpans = plan.targets.filter((target) => target.name.startsWith('slow-')).map((target) => span(events, target.name));
  const fastSpans = plan.targets.filter((target) => target.name.startsWith('fast-')).map((target) => span(events, target.name));
  const dur = (targetSpan: { start: number; end: number }) => targetSpan.end - targetSpan.start;
  const slowChainMs = slowSpans.reduce((sum, slowSpan) => sum + dur(slowSpan), 0);
  const totalMs = [...slowSpans, ...fastSpans].reduce((sum, targetSpan) => sum + dur(targetSpan), 0);
  // Lower bound on any schedule: the slow host's targets one after another, and all the work
  // over the slots. (Measured durations: connection set-up and the probe's wait included.)
  const idealMs = Math.max(slowChainMs, totalMs / CONCURRENCY);
  // The slots the slow host does not use, filled with fast targets in order: each fast target
  // could start as soon as the earlier ones freed a slot. Its wait is how much later it started.
  const free = Array.from({ length: CONCURRENCY - 1 }, () => runStart);
  let fastWaitedMs = 0;
  for (const fastSpan of fastSpans) {
    free.sort((left, right) => left - right);
    const could = free[0]!;
    fastWaitedMs = Math.max(fastWaitedMs, fastSpan.start - could);
    free[0] = Math.max(could, fastSpan.start) + dur(fastSpan);
  }
  return { wallMs, idealMs, ratio: wallMs / idealMs, fastWaitedMs, slowChainMs };
}

const results: Round[] = [];
try {
  await round(); // warm-up: connections, the remote probe cache
  for (let i = 0; i < rounds; i++) results.push(await round());
} finally {
  await slow.stop();
  await fast.stop();
}
const rows = results.map((result, i) => [
  String(i + 1),
  result.wallMs.toFixed(0),
  result.idealMs.toFixed(0),
  result.ratio.toFixed(3),
  result.fastWaitedMs.toFixed(0),
  result.slowChainMs.toFixed(0),
]);
const ratio = median(results.map((result) => result.ratio));
const waited = Math.max(...results.map((result) => result.fastWaitedMs));
console.log(
  `\n1 slow host x ${SLOW_TARGETS} targets (${SLOW_MS} ms probes) + ${FAST_HOSTS} fast hosts x 1 target (${FAST_MS} ms), concurrency ${CONCURRENCY}, one target per host at a time (${process.version})\n`,
);
console.log(formatTable(['round', 'wall ms', 'ideal ms', 'wall/ideal', 'fast waited ms (max)', 'slow host busy ms'], rows));
// A fast target "waits for the slow one" when it starts later than a free slot allowed by more
// than the scheduler's own bookkeeping: 100 ms is far below one slow target (1 s).
const ok = ratio <= 1.1 && waited < 100;
console.log(
  `\nmedian wall/ideal ${ratio.toFixed(3)} (budget 1.10); the fast hosts waited at most ${waited.toFixed(0)} ms for a slot: ${ok ? 'within budget' : 'OVER BUDGET'}${tiny ? ' (not enforced: --tiny)' : ''}`,
);
const out = path.resolve(values.out ?? path.join(import.meta.dirname, 'out', 'schedule.json'));
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify({ bench: 'schedule', rounds, tiny, node: process.version, slowMs: SLOW_MS, fastMs: FAST_MS, slowTargets: SLOW_TARGETS, fastHosts: FAST_HOSTS, concurrency: CONCURRENCY, results, medianRatio: ratio, maxFastWaitMs: waited, enforced: !tiny }, null, 2)}\n`,
);
process.exitCode = ok || tiny ? 0 : 1;
