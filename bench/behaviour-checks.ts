/**
 * bench/behaviour-checks: are issue 24's event-host-gap, watchdog, runtime-init, the filled
 * rounds of transfer-bandwidth and sysinfo's display facts right? Runs each through cudaprobe,
 * and the same measurement without it (bench/behaviour_peer.py: ctypes for the driver and the
 * runtimes, PyTorch for the copies, nvidia-smi for the display), then compares them.
 *
 * The fill is cudaprobe's default rule, on a shared card: 90 % of the free VRAM, never leaving
 * less than 8 GiB free; the peer holds the same number of bytes. The checks: facts equal;
 * event pairs within 10 % or 1 ms of the peer's; each initialisation's result equal, its time
 * shown (a cold cuInit varies by hundreds of ms between processes on a shared machine); the
 * filled/idle ratio within 0.1 of the peer's, pinned bandwidths within 10 %.
 *
 * Without a GPU (cudaprobe sysinfo exits 3), or without python3, it says so, writes the JSON
 * with `skipped` and exits 0. Exit 1: a check failed or a side failed to run; 2: a bad option.
 *
 *   pnpm bench:behaviour [--probe FILE] [--python python3] [--out FILE]
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../core/package-root.ts';
import { buildProbe } from '../probes/build.ts';
import { parseProbeOutput, type ProbeRecord } from '../probes/protocol.ts';
import { formatTable } from '../core/text-table.ts';
import { nodeArch } from '../transports/local.ts';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

function usage(message: string): never {
  console.error(`bench/behaviour-checks: ${message}\nusage: behaviour-checks [--probe FILE] [--python PYTHON] [--out FILE]`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({ options: { probe: { type: 'string' }, python: { type: 'string', default: 'python3' }, out: { type: 'string' } } });
} catch (error) {
  usage((error as Error).message);
}
const { values } = parsed;
if (values.probe && !existsSync(values.probe)) usage(`--probe ${values.probe}: no such file`);
const python = values.python!;
const out = path.resolve(values.out ?? path.join(packageRoot(), 'bench', 'out', 'behaviour-checks.json'));
const peerScript = path.join(packageRoot(), 'bench', 'behaviour_peer.py');
const started = performance.now();
const probePath = values.probe ? path.resolve(values.probe) : (await buildProbe({ platform: 'linux', arch: nodeArch() })).path;

function writeOut(result: Record<string, unknown>): void {
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify({ bench: 'behaviour-checks', ...result, elapsedS: (performance.now() - started) / 1000 }, null, 2)}\n`,
  );
}

function probe(name: string, params: Record<string, string | number> = {}): { status: number | null; records: ProbeRecord[] } {
  const args = ['run', name, '--device', '0', ...Object.entries(params).flatMap(([k, value]) => ['--param', `${k}=${value}`])];
  const result = spawnSync(probePath, args, { encoding: 'utf8', maxBuffer: 1 << 26, timeout: 600_000 });
  if (result.error) throw new Error(`could not run ${probePath}: ${result.error.message}`);
  if (result.status !== 0 && name !== 'sysinfo')
    throw new Error(
      `cudaprobe ${name} exited ${result.status}: ${result.stdout
        .split('\n')
        .filter((line) => /"(error|skip)"/.test(line))
        .join(' ')}`,
    );
  return { status: result.status, records: parseProbeOutput(result.stdout).records };
}

type PeerAnswer = Record<string, unknown> & { skipped?: string; error?: string };
function peer(...args: (string | number)[]): PeerAnswer {
  const result = spawnSync(python, [peerScript, ...args.map(String)], { encoding: 'utf8', timeout: 600_000 });
  if (result.error) return { skipped: `${python} cannot be run (${(result.error as NodeJS.ErrnoException).code ?? result.error.message})` };
  try {
    return JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '') as PeerAnswer;
  } catch {
    return { error: `the peer (${args.join(' ')}) exited ${result.status}: ${result.stderr.trim().slice(-500)}` };
  }
}

const metric = (records: ProbeRecord[], name: string, attrs: Record<string, unknown> = {}) =>
  records.find(
    (record) =>
      record.type === 'metric' && record.name === name && Object.entries(attrs).every(([k, value]) => record.attrs?.[k] === value),
  ) as { value: number | null; attrs?: Record<string, unknown> } | undefined;
const fact = (records: ProbeRecord[], name: string) =>
  records.find((record) => record.type === 'fact' && record.name === name) as
    { value: unknown; evidence?: Record<string, unknown> } | undefined;

// ---- what is missing? ------------------------------------------------------------------------

const sys = probe('sysinfo');
const info = Object.fromEntries(sys.records.flatMap((record) => (record.type === 'sysinfo' ? [[record.name, record.value]] : [])));
const first = peer('init-driver');
const missing =
  sys.status === 3
    ? `no usable GPU: ${(sys.records.find((record) => record.type === 'skip') as { reason?: string } | undefined)?.reason ?? 'cudaprobe sysinfo exited 3'}`
    : (first.skipped ?? first.error);
if (missing) {
  console.log(`behaviour-checks: skipped: ${missing}`);
  writeOut({ skipped: missing, probe: probePath, python, sysinfo: info, checks: [] });
  process.exit(0);
}
console.log(`behaviour-checks on ${info.gpu_name} (driver ${info.driver_version})`);

// ---- both sides ------------------------------------------------------------------------------

interface Check {
  what: string;
  cudaprobe: unknown;
  peer: unknown;
  rule: string;
  status: 'pass' | 'fail' | 'info';
}
const checks: Check[] = [];
function check(what: string, ours: unknown, theirs: unknown, rule: string, ok: boolean | null): void {
  checks.push({ what, cudaprobe: ours, peer: theirs, rule, status: ok === null ? 'info' : ok ? 'pass' : 'fail' });
}
const near = (left: number, right: number, rel: number, abs = 0) =>
  Math.abs(left - right) <= Math.max(rel * Math.max(Math.abs(left), Math.abs(right)), abs);
const raw: Record<string, unknown> = {};

try {
  // 1. event-host-gap (C24).
  const gap = probe('event-host-gap', { sleep_ms: 20, repetitions: 10 });
  raw.eventHostGap = gap.records;
  const theirsGap = peer('event-gap', 20, 10) as PeerAnswer & Record<string, { elapsed_ms: number; host_gap_ms: number }>;
  raw.peerEventGap = theirsGap;
  if (theirsGap.error) throw new Error(`peer event-gap: ${theirsGap.error}`);
  for (const flush of ['none', 'query']) {
    const ours = metric(gap.records, 'elapsed_ms', { flush })?.value ?? NaN;
    check(
      `event pair around 20 ms sleep (flush ${flush}), ms`,
      ours,
      theirsGap[flush]!.elapsed_ms,
      'within 10 % or 1 ms',
      near(ours, theirsGap[flush]!.elapsed_ms, 0.1, 1),
    );
    const factName = flush === 'none' ? 'brackets_host_gap' : 'brackets_host_gap_flushed';
    const theirsBrackets = theirsGap[flush]!.elapsed_ms >= 0.9 * theirsGap[flush]!.host_gap_ms;
    check(factName, fact(gap.records, factName)?.value, theirsBrackets, 'equal', fact(gap.records, factName)?.value === theirsBrackets);
  }

  // 2. watchdog (C25).
  const wd = probe('watchdog');
  raw.watchdog = wd.records;
  const attrs = peer('attributes');
  raw.peerAttributes = attrs;
  check(
    'kernel_exec_timeout',
    fact(wd.records, 'kernel_exec_timeout')?.value,
    attrs.kernel_exec_timeout,
    'equal',
    fact(wd.records, 'kernel_exec_timeout')?.value === attrs.kernel_exec_timeout,
  );

  // 3. runtime-init (C26), with the runtimes Python's packages carry as well.
  const dirs = (peer('runtime-dirs').dirs as string[] | undefined) ?? [];
  const init = probe('runtime-init', dirs.length ? { dirs: dirs.join(',') } : {});
  raw.runtimeInit = init.records;
  check(
    'driver_init (cuInit, fresh process)',
    fact(init.records, 'driver_init')?.value,
    first.result,
    'equal',
    fact(init.records, 'driver_init')?.value === first.result,
  );
  check('cuInit ms', metric(init.records, 'cuinit_ms')?.value, first.init_ms, 'shown', null);
  const libraries = String(fact(init.records, 'runtime_init')?.evidence?.libraries ?? '')
    .split('; ')
    .filter(Boolean);
  const results = String(fact(init.records, 'runtime_init')?.value ?? '').split('; ');
  check('runtimes found', libraries.length, libraries.join(', '), 'at least one (/usr/local/cuda/lib64)', libraries.length > 0);
  libraries.forEach((lib, i) => {
    const theirs = peer('init-runtime', lib);
    raw[`peerInit-${lib}`] = theirs;
    const ours = (results[i] ?? '').split(': ').slice(1).join(': ');
    check(`${path.basename(lib)}: first call`, ours, theirs.result, 'equal', ours === theirs.result);
    check(
      `${path.basename(lib)}: first call ms`,
      metric(init.records, 'runtime_first_call_ms', { library: path.basename(lib) })?.value,
      theirs.first_call_ms,
      'shown',
      null,
    );
  });

  // 4. transfer-bandwidth's filled round (C28), 1 GiB copies; the peer holds the same bytes.
  const bw = probe('transfer-bandwidth', { sizes_mib: 1024, repetitions: 20, fill_percent: '0,90', fill_reserve_gib: 8 });
  raw.transferBandwidth = bw.records;
  const fill = metric(bw.records, 'fill_bytes', { fill_percent: 90 })?.value;
  if (!fill) throw new Error('transfer-bandwidth filled nothing (see raw.transferBandwidth)');
  const theirsBw = peer('copies', 1024 * MiB, fill, 20) as PeerAnswer & {
    idle_gbps: Record<string, number>;
    filled_gbps: Record<string, number>;
    filled_idle_ratio: Record<string, number>;
    vram_used_fraction: number;
  };
  raw.peerCopies = theirsBw;
  if (theirsBw.skipped || theirsBw.error) throw new Error(`peer copies: ${theirsBw.skipped ?? theirsBw.error}`);
  check('VRAM filled, GiB', fill / GiB, fill / GiB, 'the peer holds the same bytes', null);
  const used = metric(bw.records, 'vram_used_fraction', { fill_percent: 90 })?.value ?? NaN;
  check(
    'share of VRAM in use once filled',
    used,
    theirsBw.vram_used_fraction,
    'within 0.03 (others share the card)',
    near(used, theirsBw.vram_used_fraction, 0, 0.03),
  );
  for (const direction of ['h2d', 'd2h']) {
    const idle = metric(bw.records, 'bandwidth_gbps', { direction, memory: 'pinned', size_bytes: 1024 * MiB })?.value ?? NaN;
    const filled =
      metric(bw.records, 'bandwidth_gbps', { direction, memory: 'pinned', size_bytes: 1024 * MiB, fill_percent: 90 })?.value ?? NaN;
    check(
      `${direction} pinned 1 GiB, idle, GB/s`,
      idle,
      theirsBw.idle_gbps[direction],
      'within 10 %',
      near(idle, theirsBw.idle_gbps[direction]!, 0.1),
    );
    check(
      `${direction} pinned 1 GiB, VRAM filled, GB/s`,
      filled,
      theirsBw.filled_gbps[direction],
      'within 10 %',
      near(filled, theirsBw.filled_gbps[direction]!, 0.1),
    );
    const ratio = metric(bw.records, 'filled_idle_ratio', { direction })?.value ?? NaN;
    check(
      `${direction} filled / idle`,
      ratio,
      theirsBw.filled_idle_ratio[direction],
      'within 0.1',
      near(ratio, theirsBw.filled_idle_ratio[direction]!, 0, 0.1),
    );
  }

  // 5. sysinfo's display facts against nvidia-smi.
  const smi = spawnSync('nvidia-smi', ['--id=0', '--query-gpu=display_mode,display_active', '--format=csv,noheader'], { encoding: 'utf8' });
  const [mode, active] = (smi.stdout ?? '')
    .trim()
    .split(/,\s*/)
    .map((field) => (field === 'Enabled' ? true : field === 'Disabled' ? false : field));
  // A field this nvidia-smi does not know is shown, not judged.
  check(
    'display_attached (nvidia-smi display_mode)',
    info.display_attached,
    mode ?? smi.stderr,
    'equal',
    typeof mode === 'boolean' ? info.display_attached === mode : null,
  );
  check(
    'display_active (nvidia-smi display_active)',
    info.display_active,
    active ?? smi.stderr,
    'equal',
    typeof active === 'boolean' ? info.display_active === active : null,
  );
} catch (error) {
  console.error(`bench/behaviour-checks: ${(error as Error).message}`);
  writeOut({ error: (error as Error).message, probe: probePath, python, sysinfo: info, checks, raw });
  process.exit(1);
}

const fmt = (value: unknown) =>
  typeof value === 'number' ? (Number.isInteger(value) ? String(value) : value.toFixed(3)) : (JSON.stringify(value) ?? 'n/a');
console.log(
  formatTable(
    ['measurement', 'cudaprobe', 'peer', 'rule', 'check'],
    checks.map((comparison) => [comparison.what, fmt(comparison.cudaprobe), fmt(comparison.peer), comparison.rule, comparison.status]),
  ),
);
const failed = checks.filter((comparison) => comparison.status === 'fail');
const judged = checks.filter((comparison) => comparison.status !== 'info');
console.log(
  `\n${judged.length - failed.length}/${judged.length} checks passed${failed.length ? `: FAILED ${failed.map((comparison) => comparison.what).join('; ')}` : ''} (${((performance.now() - started) / 1000).toFixed(0)} s)`,
);
writeOut({ probe: probePath, python, sysinfo: info, checks, raw });
process.exitCode = failed.length ? 1 : 0;
