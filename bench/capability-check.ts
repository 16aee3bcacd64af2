/**
 * bench/capability-check: are issue 36's capability facts right? Runs host-register-flags,
 * memory-pools, virtual-memory and ipc-handles through cudaprobe, pinned-ceiling (one level, no
 * pre-fill: for failure_poisons) and p2p (for its IOMMU, ACS and override-variable facts, which it
 * reports with one GPU too), then bench/capability_peer.py, which decides the same facts on its
 * own (ctypes on the driver library: its own buffers, cuMemsetD32 fills, cuMemcpyDtoH read-backs,
 * a second Python process importing each IPC handle, sysfs and configuration space read itself),
 * and compares them fact by fact (bench/capability-compare.ts): value, claimed and
 * attribute_value equal; a fact null on either side is not compared, with the reason.
 *
 * Without a GPU (cudaprobe sysinfo exits 3), or when the peer skips (no driver library), it says
 * so, writes the JSON with `skipped` and exits 0. Exit 1: a fact disagrees or is missing on a side,
 * or a side failed to run; 2: a bad option.
 *
 *   pnpm bench:capability [--probe FILE] [--python python3] [--out FILE] [--size-mib 16] [--pin-max-gib 2] [--tiny]
 *
 * --tiny: 2 MiB buffers and a 0.5 GiB pin cap (for the tests; the facts do not depend on the size).
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
import {
  CAPABILITY_PROBES,
  compareCapabilities,
  comparisonsFail,
  peerFacts,
  probeFacts,
  type FactSide,
  type Comparison,
} from './capability-compare.ts';

function usage(message: string): never {
  console.error(
    `bench/capability-check: ${message}\nusage: capability-check [--probe FILE] [--python PYTHON] [--out FILE] [--size-mib N] [--pin-max-gib N] [--tiny]`,
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
      'size-mib': { type: 'string', default: '16' },
      'pin-max-gib': { type: 'string', default: '2' },
      tiny: { type: 'boolean', default: false },
    },
  });
} catch (error) {
  usage((error as Error).message);
}
const { values } = parsed;
const sizeMib = values.tiny ? 2 : Number(values['size-mib']);
const pinMaxGib = values.tiny ? 0.5 : Number(values['pin-max-gib']);
// The probes' own bounds: size_mib 1 to 256 (ipc-handles' range, the narrowest).
if (!(sizeMib >= 1 && sizeMib <= 256)) usage(`--size-mib takes 1 to 256 MiB, got ${values['size-mib']}`);
if (!(pinMaxGib >= 0.25)) usage(`--pin-max-gib takes at least 0.25 (one 256 MiB chunk), got ${values['pin-max-gib']}`);
if (values.probe && !existsSync(values.probe)) usage(`--probe ${values.probe}: no such file`);
const python = values.python!;
const out = path.resolve(values.out ?? path.join(packageRoot(), 'bench', 'out', 'capability-check.json'));
const peerScript = path.join(packageRoot(), 'bench', 'capability_peer.py');
const started = performance.now();
const probePath = values.probe ? path.resolve(values.probe) : (await buildProbe({ platform: 'linux', arch: nodeArch() })).path;
const settings = { sizeMib, pinMaxGib, pinChunkMib: 256 };

function writeOut(result: Record<string, unknown>): void {
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify({ bench: 'capability-check', probe: probePath, python, settings, ...result, elapsedS: (performance.now() - started) / 1000 }, null, 2)}\n`,
  );
}

interface ProbeRun {
  status: number | null;
  records: ProbeRecord[];
  /** The error and skip lines, or why it could not run. */
  problems: string[];
}

function probe(name: string, params: Record<string, string | number> = {}): ProbeRun {
  const args = ['run', name, '--device', '0', ...Object.entries(params).flatMap(([k, value]) => ['--param', `${k}=${value}`])];
  const result = spawnSync(probePath, args, { encoding: 'utf8', maxBuffer: 1 << 26, timeout: 600_000 });
  if (result.error) return { status: null, records: [], problems: [`could not run ${probePath}: ${result.error.message}`] };
  const { records } = parseProbeOutput(result.stdout);
  const problems = records.filter((record) => record.type === 'error' || record.type === 'skip').map((record) => JSON.stringify(record));
  return { status: result.status, records, problems };
}

type PeerAnswer = { skipped?: string; error?: string; features?: Record<string, FactSide>; iommu?: Record<string, FactSide> };
function peer(): PeerAnswer {
  const args = [peerScript, '--device', '0', '--size-mib', String(sizeMib), '--pin-max-gib', String(pinMaxGib), '--pin-chunk-mib', '256'];
  const result = spawnSync(python, args, { encoding: 'utf8', maxBuffer: 1 << 26, timeout: 600_000 });
  if (result.error) return { skipped: `${python} cannot be run (${(result.error as NodeJS.ErrnoException).code ?? result.error.message})` };
  try {
    return JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '') as PeerAnswer;
  } catch {
    return { error: `the peer exited ${result.status}: ${result.stderr.trim().slice(-800)}` };
  }
}

// ---- what is missing? ------------------------------------------------------------------------

const sys = probe('sysinfo');
const info = Object.fromEntries(sys.records.flatMap((record) => (record.type === 'sysinfo' ? [[record.name, record.value]] : [])));
if (sys.status === 3 || sys.status === null) {
  const why = `no usable GPU: ${sys.problems.join(' ') || `cudaprobe sysinfo exited ${sys.status}`}`;
  console.log(`capability-check: skipped: ${why}`);
  writeOut({ skipped: why, sysinfo: info, comparisons: [] });
  process.exit(0);
}
console.log(`capability-check on ${info.gpu_name} (driver ${info.driver_version})`);

// ---- both sides ------------------------------------------------------------------------------

const runs: Record<string, ProbeRun> = {};
for (const name of CAPABILITY_PROBES) runs[name] = probe(name, { size_mib: sizeMib });
runs['pinned-ceiling'] = probe('pinned-ceiling', {
  chunk_mib: settings.pinChunkMib,
  max_gib: pinMaxGib,
  prefill_percent: 0,
  reset_rounds: 0,
  registered_rounds: 0,
});
// With one GPU p2p reports its device facts and exits 3 (no pairs): that is a run here.
runs.p2p = probe('p2p', { size_mib: 16, repetitions: 3, map_mib: 16 });
const failedRuns = Object.entries(runs).filter(([name, run]) => !(run.status === 0 || (name === 'p2p' && run.status === 3)));

const theirs = peer();
if (theirs.skipped) {
  console.log(`capability-check: skipped: the peer: ${theirs.skipped}`);
  writeOut({ skipped: `the peer: ${theirs.skipped}`, sysinfo: info, comparisons: [] });
  process.exit(0);
}

const ours: Record<string, FactSide> = {};
for (const [name, run] of Object.entries(runs)) Object.assign(ours, probeFacts(name, run.records));
const comparisons: Comparison[] = compareCapabilities(ours, theirs.error ? {} : peerFacts(theirs));

// ---- the table -------------------------------------------------------------------------------

const show = (side: FactSide | null) =>
  !side
    ? 'n/a'
    : `${JSON.stringify(side.value)}${side.claimed !== undefined ? ` (claimed ${JSON.stringify(side.claimed)}, attr ${JSON.stringify(side.attribute_value ?? null)})` : ''}`;
const agreeWord = { agree: 'yes', disagree: 'NO', 'not compared': 'not compared', missing: 'MISSING' } as const;
console.log(
  formatTable(
    ['feature', 'cudaprobe', 'peer', 'agree?', 'why'],
    comparisons.map((row) => [row.feature, show(row.probe), show(row.peer), agreeWord[row.status], row.why.slice(0, 160)]),
  ),
);
const count = (status: Comparison['status']) => comparisons.filter((row) => row.status === status).length;
const counts = { agree: count('agree'), disagree: count('disagree'), notCompared: count('not compared'), missing: count('missing') };
const problems = [
  ...failedRuns.map(([name, run]) => `cudaprobe ${name} exited ${run.status}: ${run.problems.join(' ').slice(0, 500)}`),
  ...(theirs.error ? [`the peer: ${theirs.error}`] : []),
];
for (const problem of problems) console.log(`problem: ${problem}`);
const failed = comparisonsFail(comparisons) || problems.length > 0;
console.log(
  `\n${counts.agree} agree, ${counts.disagree} disagree, ${counts.notCompared} not compared, ${counts.missing} missing: ` +
    `${failed ? 'FAILED' : 'passed'} (${((performance.now() - started) / 1000).toFixed(0)} s)`,
);
writeOut({
  sysinfo: info,
  counts,
  problems,
  comparisons,
  raw: {
    probes: Object.fromEntries(
      Object.entries(runs).map(([name, run]) => [
        name,
        { status: run.status, problems: run.problems, facts: probeFacts(name, run.records) },
      ]),
    ),
    peer: theirs,
  },
});
process.exitCode = failed ? 1 : 0;
