/**
 * bench/probe-accuracy: are cudaprobe's timing probes right? Runs transfer-bandwidth,
 * event-timing and sync-latency, and the same measurements through PyTorch (bench/peer_torch.py,
 * torch.cuda.Event / pinned tensors / torch.cuda._sleep) in the same run on the same GPU, and
 * prints the ratios. Pinned H2D and D2H must be within 5 % of PyTorch's and not above the PCIe
 * link's theoretical rate (generation x width from sysinfo).
 *
 *   pnpm bench:accuracy [--python python3] [--out FILE]     (needs a GPU and torch)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../core/package-root.ts';
import { buildProbe } from '../probes/build.ts';
import { parseProbeOutput, type MetricRecord, type SysinfoRecord } from '../probes/protocol.ts';
import { formatTable } from '../results/reporters/console.ts';
import { nodeArch } from '../runners/local.ts';

const { values } = parseArgs({ options: { python: { type: 'string', default: 'python3' }, out: { type: 'string' } } });
const SIZES_MIB = [16, 256, 1024];
const probe = await buildProbe({ platform: 'linux', arch: nodeArch() });

function run(name: string, params: string[] = []) {
  const stdout = execFileSync(probe.path, ['run', name, ...params.flatMap((p) => ['--param', p])], { encoding: 'utf8', maxBuffer: 1 << 26 });
  return parseProbeOutput(stdout).records;
}
const metric = (records: ReturnType<typeof run>, name: string, attrs: Record<string, unknown> = {}) =>
  (records.find((r) => r.type === 'metric' && r.name === name && Object.entries(attrs).every(([k, v]) => r.attrs?.[k] === v)) as MetricRecord | undefined)?.value ?? NaN;

const sysinfo = Object.fromEntries(run('sysinfo').filter((r): r is SysinfoRecord => r.type === 'sysinfo').map((r) => [r.name, r.value]));
const transfer = run('transfer-bandwidth', [`sizes_mib=${SIZES_MIB.join(',')}`]);
const events = run('event-timing');
const sync = run('sync-latency');
const peer = JSON.parse(
  execFileSync(values.python!, [path.join(packageRoot(), 'bench', 'peer_torch.py'), '--sizes-mib', SIZES_MIB.join(',')], { encoding: 'utf8', maxBuffer: 1 << 26 }),
) as {
  torch: string;
  device: string;
  bandwidth: { direction: string; size_bytes: number; gbps: number }[];
  events: { resolution_us: number; distinct_values: number; elapsed_us: Record<string, number> };
  sync: { p50_us: number; p99_us: number; min_us: number };
};

const gen = Number(sysinfo.pcie_gen_max);
const width = Number(sysinfo.pcie_width_max);
const rates: Record<number, number> = { 1: 2.5, 2: 5, 3: 8, 4: 16, 5: 32, 6: 64 };
const efficiency = gen <= 2 ? 0.8 : gen <= 5 ? 128 / 130 : 242 / 256;
const linkGbps = (rates[gen] ?? NaN) * width * efficiency / 8;

const rows: string[][] = [];
const checks: { what: string; ok: boolean }[] = [];
for (const p of peer.bandwidth) {
  const ours = metric(transfer, 'bandwidth_gbps', { direction: p.direction, memory: 'pinned', size_bytes: p.size_bytes });
  const ratio = ours / p.gbps;
  const within = Math.abs(ratio - 1) <= 0.05;
  const underLink = ours <= linkGbps;
  rows.push([`pinned ${p.direction} ${p.size_bytes / 1024 ** 2} MiB (GB/s)`, ours.toFixed(2), p.gbps.toFixed(2), ratio.toFixed(3), within && underLink ? 'ok' : 'FAIL']);
  checks.push({ what: `pinned ${p.direction} ${p.size_bytes} within 5 % of torch`, ok: within }, { what: `pinned ${p.direction} ${p.size_bytes} <= link ${linkGbps.toFixed(1)} GB/s`, ok: underLink });
}
const ev = metric(events, 'resolution_us');
rows.push(['event resolution (us)', ev.toFixed(4), peer.events.resolution_us.toFixed(4), (ev / peer.events.resolution_us).toFixed(3), 'info']);
for (const t of Object.keys(peer.events.elapsed_us)) {
  const ours = metric(events, 'elapsed_us', { target_us: Number(t) });
  rows.push([`event-timed ${t} us spin (us)`, ours.toFixed(2), peer.events.elapsed_us[t]!.toFixed(2), (ours / peer.events.elapsed_us[t]!).toFixed(3), 'info']);
}
for (const k of ['p50_us', 'p99_us', 'min_us'] as const) {
  const ours = metric(sync, k);
  rows.push([`sync latency ${k.replace('_us', '')} (us)`, ours.toFixed(2), peer.sync[k].toFixed(2), (ours / peer.sync[k]).toFixed(3), 'info']);
}

console.log(`\nprobe accuracy on ${sysinfo.gpu_name} (driver ${sysinfo.driver_version}, PCIe gen${gen} x${width} = ${linkGbps.toFixed(1)} GB/s theoretical), peer: PyTorch ${peer.torch}\n`);
console.log(formatTable(['measurement', 'cudaprobe', 'torch', 'ratio', 'check'], rows));
const failed = checks.filter((c) => !c.ok);
console.log(`\n${checks.length - failed.length}/${checks.length} checks passed${failed.length ? `: FAILED ${failed.map((f) => f.what).join('; ')}` : ''}`);
const out = values.out ?? path.join(packageRoot(), 'bench', 'out', 'probe-accuracy.json');
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify({ sysinfo, linkGbps, peer, cudaprobe: { transfer, events, sync }, rows, checks }, null, 2)}\n`);
process.exitCode = failed.length ? 1 : 0;
