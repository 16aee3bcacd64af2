/**
 * bench/memory-checks: are issue 24's memory probes right? Runs alloc-ceiling, pinned-ceiling's
 * registered round, managed-memory's percent_of_free step and sysmem-fallback with caps safe on
 * a shared card, and the same measurements through the CUDA libraries themselves
 * (bench/memory_peer.py: ctypes, no cudaprobe code, one fresh process per series), then
 * compares them.
 *
 * Caps (the card is shared; nothing is exhausted): cap = min(--max-gib (16), half of the free
 * VRAM) for alloc-ceiling and the registered ceiling; managed memory at min(50 %, cap) of the
 * free VRAM (never past it: oversubscription is never asked for here); sysmem-fallback bounded
 * to min(4 GiB, cap), below the free VRAM, so it records the bound, not a spill.
 *
 * The checks: byte counts made of the same chunks are equal (largest single allocation: within
 * one granule); free VRAM within 2 % or 1 GiB (other users of the card move it); facts equal;
 * the first chunk's write bandwidth within 25 % (host-timed memsets of 256 MiB). Bandwidths of
 * different writers (kernel against memset) are shown, not checked.
 *
 * Without a GPU (cudaprobe sysinfo exits 3), or without python3, it says so, writes the JSON
 * with `skipped` and exits 0. Exit 1: a check failed or a side failed to run; 2: a bad option.
 * It also writes <out dir>/new-probes.yaml, a matrix of the same probes and caps, for the
 * recorded run (scripts/gpu-suite.ts --new-probes).
 *
 *   pnpm bench:memory [--probe FILE] [--python python3] [--out FILE] [--max-gib 16] [--tiny]
 *
 * --tiny: a 1 GiB cap (for the tests; its figures mean little).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../core/package-root.ts';
import { formatTable } from '../core/text-table.ts';
import { buildProbe } from '../probes/build.ts';
import { parseProbeOutput, type ProbeRecord } from '../probes/protocol.ts';
import { nodeArch } from '../transports/local.ts';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;
const CHUNK = 256 * MiB;
const GRANULE = 64 * MiB;

function usage(message: string): never {
  console.error(
    `bench/memory-checks: ${message}\nusage: memory-checks [--probe FILE] [--python PYTHON] [--out FILE] [--max-gib N] [--tiny]`,
  );
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    options: {
      probe: { type: 'string' },
      python: { type: 'string', default: 'python3' },
      out: { type: 'string' },
      'max-gib': { type: 'string', default: '16' },
      tiny: { type: 'boolean', default: false },
    },
  });
} catch (error) {
  usage((error as Error).message);
}
const { values } = parsed;
const maxGib = values.tiny ? 1 : Number(values['max-gib']);
if (!(maxGib > 0)) usage(`--max-gib takes a positive number, got ${values['max-gib']}`);
if (values.probe && !existsSync(values.probe)) usage(`--probe ${values.probe}: no such file`);
const python = values.python!;
const out = path.resolve(values.out ?? path.join(packageRoot(), 'bench', 'out', 'memory-checks.json'));
const peerScript = path.join(packageRoot(), 'bench', 'memory_peer.py');
const started = performance.now();
const probePath = values.probe ? path.resolve(values.probe) : (await buildProbe({ platform: 'linux', arch: nodeArch() })).path;

function writeOut(result: Record<string, unknown>): void {
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ bench: 'memory-checks', ...result, elapsedS: (performance.now() - started) / 1000 }, null, 2)}\n`);
}

function probe(name: string, params: Record<string, string | number>): { status: number | null; records: ProbeRecord[] } {
  const args = ['run', name, '--device', '0', ...Object.entries(params).flatMap(([k, value]) => ['--param', `${k}=${value}`])];
  const result = spawnSync(probePath, args, { encoding: 'utf8', maxBuffer: 1 << 26, timeout: 600_000 });
  if (result.error) throw new Error(`could not run ${probePath}: ${result.error.message}`);
  return { status: result.status, records: parseProbeOutput(result.stdout).records };
}

type PeerAnswer = Record<string, unknown> & { skipped?: string; error?: string };
function peer(...args: (string | number)[]): PeerAnswer {
  const result = spawnSync(python, [peerScript, ...args.map(String)], { encoding: 'utf8', timeout: 600_000 });
  if (result.error) return { skipped: `${python} cannot be run (${(result.error as NodeJS.ErrnoException).code ?? result.error.message})` };
  const last = result.stdout.trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(last) as PeerAnswer;
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
  (records.find((record) => record.type === 'fact' && record.name === name) as { value: unknown } | undefined)?.value;

// ---- what is missing? ------------------------------------------------------------------------

const sys = probe('sysinfo', {});
const info = Object.fromEntries(sys.records.flatMap((record) => (record.type === 'sysinfo' ? [[record.name, record.value]] : [])));
const first = peer('meminfo');
const missing =
  sys.status === 3
    ? `no usable GPU: ${(sys.records.find((record) => record.type === 'skip') as { reason?: string } | undefined)?.reason ?? 'cudaprobe sysinfo exited 3'}`
    : (first.skipped ?? first.error);
if (missing) {
  console.log(`memory-checks: skipped: ${missing}`);
  writeOut({ skipped: missing, probe: probePath, python, sysinfo: info, checks: [] });
  process.exit(0);
}

// ---- the caps --------------------------------------------------------------------------------

const freeVram = Number(first.free_vram_bytes);
const capGib = Math.max(1, Math.min(maxGib, Math.floor(freeVram / 2 / GiB)));
const cap = capGib * GiB;
const managedPercent = Math.min(50, Math.floor((cap / freeVram) * 100));
const sysmemGib = Math.min(4, capGib);
const params = {
  'alloc-ceiling': { apis: 'driver,runtime,async', chunk_mib: 256, max_gib: capGib, granularity_mib: 64 },
  'pinned-ceiling': { chunk_mib: 256, max_gib: capGib, prefill_percent: 0, reset_rounds: 0, registered_rounds: 1 },
  'managed-memory': { size_mib: 64, percent_of_free: managedPercent },
  'sysmem-fallback': { api: 'runtime', chunk_mib: 256, max_gib: sysmemGib, past_vram_gib: 2 },
};
console.log(
  `memory-checks on ${info.gpu_name} (driver ${info.driver_version}): free VRAM ${(freeVram / GiB).toFixed(1)} GiB; cap ${capGib} GiB, managed ${managedPercent} % of free, sysmem-fallback bounded at ${sysmemGib} GiB`,
);
const yaml = [
  "# Written by bench/memory-checks: issue 24's memory probes with caps safe on this shared card.",
  'version: 1',
  'description: issue 24 memory probes, capped',
  'defaults:',
  `  probes: [${['sysinfo', ...Object.keys(params)].join(', ')}]`,
  '  timeout: 10m',
  '  params:',
  ...Object.entries(params).flatMap(([probeName, probeParams]) => [
    `    ${probeName}:`,
    ...Object.entries(probeParams).map(
      ([k, paramValue]) =>
        `      ${k}: ${k === 'apis' ? `[${paramValue}]` : k === 'prefill_percent' ? `[${paramValue}]` : typeof paramValue === 'string' ? JSON.stringify(paramValue) : paramValue}`,
    ),
  ]),
  'targets:',
  '  - name: local',
  '    transport: local',
  '',
].join('\n');
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(path.join(path.dirname(out), 'new-probes.yaml'), yaml);

// ---- both sides ------------------------------------------------------------------------------

type Status = 'pass' | 'fail';
interface Check {
  what: string;
  cudaprobe: unknown;
  peer: unknown;
  rule: string;
  status: Status | 'info';
}
const checks: Check[] = [];
const gib = (bytes: unknown) => (typeof bytes === 'number' ? `${(bytes / GiB).toFixed(3)} GiB` : String(bytes));
function check(what: string, ours: unknown, theirs: unknown, rule: string, ok: boolean | null): void {
  checks.push({ what, cudaprobe: ours, peer: theirs, rule, status: ok === null ? 'info' : ok ? 'pass' : 'fail' });
}
const near = (left: number, right: number, rel: number, abs = 0) =>
  Math.abs(left - right) <= Math.max(rel * Math.max(Math.abs(left), Math.abs(right)), abs);

const raw: Record<string, unknown> = {};
try {
  const attributes = peer('attributes');
  raw.attributes = attributes;

  // 1. alloc-ceiling, per API.
  const ceiling = probe('alloc-ceiling', params['alloc-ceiling']);
  if (ceiling.status !== 0)
    throw new Error(
      `cudaprobe alloc-ceiling exited ${ceiling.status}: ${JSON.stringify(ceiling.records.filter((record) => record.type === 'error' || record.type === 'skip'))}`,
    );
  raw.allocCeiling = ceiling.records;
  check(
    'memory_pools_supported',
    fact(ceiling.records, 'memory_pools_supported'),
    attributes.memory_pools_supported,
    'equal',
    fact(ceiling.records, 'memory_pools_supported') === attributes.memory_pools_supported,
  );
  for (const api of ['driver', 'runtime', 'async']) {
    const theirs = peer('alloc', api, CHUNK, cap, GRANULE);
    raw[`peer-alloc-${api}`] = theirs;
    if (theirs.skipped || theirs.error) {
      check(`${api}: peer`, 'ran', theirs.skipped ?? theirs.error, 'the peer runs', false);
      continue;
    }
    const free = metric(ceiling.records, 'free_vram_bytes', { api })?.value ?? NaN;
    check(
      `${api}: free VRAM at the start`,
      gib(free),
      gib(theirs.free_vram_bytes),
      'within 2 % or 1 GiB (a shared card)',
      near(free, Number(theirs.free_vram_bytes), 0.02, GiB),
    );
    const largest = metric(ceiling.records, 'largest_single_bytes', { api });
    check(
      `${api}: largest single allocation`,
      gib(largest?.value),
      gib(theirs.largest_single_bytes),
      'within one granule (64 MiB)',
      near(Number(largest?.value), Number(theirs.largest_single_bytes), 0, GRANULE),
    );
    check(
      `${api}: largest stopped by`,
      largest?.attrs?.stopped_by,
      theirs.largest_capped ? 'safety-cap' : 'allocation-failure',
      'equal',
      largest?.attrs?.stopped_by === (theirs.largest_capped ? 'safety-cap' : 'allocation-failure'),
    );
    const cumulative = metric(ceiling.records, 'cumulative_bytes', { api });
    check(
      `${api}: chunks held at once`,
      gib(cumulative?.value),
      gib(theirs.cumulative_bytes),
      'equal, or within one chunk and 2 % when a failure stopped them',
      cumulative?.attrs?.stopped_by === 'safety-cap' && !theirs.cumulative_failed
        ? cumulative?.value === theirs.cumulative_bytes
        : near(Number(cumulative?.value), Number(theirs.cumulative_bytes), 0.02, CHUNK),
    );
    const reaches = fact(ceiling.records, api === 'driver' ? 'reaches_free_vram' : `reaches_free_vram_${api}`);
    check(
      `${api}: reaches_free_vram`,
      reaches,
      theirs.cumulative_failed ? 'decided by a failure' : null,
      'null when both stopped at the cap',
      theirs.cumulative_failed ? reaches !== null : reaches === null,
    );
  }

  // 2. pinned-ceiling's registered round and the host-register attributes.
  const pinned = probe('pinned-ceiling', params['pinned-ceiling']);
  if (pinned.status !== 0) throw new Error(`cudaprobe pinned-ceiling exited ${pinned.status}`);
  raw.pinnedCeiling = pinned.records;
  for (const attribute of ['host_register_supported', 'host_pointer_for_registered_mem', 'pageable_memory_access']) {
    check(
      attribute,
      fact(pinned.records, attribute),
      attributes[attribute],
      'equal',
      fact(pinned.records, attribute) === attributes[attribute],
    );
  }
  const registered = metric(pinned.records, 'ceiling_bytes', { variant: 'registered' });
  const regCap = Number(registered?.attrs?.cap_bytes ?? cap);
  const theirsReg = peer('register', CHUNK, regCap);
  raw.peerRegister = theirsReg;
  check(
    'registered ceiling (malloc + cuMemHostRegister)',
    gib(registered?.value),
    gib(theirsReg.ceiling_bytes),
    `equal at the probe's cap (${gib(regCap)})`,
    registered?.value === theirsReg.ceiling_bytes,
  );
  check(
    'registered_limited_by',
    fact(pinned.records, 'registered_limited_by'),
    theirsReg.failed ? 'allocation-failure' : 'safety-cap',
    'equal',
    fact(pinned.records, 'registered_limited_by') === (theirsReg.failed ? 'allocation-failure' : 'safety-cap'),
  );

  // 3. managed-memory's large step, within free VRAM.
  const managed = probe('managed-memory', params['managed-memory']);
  if (managed.status !== 0) throw new Error(`cudaprobe managed-memory exited ${managed.status}`);
  raw.managedMemory = managed.records;
  const theirsManaged = peer('managed', managedPercent);
  raw.peerManaged = theirsManaged;
  check(
    `managed ${managedPercent} % of free: round trip`,
    fact(managed.records, 'large_roundtrip_ok'),
    theirsManaged.ok,
    'equal',
    fact(managed.records, 'large_roundtrip_ok') === theirsManaged.ok,
  );
  check(
    'managed: oversubscription_ok',
    fact(managed.records, 'oversubscription_ok'),
    null,
    'null: never asked for here',
    fact(managed.records, 'oversubscription_ok') === null,
  );
  check(
    'managed: size',
    gib(metric(managed.records, 'managed_bytes')?.value),
    gib(theirsManaged.managed_bytes),
    'within 2 % (free VRAM moves)',
    near(Number(metric(managed.records, 'managed_bytes')?.value), Number(theirsManaged.managed_bytes), 0.02, GiB),
  );
  check(
    'managed: GPU fill GB/s (kernel vs cuMemsetD32)',
    metric(managed.records, 'large_gpu_fill_gbps')?.value,
    theirsManaged.gpu_fill_gbps,
    'shown',
    null,
  );

  // 4. sysmem-fallback, bounded below free VRAM.
  const sysmem = probe('sysmem-fallback', params['sysmem-fallback']);
  if (sysmem.status !== 0) throw new Error(`cudaprobe sysmem-fallback exited ${sysmem.status}`);
  raw.sysmemFallback = sysmem.records;
  const allocated = metric(sysmem.records, 'allocated_bytes');
  check(
    'sysmem-fallback: allocated',
    gib(allocated?.value),
    gib(sysmemGib * GiB),
    'the bound, exactly',
    allocated?.value === sysmemGib * GiB && allocated?.attrs?.stopped_by === 'bound',
  );
  check(
    'sysmem-fallback: allocates_past_vram',
    fact(sysmem.records, 'allocates_past_vram'),
    null,
    'null: the bound is below free VRAM',
    fact(sysmem.records, 'allocates_past_vram') === null,
  );
  const theirsWrite = peer('write', CHUNK);
  raw.peerWrite = theirsWrite;
  const firstWrite = metric(sysmem.records, 'first_chunk_write_gbps')?.value ?? NaN;
  check(
    'first chunk write GB/s (cuMemsetD32, 256 MiB)',
    firstWrite,
    theirsWrite.write_gbps,
    'within 25 %',
    near(firstWrite, Number(theirsWrite.write_gbps), 0.25),
  );
} catch (error) {
  console.error(`bench/memory-checks: ${(error as Error).message}`);
  writeOut({ error: (error as Error).message, probe: probePath, python, sysinfo: info, params, checks, raw });
  process.exit(1);
}

const fmt = (value: unknown) =>
  typeof value === 'number' ? (Number.isInteger(value) ? String(value) : value.toFixed(2)) : (JSON.stringify(value) ?? 'n/a');
console.log(
  formatTable(
    ['measurement', 'cudaprobe', 'peer (ctypes)', 'rule', 'check'],
    checks.map((comparison) => [comparison.what, fmt(comparison.cudaprobe), fmt(comparison.peer), comparison.rule, comparison.status]),
  ),
);
const failed = checks.filter((comparison) => comparison.status === 'fail');
const judged = checks.filter((comparison) => comparison.status !== 'info');
console.log(
  `\n${judged.length - failed.length}/${judged.length} checks passed${failed.length ? `: FAILED ${failed.map((comparison) => comparison.what).join('; ')}` : ''} (${((performance.now() - started) / 1000).toFixed(0)} s)`,
);
writeOut({ probe: probePath, python, sysinfo: info, freeVram, params, checks, raw });
process.exitCode = failed.length ? 1 : 0;
