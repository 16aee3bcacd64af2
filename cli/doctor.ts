/**
 * `cudamatrix doctor`: what this machine has for running probes, and what to fix. It builds
 * cudaprobe and runs its sysinfo probe locally, so what it reports is measured, not guessed.
 * Any ✗ makes it exit non-zero (3), with what to fix at the end; flags that would do nothing
 * are usage errors (2).
 */
import { execa } from 'execa';
import { CudamatrixError, describeError, ExitCode, exitCodeFor } from '../core/errors.ts';
import { closestName } from '../core/suggest.ts';
import { formatValue } from '../core/units.ts';
import type { Target } from '../matrix/load.ts';
import { driverSubjectOf, type KnownBadEntry, knownBadFor, knownBadLine, loadKnownBad } from '../matrix/known-bad.ts';
import { chooseProbe, probeBinaries, probeBinary } from '../probes/binary.ts';
import { compilerFor } from '../probes/build.ts';
import { deployProbe } from '../probes/deploy.ts';
import { runProbe } from '../probes/run-probe.ts';
import { reapContainers } from '../transports/docker/reap.ts';
import { connectLocal, nodeArch } from '../transports/local.ts';
import { connectChain, noGpuAsked, fixAt, reachedWords, type Hop } from '../transports/registry.ts';
import { hostKeyAddedMessage, type Session } from '../transports/transport.ts';
import { loadMatrixArg } from './matrix-arg.ts';

export interface DoctorOptions {
  target?: string;
  matrix?: string;
  acceptNew?: boolean;
  reap?: boolean;
  endpoint?: string;
  /** With --reap: also remove containers of runs started longer ago than this ("6h", "90m", "2d"). */
  olderThan?: string;
}

/** A duration for --older-than: a number with s, m, h or d. */
export function parseAge(value: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$/.exec(value);
  if (!match || !(Number(match[1]) > 0)) {
    throw new CudamatrixError('USAGE', `--older-than needs a duration such as 6h, 90m, 2d or 300s, got "${value}"`);
  }
  return Number(match[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 's' | 'm' | 'h' | 'd'];
}

/**
 * `cudamatrix doctor` as the command line calls it: refuses flags that would do nothing
 * (a usage error, exit 2), then checks this machine, one target, or reaps a Docker engine.
 */
export async function doctorAction(opts: DoctorOptions): Promise<number> {
  const usage = (message: string) => new CudamatrixError('USAGE', message);
  if (opts.reap && opts.target !== undefined) {
    throw usage(
      '--reap and --target do not go together: --reap removes leftover containers from a Docker engine, --target checks one target of a matrix; run them one at a time',
    );
  }
  if (opts.endpoint !== undefined && !opts.reap) {
    throw usage(
      `--endpoint needs --reap: it names the Docker engine whose leftover containers --reap removes (got --endpoint ${opts.endpoint} alone, which would do nothing)`,
    );
  }
  if (opts.olderThan !== undefined && !opts.reap) {
    throw usage(
      `--older-than needs --reap: it says how old a run's containers must be for --reap to remove them whoever started them (got --older-than ${opts.olderThan} alone, which would do nothing)`,
    );
  }
  if (opts.acceptNew && opts.target === undefined && opts.matrix === undefined) {
    throw usage(
      "--accept-new needs --target NAME or -m FILE: it accepts the host keys of the targets' SSH hosts (plain doctor connects to nothing)",
    );
  }
  if (opts.reap && opts.matrix !== undefined) {
    throw usage(
      `--reap and -m/--matrix do not go together: --reap removes leftover containers from a Docker engine, -m checks the targets of a matrix; run them one at a time`,
    );
  }
  if (opts.reap) return doctorReap(opts.endpoint, opts.olderThan !== undefined ? parseAge(opts.olderThan) : undefined);
  if (opts.target !== undefined) return doctorTarget(opts.target, opts.matrix, Boolean(opts.acceptNew));
  if (opts.matrix !== undefined) return doctorMatrix(opts.matrix, Boolean(opts.acceptNew));
  return doctorCommand();
}

export interface Check {
  name: string;
  ok: boolean | null | 'warning'; // null: informational; 'warning': said with !, not a failure
  detail: string;
  /** What to do about a failed check. */
  fix?: string;
}

/** A check's line: its mark (✓, ✗, i, or ! for a warning), its name padded to `width`, its detail. */
export function checkLine(check: Check, width: number): string {
  const mark = check.ok === 'warning' ? '!' : check.ok === null ? 'i' : check.ok ? '✓' : '✗';
  return `${mark} ${check.name.padEnd(width)}  ${check.detail}\n`;
}

/**
 * The known-bad driver entries (matrix/known-bad-drivers.yaml) that sysinfo's driver, OS, driver
 * model and GPU match, each a warning: a known regression is said, it does not fail doctor.
 */
export function knownBadChecks(sysinfo: Record<string, unknown>, entries?: readonly KnownBadEntry[]): Check[] {
  const subject = driverSubjectOf(sysinfo);
  if (!subject) return [];
  try {
    return knownBadFor(subject, entries ?? loadKnownBad()).map((e) => ({
      name: 'known-bad',
      ok: 'warning',
      detail: knownBadLine(e, subject),
    }));
  } catch (error) {
    return [{ name: 'known-bad', ok: 'warning', detail: `the known-bad driver registry could not be read: ${describeError(error)}` }];
  }
}

/** What to do about an error whose hop's kind says nothing about it (transports/<kind>/kind.ts has the rest). */
const fixes: Partial<Record<string, string>> = {
  TARGET_UNREACHABLE: 'check the host name and port, that the server runs there, and that no firewall is in the way',
  PROBE_BUILD_FAILED: 'install a compiler for the target platform (g++, or MinGW-w64 for Windows)',
  TRANSPORT_FAILED:
    "the connection broke, or the session could not start on the target (the message says which): check the network and the server logs; over SSH, also that the login shell's rc files (~/.bashrc) do not wait for input",
};

const driverFix =
  'install the NVIDIA driver (it provides libcuda.so.1, nvcuda.dll on Windows); in a container, start it with the NVIDIA Container Toolkit (docker run --gpus all)';
const nvmlFix = 'NVML (libnvidia-ml.so.1, nvml.dll) comes with the NVIDIA driver: install the driver, or repair it if nvidia-smi fails too';
const gpuFix = 'a GPU the driver can use: check that nvidia-smi -L lists it, and that CUDA_VISIBLE_DEVICES does not hide it';
/**
 * What to do when sysinfo could not tell the environment. On Windows the environment is the
 * driver's model (WDDM, TCC, MCDM): without a driver the driver line's fix is the one.
 */
export function environmentFix(reason: string): string {
  return /NVIDIA driver/.test(reason)
    ? 'see driver'
    : 'sysinfo could not tell the environment: run with CUDAMATRIX_DEBUG=1 and report what it prints';
}

function buildFix(): string {
  const cxx = process.env.CXX;
  return cxx
    ? `CXX is set to "${cxx}", which did not work: point it at a C++17 compiler, or unset it to use g++ or clang++ from PATH`
    : 'install a C++17 compiler (Debian: apt-get install g++), or set CXX to one';
}

/** One line per ✗ check, saying what to fix; the exit status (3 when anything failed). */
function conclude(checks: Check[], write: (text: string) => void, success: string): number {
  const broken = checks.filter((check) => check.ok === false);
  if (broken.length === 0) {
    write(`\n${success}\n`);
    return ExitCode.ok;
  }
  write(`\n${broken.length} problem(s): probes that need them will be skipped. To fix:\n`);
  const width = Math.max(...broken.map((check) => check.name.length));
  for (const check of broken) write(`  ${check.name.padEnd(width)}  ${check.fix ?? 'see the line above'}\n`);
  return ExitCode.infrastructure;
}

/** How reaching each hop was proven, in the words of its kind (a session named just by its kind says nothing more). */
function reachedLine(hops: Hop[], description: string): string {
  if (hops.length === 1) return description === hops[0]!.kind ? reachedWords(hops[0]!) : `${description}: ${reachedWords(hops[0]!)}`;
  return `${description}: ${hops.map((hop) => `${hop.kind}: ${reachedWords(hop)}`).join('; ')}`;
}

/** A chain of hops for people: "ssh (host gpu-box, user ci, identityFile /home/me/.ssh/id_lab) → docker (gpus none)". */
export function describeHops(hops: Hop[]): string {
  return hops
    .map(({ kind, ...options }) => {
      const words = Object.entries(options)
        .filter(([, value]) => value !== undefined)
        .map(
          ([k, value]) =>
            `${k} ${Array.isArray(value) ? value.join(',') : typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value)}`,
        );
      return words.length ? `${kind} (${words.join(', ')})` : kind;
    })
    .join(' → ');
}

/** `cudamatrix doctor --target NAME`: each step of reaching a target and running sysinfo there. */
export async function doctorTarget(name: string, matrixFile: string | undefined, acceptNew: boolean): Promise<number> {
  const matrix = await loadMatrixArg(matrixFile, { acceptNew });
  const target = matrix.targets.find((matrixTarget) => matrixTarget.name === name);
  if (!target) {
    const hint = closestName(
      name,
      matrix.targets.map((matrixTarget) => matrixTarget.name),
    );
    throw new CudamatrixError(
      'USAGE',
      `no target "${name}" in ${matrix.file}${hint ? ` (did you mean "${hint}"?)` : ''}; its targets are: ${matrix.targets.map((matrixTarget) => matrixTarget.name).join(', ')}`,
    );
  }
  return checkTarget(target, acceptNew);
}

/**
 * `cudamatrix doctor -m FILE`: every target of the matrix, one after the other (as --target
 * checks one), then which of them have problems. The exit status is the highest of theirs.
 */
export async function doctorMatrix(matrixFile: string, acceptNew: boolean): Promise<number> {
  const matrix = await loadMatrixArg(matrixFile, { acceptNew });
  const write = (text: string) => process.stdout.write(text);
  const statuses: { name: string; status: number }[] = [];
  for (const [i, target] of matrix.targets.entries()) {
    write(`${i ? '\n' : ''}target ${target.name} (${i + 1} of ${matrix.targets.length})\n`);
    statuses.push({ name: target.name, status: await checkTarget(target, acceptNew) });
  }
  const failed = statuses.filter((result) => result.status !== ExitCode.ok);
  write(
    failed.length === 0
      ? `\nAll ${statuses.length} target(s) of ${matrix.file} have everything probes need.\n`
      : `\n${failed.length} of ${statuses.length} target(s) of ${matrix.file} have problems (each said above, with its fix): ${failed.map((result) => result.name).join(', ')}\n`,
  );
  return Math.max(ExitCode.ok, ...failed.map((result) => result.status));
}

/** Each step of reaching one target and running sysinfo there; the exit status (0, or what failed). */
async function checkTarget(target: Target, acceptNew: boolean): Promise<number> {
  const name = target.name;
  const write = (text: string) => process.stdout.write(text);
  const checks: Check[] = [];
  const say = (ok: Check['ok'], what: string, detail: string, fix?: string) => {
    checks.push({ name: what, ok, detail, fix });
    write(`${ok === 'warning' ? '!' : ok === null ? 'i' : ok ? '✓' : '✗'} ${what.padEnd(12)} ${detail}\n`);
  };
  say(null, 'transport', describeHops(target.hops));
  // A container that asks for no GPU has no driver by design: that is said, not failed.
  const noGpu = noGpuAsked(target.hops);
  const noGpuWords = `none, as asked: the target requests no GPU (${noGpu} in the matrix), so probes that need one are skipped there`;
  let session: Session | undefined;
  // The hop being connected, or the last once all are: a failure is put at it, for its fix.
  let hop = 0;
  try {
    // Built once, for the transports that need it before the session (docker) and for deploying.
    const build = probeBinaries({ onProgress: (message) => process.stderr.write(`${message}\n`) });
    session = await connectChain(
      target.hops,
      {
        target: name,
        runId: `doctor-${Date.now()}`,
        acceptNewHostKeys: acceptNew,
        binaryFor: build,
        onProgress: (message) => process.stderr.write(`${message}\n`),
        onHostKeyAdded: (added) => process.stderr.write(`${hostKeyAddedMessage(added)}\n`),
      },
      (index) => (hop = index),
    );
    say(true, 'reachable', reachedLine(target.hops, session.description));
    say(true, 'platform', `${session.platform}/${session.arch}, shell ${session.shell}`);
    const deployed = await deployProbe(session, build);
    say(
      true,
      'cudaprobe',
      `${deployed.binary.prebuilt ? 'prebuilt, ' : ''}${deployed.binary.compiler}; ${deployed.remotePath} (${deployed.uploaded ? 'uploaded now' : 'already there, hash verified'})`,
    );
    const run = await runProbe(session, deployed, 'sysinfo', { timeoutMs: 120_000, device: target.device });
    const sysinfo = Object.fromEntries(run.records.flatMap((record) => (record.type === 'sysinfo' ? [[record.name, record]] : [])));
    const reported = (field: string) => sysinfo[field]?.value;
    const why = (field: string) => (sysinfo[field] as { reason?: string } | undefined)?.reason ?? '';
    say(
      reported('environment') !== null && reported('environment') !== undefined,
      'environment',
      String(reported('environment') ?? `unknown: ${why('environment')}`),
      environmentFix(why('environment')),
    );
    if (noGpu && reported('driver_found') !== true) {
      say(null, 'driver', noGpuWords);
      return conclude(
        checks,
        write,
        `Target ${name} is reachable and runs cudaprobe; it asks for no GPU (${noGpu}), so only sysinfo runs there (it reports the environment; its GPU facts are skipped).`,
      );
    }
    say(
      reported('driver_found') === true,
      'driver',
      reported('driver_found') ? `${reported('driver_library')} (CUDA ${reported('cuda_driver_version')})` : why('cuda_driver_version'),
      driverFix,
    );
    say(
      reported('nvml_found') === true,
      'NVML',
      reported('nvml_found') ? `driver ${reported('driver_version')}` : why('driver_version'),
      nvmlFix,
    );
    for (const check of knownBadChecks(Object.fromEntries(Object.entries(sysinfo).map(([k, record]) => [k, record.value]))))
      say(check.ok, check.name, check.detail);
    say(
      run.status === 'passed',
      'GPU',
      run.status === 'passed' ? `${reported('gpu_name')} (${reported('device_count')} device(s))` : (run.reason ?? ''),
      reported('driver_found') ? gpuFix : 'see driver',
    );
    return conclude(checks, write, `Target ${name} has everything probes need.`);
  } catch (error) {
    const code = error instanceof CudamatrixError ? error.code : 'TARGET_UNREACHABLE';
    const fix = fixAt(target.hops[hop], code) ?? fixes[code];
    say(false, code, describeError(error), fix);
    if (fix) write(`  fix: ${fix}\n`);
    return exitCodeFor(error instanceof CudamatrixError ? error : new CudamatrixError('TARGET_UNREACHABLE', describeError(error)));
  } finally {
    if (session) await Promise.resolve(session[Symbol.asyncDispose]()).catch(() => undefined);
  }
}

/**
 * `cudamatrix doctor --reap`: the containers of runs that are provably over, removed (a run of
 * this machine whose cudamatrix is gone, or with --older-than one older than that); the others
 * kept, each with the reason.
 */
export async function doctorReap(endpoint: string | undefined, olderThanMs?: number): Promise<number> {
  const reaped = await reapContainers({ endpoint }, { olderThanMs, given: '--endpoint' });
  for (const container of reaped.removed) process.stdout.write(`removed ${container}\n`);
  for (const keptContainer of reaped.kept) process.stdout.write(`kept ${keptContainer}\n`);
  process.stdout.write(
    `${reaped.removed.length} container(s) of earlier runs removed from ${reaped.endpoint} (from ${reaped.source})${reaped.kept.length ? `, ${reaped.kept.length} kept` : ''}\n`,
  );
  if (reaped.kept.length && olderThanMs === undefined) {
    process.stdout.write(
      `Only runs that are provably over are removed. To remove those too old to be alive, whichever machine started them: --older-than DURATION (e.g. --older-than 6h).\n`,
    );
  }
  return ExitCode.ok;
}

/** `cudamatrix doctor`: this machine. */
export async function doctorCommand(): Promise<number> {
  const checks: Check[] = [];
  const platform = process.platform === 'win32' ? 'windows' : 'linux';
  checks.push({ name: 'node', ok: true, detail: `${process.version} on ${process.platform}/${nodeArch()}` });

  let built = false;
  const choice = await chooseProbe(platform, nodeArch());
  try {
    const binary = await probeBinary({ platform, arch: nodeArch(), onProgress: (message) => process.stderr.write(`${message}\n`) });
    built = true;
    if (binary.prebuilt) {
      checks.push({
        name: 'cudaprobe',
        ok: true,
        detail: `${choice.why}: ${binary.path} (sha256 ${binary.hash}…, built with ${binary.compiler}); no compiler needed`,
      });
    } else {
      checks.push({ name: 'compiler', ok: true, detail: binary.compiler });
      checks.push({
        name: 'cudaprobe',
        ok: true,
        detail: `compiled: ${choice.why}; ${binary.path} (${binary.built ? 'built now' : 'cached'})`,
      });
    }
  } catch (error) {
    const cacheUnusable = error instanceof CudamatrixError && error.code === 'USAGE';
    const fix = cacheUnusable
      ? 'set CUDAMATRIX_CACHE to a folder you can write to'
      : choice.use === 'compile'
        ? buildFix()
        : 'reinstall cudamatrix, or use a package made for this platform';
    checks.push({
      name: 'cudaprobe',
      ok: false,
      detail: `${choice.use === 'compile' ? 'build failed: ' : ''}${describeError(error)}`,
      fix,
    });
  }
  // Other platforms' binaries: what targets of those platforms would get.
  for (const [platformOf, archOf] of [
    ['linux', 'x86_64'],
    ['linux', 'aarch64'],
    ['windows', 'x86_64'],
  ] as const) {
    if (platformOf === platform && archOf === nodeArch()) continue;
    const other = await chooseProbe(platformOf, archOf);
    let detail = other.why;
    if (other.use === 'prebuilt') detail = `prebuilt cudaprobe (sha256 ${other.entry.sha256.slice(0, 16)}…)`;
    if (other.use === 'compile') {
      const lookup = await compilerFor(platformOf, archOf);
      detail = 'compiler' in lookup ? `compiled on first use, with ${lookup.compiler}` : lookup.missing;
    }
    checks.push({ name: `${other.key} targets`, ok: null, detail });
  }
  if (!built) {
    checks.push({ name: 'driver, GPU', ok: null, detail: 'not checked: cudaprobe measures them, and there is none for this machine' });
  } else {
    const session = await connectLocal({}, { target: 'doctor', runId: 'doctor' });
    try {
      const run = await runProbe(session, await deployProbe(session), 'sysinfo', { timeoutMs: 60_000 });
      const sysinfo = Object.fromEntries(run.records.flatMap((record) => (record.type === 'sysinfo' ? [[record.name, record]] : [])));
      const val = (field: string) => sysinfo[field]?.value;
      const why = (field: string) => (sysinfo[field] as { reason?: string } | undefined)?.reason ?? '';
      checks.push({
        name: 'environment',
        ok: val('environment') !== null && val('environment') !== undefined,
        detail: String(val('environment') ?? `unknown: ${why('environment')}`),
        fix: environmentFix(why('environment')),
      });
      checks.push({
        name: 'driver',
        ok: val('driver_found') === true,
        detail: val('driver_found') ? `${val('driver_library')} (CUDA ${val('cuda_driver_version') ?? '?'})` : why('cuda_driver_version'),
        fix: driverFix,
      });
      checks.push({
        name: 'NVML',
        ok: val('nvml_found') === true,
        detail: val('nvml_found') ? `driver ${val('driver_version')}` : why('driver_version'),
        fix: nvmlFix,
      });
      checks.push(...knownBadChecks(Object.fromEntries(Object.entries(sysinfo).map(([k, record]) => [k, record.value]))));
      checks.push({
        name: 'CUDA runtime',
        ok: null,
        detail: val('cudart_found')
          ? `${val('cudart_library')} (${val('cudart_version')})`
          : `${why('cudart_version')} (optional: runtime-API series are skipped without it)`,
      });
      if (run.status === 'passed') {
        checks.push({
          name: 'GPU',
          ok: true,
          detail: `${val('device_count')} device(s); #${val('gpu_index')}: ${val('gpu_name')}, cc ${val('compute_capability')}, ${formatValue(val('memory_total_bytes') as number, 'bytes')}, PCIe gen${val('pcie_gen_current') ?? '?'} x${val('pcie_width_current') ?? '?'}`,
        });
      } else {
        checks.push({
          name: 'GPU',
          ok: false,
          detail: run.reason ?? 'sysinfo did not run',
          fix: val('driver_found') ? gpuFix : 'see driver',
        });
      }
    } catch (error) {
      checks.push({
        name: 'sysinfo',
        ok: false,
        detail: `cudaprobe sysinfo did not run here: ${describeError(error)}`,
        fix: 'run with CUDAMATRIX_DEBUG=1 and report what it prints',
      });
    } finally {
      await session[Symbol.asyncDispose]();
    }
  }
  const width = Math.max(...checks.map((check) => check.name.length));
  for (const check of checks) process.stdout.write(checkLine(check, width));
  return conclude(checks, (text) => process.stdout.write(text), 'Everything probes need is here.');
}
