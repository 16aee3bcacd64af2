/**
 * bench/ssh-fanout: `cudaprobe run sysinfo` on 32 SSH targets on loopback (one sshd listening
 * on 32 ports, each a target with its own host-key entry), through cudamatrix, against OpenSSH's
 * own client doing the same work in parallel (`xargs -P 32 ssh ... cudaprobe run sysinfo`, the
 * binary already in place) in the same run. Alternated rounds, medians. cudamatrix must not be
 * slower than 1.2 x the baseline; a warm run (binary cached on the targets) must skip the upload.
 *
 *   pnpm bench:ssh-fanout [--targets 32] [--rounds 5]      (needs sshd and root)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../core/package-root.ts';
import { parseMatrix } from '../matrix/load.ts';
import { planCells } from '../run/plan.ts';
import { buildProbe } from '../probes/build.ts';
import { executePlan } from '../run/execute.ts';
import { summarize } from '../results/verdicts.ts';
import { formatTable } from '../results/reporters/console.ts';
import { nodeArch } from '../runners/local.ts';
import { cliEntry } from '../test/cli.ts';
import { tempDir } from '../test/helpers.ts';
import { sshdAvailable, startSshd } from '../test/sshd.ts';

const { values } = parseArgs({ options: { targets: { type: 'string', default: '32' }, rounds: { type: 'string', default: '5' } } });
const n = Number(values.targets);
const rounds = Number(values.rounds);
if (!sshdAvailable()) {
  console.error('bench/ssh-fanout needs /usr/sbin/sshd and root');
  process.exit(2);
}

const sshd = await startSshd(n);
const work = tempDir('cm-fanout-');
const probe = await buildProbe({ platform: 'linux', arch: nodeArch() });
// The baseline's binary, already in place on the "remote" (the same machine).
const placed = path.join(work, 'cudaprobe');
copyFileSync(probe.path, placed);
execFileSync('chmod', ['755', placed]);

const matrixText = [
  'version: 1',
  `concurrency: ${n}`,
  'defaults: {probes: [sysinfo]}',
  'targets:',
  ...sshd.ports.map(
    (p, i) =>
      `  - name: t${i}\n    transport: {kind: ssh, host: 127.0.0.1, port: ${p}, identityFile: ${sshd.key}, knownHosts: ${sshd.knownHosts}, sshConfig: false, agent: false, shell: posix}`,
  ),
].join('\n');
const matrixFile = path.join(work, 'matrix.yaml');
writeFileSync(matrixFile, `${matrixText}\n`);

function openssh(): number {
  const t0 = performance.now();
  const r = spawnSync(
    'sh',
    [
      '-c',
      `printf '%s\\n' ${sshd.ports.join(' ')} | xargs -P ${n} -I{} ssh -p {} -i ${sshd.key} -o UserKnownHostsFile=${sshd.knownHosts} -o StrictHostKeyChecking=yes -o BatchMode=yes -o IdentitiesOnly=yes -o LogLevel=ERROR root@127.0.0.1 ${placed} run sysinfo > /dev/null`,
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0 && r.status !== 123) throw new Error(`xargs ssh failed (${r.status}): ${r.stderr}`);
  return performance.now() - t0;
}

async function inProcess(): Promise<{ ms: number; uploaded: number }> {
  const t0 = performance.now();
  const summary = summarize((await executePlan(planCells(parseMatrix(matrixText, matrixFile)), { runsDir: path.join(work, 'runs') })).events);
  const ms = performance.now() - t0;
  const ready = summary.targets.map((t) => t.ready);
  if (ready.some((r) => !r) || summary.hasInfrastructureError) throw new Error('a target failed');
  return { ms, uploaded: ready.filter((r) => r!.probe.uploaded).length };
}

function cli(): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', cliEntry, 'run', '-m', matrixFile, '--results-dir', path.join(work, 'runs'), '--junit', path.join(work, 'junit.xml'), '--quiet'], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`cudamatrix exited ${r.status}: ${r.stdout.slice(-500)} ${r.stderr}`);
  return performance.now() - t0;
}

// Cold: the probe is not on the targets yet.
rmSync(path.join(homedir(), '.cache', 'cudamatrix', 'deployed', `linux-${nodeArch()}-${probe.hash}`), { recursive: true, force: true });
const cold = await inProcess();
openssh(); // warm the page cache for ssh and the binary alike

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const s = { openssh: [] as number[], inProcess: [] as number[], cli: [] as number[], warmUploads: [] as number[] };
for (let i = 0; i < rounds; i++) {
  s.openssh.push(openssh());
  const w = await inProcess();
  s.inProcess.push(w.ms);
  s.warmUploads.push(w.uploaded);
  s.cli.push(cli());
}
await sshd.stop();

const base = median(s.openssh);
const rows = [
  [`OpenSSH: xargs -P ${n} ssh ... cudaprobe run sysinfo (baseline)`, base, 1],
  [`cudamatrix run, in-process, warm (${n} targets)`, median(s.inProcess), median(s.inProcess) / base],
  [`cudamatrix run, CLI process (Node + tsx start-up), warm`, median(s.cli), median(s.cli) / base],
  [`cudamatrix run, in-process, cold (uploads to ${cold.uploaded} targets)`, cold.ms, cold.ms / base],
] as const;
console.log(`\n${n} SSH targets on loopback, median of ${rounds} alternated rounds (${process.version}, ${process.platform}/${process.arch})\n`);
console.log(formatTable(['what', 'wall ms', 'ratio to OpenSSH'], rows.map(([w, ms, r]) => [w, ms.toFixed(0), r.toFixed(2)])));
const warmSkipped = s.warmUploads.every((u) => u === 0);
const ratio = median(s.inProcess) / base;
console.log(`\nwarm runs uploaded to ${Math.max(...s.warmUploads)} targets (must be 0): ${warmSkipped ? 'ok' : 'FAIL'}`);
console.log(`cudamatrix / OpenSSH = ${ratio.toFixed(2)} (budget 1.20): ${ratio <= 1.2 ? 'ok' : 'OVER BUDGET'}`);
const outDir = path.join(packageRoot(), 'bench', 'out');
mkdirSync(outDir, { recursive: true });
writeFileSync(path.join(outDir, 'ssh-fanout.json'), `${JSON.stringify({ targets: n, rounds, node: process.version, samplesMs: s, coldMs: cold.ms, coldUploads: cold.uploaded, ratio }, null, 2)}\n`);
process.exitCode = warmSkipped && ratio <= 1.2 ? 0 : 1;
