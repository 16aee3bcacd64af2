/**
 * bench/probe-accuracy: are cudaprobe's timing probes right? Runs transfer-bandwidth,
 * event-timing and sync-latency, and the same measurements through PyTorch (bench/peer_torch.py,
 * torch.cuda.Event / pinned tensors / torch.cuda._sleep) on the same GPU in the same run.
 *
 * How: one warm-up round of each side first (a whole run of each, discarded but kept in the
 * JSON), then --rounds rounds (default 5), each running cudaprobe's three probes and the peer
 * once, as fresh processes, in alternating order (cudaprobe first in odd rounds, the peer first
 * in even ones). Both sides run the same series in the same order (per size, per direction:
 * pageable, then pinned) with the same repetitions and warm-up copies per series
 * (repetitions=20, warmup=3): a process's first series warms its GPU and link up, so the order is
 * part of an equal warm-up. Every side's value is the median over rounds; its spread is
 * (max - min) / median over the rounds.
 *
 * The checks (12 with the default sizes 16, 256 and 1024 MiB, H2D and D2H):
 * - ratio: pinned bandwidth, cudaprobe against PyTorch, passes when
 *     |median(cudaprobe) / median(torch) - 1| <= max(5 %, s_cudaprobe + s_torch)
 *   where s is that side's (max - min) / median over the rounds: a difference the rounds
 *   themselves show on either side is not held against the probe; a larger one fails
 *   (bench/stats.ts ratioCheck, tested in bench/stats.test.ts). With one round, 5 %.
 * - link: the median of cudaprobe's pinned bandwidth is not above the PCIe link's theoretical
 *   rate (maximum generation x width from sysinfo, after encoding). Skipped, not failed, when
 *   sysinfo cannot read the link.
 * Pageable bandwidth, event resolution, event-timed spins and sync latency are reported with
 * their spreads, not checked (the peer's sync latency carries Python's own overhead).
 *
 * Without a GPU (cudaprobe sysinfo exits 3), or without python/torch/CUDA in torch, it prints one
 * line saying what is missing, writes the JSON with `skipped: "<reason>"` and exits 0.
 * Exit 1: a check failed, or a side failed to run; 2: a bad option.
 *
 *   pnpm bench:accuracy [--rounds 5] [--probe FILE] [--python python3] [--out FILE] [--tiny]
 *
 * --probe FILE: use that cudaprobe binary (e.g. an installed package's prebuilt one) instead of
 * building one. --tiny: one round at 16 MiB with short series (for the tests: it runs the code
 * path, its figures mean little). On the H200 the default run takes about 2 minutes (mostly the
 * pageable 1 GiB copies on both sides and torch's import, six times each).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../core/package-root.ts';
import { buildProbe } from '../probes/build.ts';
import { parseProbeOutput, type MetricRecord, type ProbeRecord } from '../probes/protocol.ts';
import { formatTable } from '../core/text-table.ts';
import { nodeArch } from '../transports/local.ts';
import { formatSpread, ratioCheck, roundOrder, spread, type Spread } from './stats.ts';

function usage(message: string): never {
  console.error(
    `bench/probe-accuracy: ${message}\nusage: probe-accuracy [--rounds N] [--probe FILE] [--python PYTHON] [--out FILE] [--tiny]`,
  );
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    options: {
      python: { type: 'string', default: 'python3' },
      out: { type: 'string' },
      probe: { type: 'string' },
      rounds: { type: 'string' },
      tiny: { type: 'boolean', default: false },
    },
  });
} catch (error) {
  usage((error as Error).message);
}
const { values } = parsed;
const tiny = values.tiny!;
const rounds = Number(values.rounds ?? (tiny ? 1 : 5));
if (!Number.isInteger(rounds) || rounds < 1) usage(`--rounds takes a whole number >= 1, got ${values.rounds}`);
const SIZES_MIB = tiny ? [16] : [16, 256, 1024];
const TARGETS_US = [1, 2, 5, 10, 20];
const REPS = 20; // cudaprobe's minimum for transfer-bandwidth
const WARMUP = 3; // copies before each timed series, on both sides
const EVENT_REPS = tiny ? 5 : 50;
const SYNC_ITERATIONS = tiny ? 100 : 10000;
const python = values.python!;
const out = path.resolve(values.out ?? path.join(packageRoot(), 'bench', 'out', 'probe-accuracy.json'));
const peerScript = path.join(packageRoot(), 'bench', 'peer_torch.py');
const started = performance.now();

function writeOut(result: Record<string, unknown>): void {
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify({ bench: 'probe-accuracy', node: process.version, ...result, elapsedS: (performance.now() - started) / 1000 }, null, 2)}\n`,
  );
}

if (values.probe && !existsSync(values.probe)) usage(`--probe ${values.probe}: no such file`);
const probePath = values.probe ? path.resolve(values.probe) : (await buildProbe({ platform: 'linux', arch: nodeArch() })).path;

interface ProbeRun {
  status: number | null;
  records: ProbeRecord[];
  stderr: string;
  ms: number;
}

function runProbe(name: string, params: string[] = []): ProbeRun {
  const t0 = performance.now();
  const result = spawnSync(probePath, ['run', name, '--device', '0', ...params.flatMap((param) => ['--param', param])], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const ms = performance.now() - t0;
  if (result.error) throw new Error(`could not run ${probePath}: ${result.error.message}`);
  return { status: result.status, records: parseProbeOutput(result.stdout).records, stderr: result.stderr, ms };
}

/** A probe that must have run (exit 0): its metric records. */
function measured(name: string, params: string[]): { metrics: MetricRecord[]; ms: number } {
  const probeRun = runProbe(name, params);
  if (probeRun.status !== 0) {
    const said = probeRun.records
      .filter((record) => record.type === 'error' || record.type === 'skip')
      .map((record) => ('message' in record ? record.message : (record as { reason: string }).reason));
    throw new Error(`cudaprobe run ${name} exited ${probeRun.status}: ${said.join('; ') || probeRun.stderr.trim().slice(-500)}`);
  }
  return { metrics: probeRun.records.filter((record): record is MetricRecord => record.type === 'metric'), ms: probeRun.ms };
}

// ---- what is missing? ------------------------------------------------------------------------

const missing: string[] = [];
const sysRun = runProbe('sysinfo');
const sysinfo = Object.fromEntries(sysRun.records.flatMap((record) => (record.type === 'sysinfo' ? [[record.name, record.value]] : [])));
if (sysRun.status === 3) {
  const skip = sysRun.records.find((record) => record.type === 'skip') as { reason: string } | undefined;
  missing.push(`no usable GPU: ${skip?.reason ?? 'cudaprobe sysinfo exited 3 (no usable driver or device)'}`);
} else if (sysRun.status !== 0) {
  console.error(`bench/probe-accuracy: cudaprobe sysinfo exited ${sysRun.status}: ${sysRun.stderr.trim().slice(-500)}`);
  writeOut({ error: `cudaprobe sysinfo exited ${sysRun.status}`, probe: probePath, sysinfo });
  process.exit(1);
}

let torchInfo: { torch: string; cuda: boolean; device: string | null } | undefined;
{
  const check = spawnSync(
    python,
    [
      '-c',
      'import json, torch; ok = torch.cuda.is_available(); print(json.dumps({"torch": torch.__version__, "cuda": ok, "device": torch.cuda.get_device_name(0) if ok else None}))',
    ],
    { encoding: 'utf8', timeout: 120_000 },
  );
  if (check.error) {
    missing.push(
      `${python} cannot be run (${(check.error as NodeJS.ErrnoException).code ?? check.error.message}; --python names the interpreter)`,
    );
  } else if (check.status !== 0) {
    const last = check.stderr.trim().split('\n').at(-1) ?? '';
    missing.push(
      /No module named .?torch/.test(check.stderr)
        ? `PyTorch is not installed for ${python} (pip install torch)`
        : `${python} could not import torch: ${last}`,
    );
  } else {
    torchInfo = JSON.parse(check.stdout.trim().split('\n').at(-1)!) as typeof torchInfo;
    if (!torchInfo!.cuda) missing.push(`PyTorch ${torchInfo!.torch} cannot use CUDA here (torch.cuda.is_available() is false)`);
  }
}

if (missing.length) {
  const reason = missing.join('; ');
  console.log(`probe-accuracy: skipped: ${reason}`);
  writeOut({ skipped: reason, missing, probe: probePath, python, torch: torchInfo ?? null, sysinfo, rounds: [], checks: [] });
  process.exit(0);
}

// ---- the rounds ------------------------------------------------------------------------------

interface PeerResult {
  torch: string;
  device: string;
  /** `memory` absent: an older peer that measured pinned copies only. */
  bandwidth: { direction: string; memory?: string; size_bytes: number; gbps: number }[];
  events: { resolution_us: number | null; distinct_values: number; elapsed_us: Record<string, number> };
  sync: { p50_us: number; p99_us: number; min_us: number };
}
interface CudaprobeRound {
  transfer: MetricRecord[];
  events: MetricRecord[];
  sync: MetricRecord[];
  ms: number;
}
interface Round {
  round: number;
  order: string[];
  cudaprobe: CudaprobeRound;
  peer: PeerResult & { ms: number };
}

function cudaprobeSide(): CudaprobeRound {
  const transfer = measured('transfer-bandwidth', [`sizes_mib=${SIZES_MIB.join(',')}`, `repetitions=${REPS}`, `warmup=${WARMUP}`]);
  const events = measured('event-timing', [`targets_us=${TARGETS_US.join(',')}`, `repetitions=${EVENT_REPS}`]);
  const sync = measured('sync-latency', [`iterations=${SYNC_ITERATIONS}`]);
  return { transfer: transfer.metrics, events: events.metrics, sync: sync.metrics, ms: transfer.ms + events.ms + sync.ms };
}

function peerSide(): PeerResult & { ms: number } {
  const args = [
    peerScript,
    '--sizes-mib',
    SIZES_MIB.join(','),
    '--reps',
    String(REPS),
    '--warmup',
    String(WARMUP),
    '--targets-us',
    TARGETS_US.join(','),
    '--event-reps',
    String(EVENT_REPS),
    '--iterations',
    String(SYNC_ITERATIONS),
  ];
  const t0 = performance.now();
  const result = spawnSync(python, args, { encoding: 'utf8', maxBuffer: 1 << 26 });
  const ms = performance.now() - t0;
  if (result.error || result.status !== 0)
    throw new Error(
      `the PyTorch peer (${python} ${args.join(' ')}) failed (${result.error?.message ?? `exit ${result.status}`}): ${result.stderr.trim().slice(-800)}`,
    );
  return { ...(JSON.parse(result.stdout.trim().split('\n').at(-1)!) as PeerResult), ms };
}

const metricOf = (records: MetricRecord[], name: string, attrs: Record<string, unknown> = {}): number =>
  records.find((record) => record.name === name && Object.entries(attrs).every(([k, value]) => record.attrs?.[k] === value))?.value ?? NaN;

const warmup: { cudaprobe?: CudaprobeRound; peer?: PeerResult & { ms: number } } = {};
const done: Round[] = [];
try {
  // Equal warm-up: one whole run of each side, discarded (clocks, the link, page cache, torch's files).
  process.stdout.write('warm-up: cudaprobe, PyTorch ... ');
  warmup.cudaprobe = cudaprobeSide();
  warmup.peer = peerSide();
  process.stdout.write('done\n');
  for (let i = 0; i < rounds; i++) {
    const order = roundOrder(i, ['cudaprobe', 'peer'] as const);
    const round: Partial<Round> = { round: i + 1, order };
    for (const side of order) {
      if (side === 'cudaprobe') round.cudaprobe = cudaprobeSide();
      else round.peer = peerSide();
    }
    done.push(round as Round);
    process.stdout.write(
      `round ${i + 1}/${rounds} (${order.join(' then ')}): cudaprobe ${(round.cudaprobe!.ms / 1000).toFixed(1)} s, PyTorch ${(round.peer!.ms / 1000).toFixed(1)} s\n`,
    );
  }
} catch (error) {
  console.error(`bench/probe-accuracy: ${(error as Error).message}`);
  writeOut({ error: (error as Error).message, probe: probePath, python, sysinfo, warmup, rounds: done });
  process.exit(1);
}

// ---- the comparison --------------------------------------------------------------------------

const gen = Number(sysinfo.pcie_gen_max);
const width = Number(sysinfo.pcie_width_max);
const rates: Record<number, number> = { 1: 2.5, 2: 5, 3: 8, 4: 16, 5: 32, 6: 64 };
const efficiency = gen <= 2 ? 0.8 : gen <= 5 ? 128 / 130 : 242 / 256;
const linkGbps = ((rates[gen] ?? NaN) * width * efficiency) / 8;

type Status = 'pass' | 'fail' | 'skip';
interface Check {
  what: string;
  kind: 'ratio' | 'link';
  status: Status;
  detail: string;
}
interface Comparison {
  what: string;
  unit: string;
  cudaprobe: Spread;
  torch: Spread;
  ratio: number;
  /** For the checked rows: the allowed |ratio - 1| and whether it held. */
  tolerance?: number;
  ok?: boolean;
}
const checks: Check[] = [];
const comparisons: Comparison[] = [];
const rows: string[][] = [];
const fmt = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
const cell = (sideSpread: Spread, digits: number) => `${fmt(sideSpread.median, digits)} (${formatSpread(sideSpread)})`;

for (const mib of SIZES_MIB) {
  const bytes = mib * 1024 ** 2;
  for (const direction of ['h2d', 'd2h']) {
    const ours = done.map((round) =>
      metricOf(round.cudaprobe.transfer, 'bandwidth_gbps', { direction, memory: 'pinned', size_bytes: bytes }),
    );
    const peer = done.map(
      (round) =>
        round.peer.bandwidth.find(
          (reading) => reading.direction === direction && (reading.memory ?? 'pinned') === 'pinned' && reading.size_bytes === bytes,
        )?.gbps ?? NaN,
    );
    const what = `pinned ${direction.toUpperCase()} ${mib} MiB`;
    const check = ratioCheck(ours, peer);
    comparisons.push({
      what,
      unit: 'GB/s',
      cudaprobe: check.ours,
      torch: check.peer,
      ratio: check.ratio,
      tolerance: check.tolerance,
      ok: check.ok,
    });
    checks.push({
      what: `${what}: within max(5 %, spreads) of PyTorch`,
      kind: 'ratio',
      status: check.ok ? 'pass' : 'fail',
      detail: check.ok ? `ratio ${fmt(check.ratio, 3)}, tolerance ${(check.tolerance * 100).toFixed(1)} %` : check.why,
    });
    const link: Status = !Number.isFinite(linkGbps) ? 'skip' : check.ours.median <= linkGbps ? 'pass' : 'fail';
    checks.push({
      what: `${what}: not above the PCIe link (${fmt(linkGbps, 1)} GB/s)`,
      kind: 'link',
      status: link,
      detail:
        link === 'skip'
          ? 'sysinfo did not give the link generation and width'
          : `median ${fmt(check.ours.median, 2)} GB/s, max ${fmt(check.ours.max, 2)} GB/s`,
    });
    const verdict = !check.ok || link === 'fail' ? 'FAIL' : check.widenedBySpread ? `ok (within spread)` : 'ok';
    rows.push([
      `${what} (GB/s)`,
      cell(check.ours, 2),
      cell(check.peer, 2),
      fmt(check.ratio, 3),
      `${(check.tolerance * 100).toFixed(1)} %`,
      verdict,
    ]);
  }
}

function info(what: string, unit: string, ours: number[], peer: number[], digits: number): void {
  const oursSpread = spread(ours);
  const peerSpread = spread(peer);
  const ratio = oursSpread.median / peerSpread.median;
  comparisons.push({ what, unit, cudaprobe: oursSpread, torch: peerSpread, ratio });
  rows.push([`${what} (${unit})`, cell(oursSpread, digits), cell(peerSpread, digits), fmt(ratio, 3), '', 'info']);
}
for (const mib of SIZES_MIB) {
  const bytes = mib * 1024 ** 2;
  for (const direction of ['h2d', 'd2h']) {
    const ours = done.map((round) =>
      metricOf(round.cudaprobe.transfer, 'bandwidth_gbps', { direction, memory: 'pageable', size_bytes: bytes }),
    );
    const peer = done.map(
      (round) =>
        round.peer.bandwidth.find(
          (reading) => reading.direction === direction && reading.memory === 'pageable' && reading.size_bytes === bytes,
        )?.gbps ?? NaN,
    );
    info(`pageable ${direction.toUpperCase()} ${mib} MiB`, 'GB/s', ours, peer, 2);
  }
}
info(
  'event resolution',
  'us',
  done.map((round) => metricOf(round.cudaprobe.events, 'resolution_us')),
  done.map((round) => round.peer.events.resolution_us ?? NaN),
  4,
);
for (const targetUs of TARGETS_US) {
  // The peer's keys are Python's str(float): "1.0", "20.0".
  const peerElapsed = (round: Round) => Object.entries(round.peer.events.elapsed_us).find(([k]) => Number(k) === targetUs)?.[1] ?? NaN;
  info(
    `event-timed ${targetUs} us spin`,
    'us',
    done.map((round) => metricOf(round.cudaprobe.events, 'elapsed_us', { target_us: targetUs })),
    done.map(peerElapsed),
    2,
  );
}
for (const k of ['p50_us', 'p99_us', 'min_us'] as const) {
  info(
    `sync latency ${k.replace('_us', '')}`,
    'us',
    done.map((round) => metricOf(round.cudaprobe.sync, k)),
    done.map((round) => round.peer.sync[k]),
    2,
  );
}

const elapsedS = (performance.now() - started) / 1000;
console.log(
  `\nprobe accuracy on ${sysinfo.gpu_name} (driver ${sysinfo.driver_version}, PCIe gen${gen} x${width} = ${fmt(linkGbps, 1)} GB/s theoretical), ` +
    `peer: PyTorch ${done[0]?.peer.torch}; median of ${rounds} alternated round(s) after one warm-up round each, spread = (max - min) / median\n`,
);
console.log(formatTable(['measurement', 'cudaprobe median (spread)', 'torch median (spread)', 'ratio', 'tolerance', 'check'], rows));
const failed = checks.filter((check) => check.status === 'fail');
const passed = checks.filter((check) => check.status === 'pass');
const skippedChecks = checks.filter((check) => check.status === 'skip');
console.log(
  `\n${passed.length}/${checks.length} checks passed${skippedChecks.length ? `, ${skippedChecks.length} skipped (${skippedChecks[0]!.detail})` : ''}` +
    `${failed.length ? `: FAILED ${failed.map((check) => `${check.what} (${check.detail})`).join('; ')}` : ''} (${elapsedS.toFixed(0)} s)`,
);
writeOut({
  probe: probePath,
  python,
  torch: torchInfo,
  sysinfo,
  linkGbps,
  settings: {
    rounds,
    sizesMib: SIZES_MIB,
    repetitions: REPS,
    warmup: WARMUP,
    targetsUs: TARGETS_US,
    eventRepetitions: EVENT_REPS,
    syncIterations: SYNC_ITERATIONS,
    tiny,
  },
  rule: '|median(cudaprobe) / median(torch) - 1| <= max(5 %, s_cudaprobe + s_torch), s = (max - min) / median over the rounds; link: median(cudaprobe) <= PCIe theoretical rate',
  warmup,
  rounds: done,
  comparisons,
  checks,
});
process.exitCode = failed.length ? 1 : 0;
