/**
 * `cudamatrix doctor`: what this machine has for running probes, and what to fix. It builds
 * cudaprobe and runs its sysinfo probe locally, so what it reports is measured, not guessed.
 */
import { execa } from 'execa';
import { CudamatrixError, describeError, ExitCode, exitCodeFor } from '../core/errors.ts';
import { formatValue } from '../core/units.ts';
import { buildProbe } from '../probes/build.ts';
import { deployProbe } from '../probes/deploy.ts';
import { runProbe } from '../probes/run-probe.ts';
import { reapContainers } from '../runners/docker/transport.ts';
import { localTransport, nodeArch } from '../runners/local.ts';
import { connectChain } from '../runners/registry.ts';
import type { Session } from '../runners/transport.ts';
import { loadMatrixArg } from './matrix-arg.ts';

interface Check {
  name: string;
  ok: boolean | null; // null: informational
  detail: string;
}

const fixes: Record<string, string> = {
  TARGET_UNREACHABLE: 'check the host name and port, that sshd runs there, and that no firewall is in the way',
  HOST_KEY_UNKNOWN: 'add the host key to known_hosts (ssh-keyscan), or run once with --accept-new',
  HOST_KEY_MISMATCH: 'find out why the host key changed before removing the old line from known_hosts',
  AUTH_FAILED: 'put the public key in the remote ~/.ssh/authorized_keys, and check identityFile, passphraseEnv and user',
  PROBE_BUILD_FAILED: 'install a compiler for the target platform (g++, or MinGW-w64 for Windows)',
  TRANSPORT_FAILED: 'the connection broke: check the network and the server logs',
};

/** `cudamatrix doctor --target NAME`: each step of reaching a target and running sysinfo there. */
export async function doctorTarget(name: string, matrixFile: string | undefined, acceptNew: boolean): Promise<number> {
  const matrix = await loadMatrixArg(matrixFile);
  const target = matrix.targets.find((t) => t.name === name);
  if (!target) {
    throw new CudamatrixError('USAGE', `no target "${name}" in ${matrix.file}; its targets are: ${matrix.targets.map((t) => t.name).join(', ')}`);
  }
  const say = (ok: boolean | null, what: string, detail: string) => process.stdout.write(`${ok === null ? 'i' : ok ? '✓' : '✗'} ${what.padEnd(12)} ${detail}\n`);
  say(null, 'transport', target.hops.map((h) => JSON.stringify(h)).join(' -> '));
  let session: Session | undefined;
  try {
    session = await connectChain(target.hops, { target: name, runId: `doctor-${Date.now()}`, acceptNewHostKeys: acceptNew });
    say(true, 'reachable', `${session.description}: host key verified, authenticated`);
    say(true, 'platform', `${session.platform}/${session.arch}, shell ${session.shell}`);
    const deployed = await deployProbe(session);
    say(true, 'cudaprobe', `${deployed.binary.compiler}; ${deployed.remotePath} (${deployed.uploaded ? 'uploaded now' : 'already there, hash verified'})`);
    const run = await runProbe(session, deployed, 'sysinfo', { timeoutMs: 120_000, device: target.device });
    const s = Object.fromEntries(run.records.flatMap((r) => (r.type === 'sysinfo' ? [[r.name, r]] : [])));
    const v = (n: string) => s[n]?.value;
    const why = (n: string) => (s[n] as { reason?: string } | undefined)?.reason ?? '';
    say(v('environment') !== null && v('environment') !== undefined, 'environment', String(v('environment') ?? `unknown: ${why('environment')}`));
    say(v('driver_found') === true, 'driver', v('driver_found') ? `${v('driver_library')} (CUDA ${v('cuda_driver_version')})` : why('cuda_driver_version'));
    say(v('nvml_found') === true, 'NVML', v('nvml_found') ? `driver ${v('driver_version')}` : why('driver_version'));
    say(run.status === 'passed', 'GPU', run.status === 'passed' ? `${v('gpu_name')} (${v('device_count')} device(s))` : (run.reason ?? ''));
    return ExitCode.ok;
  } catch (error) {
    const code = error instanceof CudamatrixError ? error.code : 'TARGET_UNREACHABLE';
    say(false, code, describeError(error));
    if (fixes[code]) process.stdout.write(`  fix: ${fixes[code]}\n`);
    return exitCodeFor(error instanceof CudamatrixError ? error : new CudamatrixError('TARGET_UNREACHABLE', describeError(error)));
  } finally {
    if (session) await Promise.resolve(session[Symbol.asyncDispose]()).catch(() => undefined);
  }
}

/** `cudamatrix doctor --reap`: containers of crashed runs, removed. */
export async function doctorReap(endpoint: string | undefined): Promise<number> {
  const r = await reapContainers({ endpoint });
  for (const c of r.removed) process.stdout.write(`removed ${c}\n`);
  for (const c of r.kept) process.stdout.write(`kept ${c}\n`);
  process.stdout.write(`${r.removed.length} container(s) of earlier runs removed from ${r.endpoint}${r.kept.length ? `, ${r.kept.length} kept` : ''}\n`);
  return ExitCode.ok;
}

export async function doctorCommand(): Promise<number> {
  const checks: Check[] = [];
  const platform = process.platform === 'win32' ? 'windows' : 'linux';
  checks.push({ name: 'node', ok: true, detail: `${process.version} on ${process.platform}/${nodeArch()}` });

  let built = false;
  try {
    const b = await buildProbe({ platform, arch: nodeArch(), onProgress: (m) => process.stderr.write(`${m}\n`) });
    built = true;
    checks.push({ name: 'compiler', ok: true, detail: b.compiler });
    checks.push({ name: 'cudaprobe', ok: true, detail: `${b.path} (${b.built ? 'built now' : 'cached'})` });
  } catch (error) {
    checks.push({ name: 'cudaprobe', ok: false, detail: describeError(error) });
  }
  const mingw = await execa('x86_64-w64-mingw32-g++-posix', ['--version'], { reject: false });
  checks.push({
    name: 'windows build',
    ok: null,
    detail: mingw.exitCode === 0 ? `MinGW-w64 available: ${String(mingw.stdout).split('\n')[0]}` : 'no MinGW-w64: Windows targets need a prebuilt cudaprobe.exe (Debian: g++-mingw-w64-x86-64-posix)',
  });

  if (built) {
    const session = await localTransport.connect({}, { target: 'doctor', runId: 'doctor' });
    try {
      const run = await runProbe(session, await deployProbe(session), 'sysinfo', { timeoutMs: 60_000 });
      const s = Object.fromEntries(run.records.flatMap((r) => (r.type === 'sysinfo' ? [[r.name, r]] : [])));
      const val = (n: string) => s[n]?.value;
      const why = (n: string) => (s[n] as { reason?: string } | undefined)?.reason ?? '';
      checks.push({ name: 'environment', ok: val('environment') !== null, detail: String(val('environment') ?? `unknown: ${why('environment')}`) });
      checks.push({ name: 'driver', ok: val('driver_found') === true, detail: val('driver_found') ? `${val('driver_library')} (CUDA ${val('cuda_driver_version') ?? '?'})` : why('cuda_driver_version') });
      checks.push({ name: 'NVML', ok: val('nvml_found') === true, detail: val('nvml_found') ? `driver ${val('driver_version')}` : why('driver_version') });
      checks.push({ name: 'CUDA runtime', ok: null, detail: val('cudart_found') ? `${val('cudart_library')} (${val('cudart_version')})` : `${why('cudart_version')} (optional: runtime-API series are skipped without it)` });
      if (run.status === 'passed') {
        checks.push({
          name: 'GPU',
          ok: true,
          detail: `${val('device_count')} device(s); #${val('gpu_index')}: ${val('gpu_name')}, cc ${val('compute_capability')}, ${formatValue(val('memory_total_bytes') as number, 'bytes')}, PCIe gen${val('pcie_gen_current') ?? '?'} x${val('pcie_width_current') ?? '?'}`,
        });
      } else {
        checks.push({ name: 'GPU', ok: false, detail: run.reason ?? 'sysinfo did not run' });
      }
    } finally {
      await session[Symbol.asyncDispose]();
    }
  }
  const width = Math.max(...checks.map((c) => c.name.length));
  for (const c of checks) {
    const mark = c.ok === null ? 'i' : c.ok ? '✓' : '✗';
    process.stdout.write(`${mark} ${c.name.padEnd(width)}  ${c.detail}\n`);
  }
  const broken = checks.filter((c) => c.ok === false);
  process.stdout.write(broken.length ? `\n${broken.length} problem(s): probes that need them will be skipped.\n` : '\nEverything probes need is here.\n');
  return 0;
}
