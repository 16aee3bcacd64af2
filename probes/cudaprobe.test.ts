/**
 * The cudaprobe program itself: built with the real compilers, run for real. There is no GPU
 * here, so these runs take the no-driver path; the GPU path is exercised on the H200 machine
 * and committed as records under records/.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hasCommand, integrationAvailable, tempDir, testCacheDir, WINE } from '../test/helpers.ts';
import { nodeArch } from '../transports/local.ts';
import { buildProbe, type ProbeBinary } from './build.ts';
import { readEventLog } from '../events/events.ts';
import { catalogue, effectiveParams, sampleReadings, type ProbeSpec } from './catalogue.ts';
import { isCapabilityFact } from './spec-helpers.ts';

/** The capability probes (issue 36): those whose facts are what an attribute claims against what works. */
const capabilityProbes = catalogue.filter((spec) => spec.facts.some(isCapabilityFact)).map((spec) => spec.name);
import { parseProbeOutput, type SysinfoRecord } from './protocol.ts';

/** A probe as `cudaprobe list` should show it: as the catalogue declares it. */
function asListed(spec: ProbeSpec) {
  const defaults = effectiveParams(spec.name);
  return {
    probe: spec.name,
    description: spec.title,
    claims: spec.claims.join(','),
    platforms: spec.platforms.join(','),
    params: Object.fromEntries(Object.entries(defaults).map(([k, value]) => [k, Array.isArray(value) ? value.join(',') : String(value)])),
  };
}

/** What `cudaprobe list` printed, each probe's line as the fields asListed gives. */
function listing(stdout: string) {
  const { records, problems } = parseProbeOutput(stdout);
  expect(problems).toEqual([]);
  return records.map((record) => {
    const { probe, description, claims, platforms, params } = record as unknown as ReturnType<typeof asListed>;
    return { probe, description, claims, platforms, params };
  });
}

let probe: ProbeBinary;
beforeAll(async () => {
  probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
});

function run(args: string[], env: NodeJS.ProcessEnv = process.env) {
  const result = spawnSync(probe.path, args, { encoding: 'utf8', env });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function sysinfoOf(stdout: string): Record<string, SysinfoRecord> {
  const { records, problems } = parseProbeOutput(stdout);
  expect(problems).toEqual([]);
  return Object.fromEntries(
    records.filter((record): record is SysinfoRecord => record.type === 'sysinfo').map((record) => [record.name, record]),
  );
}

describe('cudaprobe (Linux build)', () => {
  it('lists every probe as the catalogue declares it: name, title, claims, platforms and defaults, in its order', () => {
    const result = run(['list']);
    expect(result.code).toBe(0);
    const listed = listing(result.stdout);
    expect(listed.map((listedProbe) => listedProbe.probe)).toEqual(catalogue.map((probeSpec) => probeSpec.name));
    for (const [i, spec] of catalogue.entries()) expect(listed[i], spec.name).toEqual(asListed(spec));
  });

  it('names every command it takes in its usage (issue 20: wait was missing)', () => {
    const source = readFileSync(path.join(import.meta.dirname, 'cudaprobe', 'main.cpp'), 'utf8');
    const commands = [...source.matchAll(/if \(cmd == "([a-z]+)"\)/g)].map((match) => match[1]!).filter((command) => command !== 'help');
    expect(commands).toEqual(expect.arrayContaining(['list', 'run', 'judge', 'wait', 'version']));
    const result = run(['--help']);
    expect(result.code).toBe(0);
    for (const command of commands) expect(result.stdout, command).toMatch(new RegExp(`^(usage:| {6}) cudaprobe ${command}\\b`, 'm'));
  });

  it.each([
    [['run', 'pinned-vram', '--param', 'sizes_gib=1,-2'], 'parameter sizes_gib must be positive'],
    [
      ['run', 'pinned-vram', '--param', 'size_gib=1'],
      'probe pinned-vram has no parameter size_gib (it takes apis, register_size_gib, sizes_gib, wait_s)',
    ],
    [['run', 'pinned-vram', '--param', 'apis=cuda'], 'parameter apis must name driver and/or runtime'],
    [['run', 'transfer-bandwidth', '--param', 'repetitions=5'], 'repetitions must be at least 20'],
    [['run', 'sync-latency', '--param', 'iterations=many'], 'parameter iterations=many is not a number'],
    [['run', 'pinned-ceiling', '--param', 'max_fraction=0.99'], 'max_fraction takes a fraction'],
    [['run', 'memory-pools', '--param', 'size_mib=0'], 'size_mib takes 1 to 1024 MiB'],
    [['run', 'virtual-memory', '--param', 'max_reserve_gib=1.5'], 'max_reserve_gib takes a whole number of GiB'],
  ])('refuses bad parameters with exit 2: %j', (args, message) => {
    const result = run(args);
    expect(result.code).toBe(2);
    const error = parseProbeOutput(result.stdout).records.find((record) => record.type === 'error');
    expect(error).toMatchObject({ code: 'USAGE', message: expect.stringContaining(message) });
  });

  it.skipIf(hasCommand('nvidia-smi', ['-L']))(
    "steps a memory probe's subject through its phases without a driver, each source null with its reason",
    () => {
      const result = run(['run', 'pinned-vram', '--param', 'sizes_gib=0.25', '--param', 'apis=driver', '--param', 'register_size_gib=0']);
      expect(result.code).toBe(3);
      const records = parseProbeOutput(result.stdout).records;
      const samples = records.filter((record) => record.type === 'sample');
      expect(samples.map((sample) => sample.type === 'sample' && sample.phase)).toEqual([
        'baseline',
        'after-alloc',
        'after-touch',
        'after-free',
        'after-wait',
        'after-exit',
      ]);
      const baseline = samples[0]!;
      if (baseline.type !== 'sample') throw new Error('not a sample');
      // A real subject process was running: the sampler read its resident set.
      expect(baseline.readings.subject_rss_bytes).toBeGreaterThan(0);
      expect(baseline.readings.system_available_bytes).toBeGreaterThan(0);
      expect(baseline.readings.nvml_device_used_bytes).toBeNull();
      expect(baseline.reasons?.pdh_process_dedicated_bytes).toBe('PDH GPU counters exist on Windows only');
      expect(baseline.reasons?.subject_cu_used_bytes).toContain('no NVIDIA driver found');
      const exited = samples.at(-1)!;
      if (exited.type !== 'sample') throw new Error('not a sample');
      expect(exited.readings.subject_rss_bytes).toBeNull();
      expect(exited.reasons?.subject_rss_bytes).toBe('the subject has exited');
      expect(records.at(-1)).toMatchObject({ type: 'skip', reason: expect.stringContaining('no NVIDIA driver found') });
    },
  );

  // A GPU host finds its driver; this machine and CI have none.
  it.skipIf(hasCommand('nvidia-smi', ['-L']))(
    'reports the no-driver path as skipped with exit 3, and still reports the OS and environment',
    () => {
      const result = run(['run', 'sysinfo']);
      expect(result.code).toBe(3);
      const sysinfo = sysinfoOf(result.stdout);
      expect(sysinfo.os_family!.value).toBe('linux');
      expect(sysinfo.driver_found!.value).toBe(false);
      expect(sysinfo.cuda_driver_version).toMatchObject({ value: null, reason: expect.stringContaining('libcuda.so.1') });
      expect(sysinfo.environment!.value).toMatch(/^(linux|wsl2)$/);
      // The host's total, with or without a driver: the bound of a record's pinned amounts (behaviour/plausibility.ts).
      const memTotal = Number(/^MemTotal:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'))![1]) * 1024;
      expect(sysinfo.host_memory_total_bytes).toMatchObject({ value: memTotal, source: '/proc/meminfo MemTotal' });
      const skip = parseProbeOutput(result.stdout).records.find((record) => record.type === 'skip');
      expect(skip).toMatchObject({ probe: 'sysinfo', reason: expect.stringContaining('no NVIDIA driver found') });
    },
  );

  // Issue 36: each capability probe, without a driver, says so and decides nothing.
  it.skipIf(hasCommand('nvidia-smi', ['-L']))('takes the no-driver path in every capability probe: exit 3, a skip, no fact', () => {
    expect(capabilityProbes.length).toBeGreaterThan(0);
    for (const name of capabilityProbes) {
      const result = run(['run', name]);
      expect(result.code, name).toBe(3);
      // Nothing tried, nothing decided: the skip alone.
      expect(parseProbeOutput(result.stdout).records, name).toEqual([
        expect.objectContaining({ type: 'skip', probe: name, reason: expect.stringContaining('libcuda.so.1') }),
      ]);
    }
  });

  it.skipIf(hasCommand('nvidia-smi', ['-L']))(
    'ipc-handles without a driver: skipped with exit 3, and its importer answers with the reason instead of crashing',
    () => {
      const result = run(['run', 'ipc-handles']);
      expect(result.code).toBe(3);
      expect(parseProbeOutput(result.stdout).records).toEqual([
        expect.objectContaining({ type: 'skip', probe: 'ipc-handles', reason: expect.stringContaining('libcuda.so.1') }),
      ]);
      // The importer checks the driver before it reads its request: an answer either way.
      for (const input of ['{"handle_type":"posix_fd","bytes":4096,"seed":1,"handle":"5"}\n', '']) {
        const imported = spawnSync(probe.path, ['ipc-import', '--device', '0'], { input, encoding: 'utf8' });
        expect(imported.status).toBe(3);
        expect(JSON.parse(imported.stdout)).toEqual({
          call: 'load the driver library',
          result: expect.stringMatching(/^no NVIDIA driver found: .*libcuda\.so\.1/),
        });
      }
      const usage = spawnSync(probe.path, ['ipc-import', '--bogus'], { encoding: 'utf8' });
      expect(usage.status).toBe(2);
      expect(usage.stderr).toContain('unknown argument --bogus');
    },
  );

  it('runs a subject that answers over its pipe and exits when the pipe closes (a killed sampler leaves nothing behind)', async () => {
    const child = spawn(probe.path, ['subject'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines: string[] = [];
    child.stdout.on('data', (chunk) => lines.push(...String(chunk).trim().split('\n')));
    child.stdin.write('meminfo\nalloc driver pinned 1024\nbogus\n');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.stdin.end(); // what a killed sampler's pipe does
    const code = await Promise.race([exited, new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 5000))]);
    expect(code).toBe(0);
    const answers = lines.map((line) => JSON.parse(line));
    expect(answers[0]).toMatchObject({ ok: true });
    expect(answers[1]).toMatchObject({ ok: false, error: expect.stringContaining('no CUDA context') });
    expect(answers[2]).toMatchObject({ ok: false, error: 'unknown command: bogus' });
  });

  it('emits only facts and metrics the catalogue documents (checked on the committed H200 record)', () => {
    const h200Log = path.join(import.meta.dirname, '..', 'records', 'driver-580.159.04', 'h200-linux', 'events.jsonl');
    const seen = new Set<string>();
    for (const e of readEventLog(h200Log)) {
      if (e.type !== 'cell-end') continue;
      const spec = catalogue.find((probeSpec) => probeSpec.name === e.probe)!;
      for (const record of e.records) {
        if (record.type === 'fact' || record.type === 'sysinfo')
          expect(
            spec.facts.map((fact) => fact.name),
            `${e.probe}.${record.name}`,
          ).toContain(record.name);
        if (record.type === 'metric') {
          const declared = spec.metrics.find((metric) => metric.name === record.name);
          expect(declared, `${e.probe}.${record.name}`).toBeDefined();
          expect(record.unit, `${e.probe}.${record.name}`).toBe(declared!.unit);
        }
        if (record.type === 'sample') Object.keys(record.readings).forEach((k) => expect(Object.keys(sampleReadings)).toContain(k));
        if (record.type !== 'sample' && record.type !== 'skip' && 'name' in record) seen.add(`${e.probe}.${record.name}`);
      }
    }
    expect(seen.size).toBeGreaterThan(60);
  });

  // WSL2 as the probe sees it, in a mount namespace of its own (root and unshare(1) needed): WSL2's
  // kernel version in /proc/version, WSL's driver library in /usr/lib/wsl/lib and a Linux driver
  // library installed in the distribution (/usr/lib over an overlay). Both libraries are empty
  // stand-ins: which one was loaded shows in the reason the driver is unusable.
  const canUnshare = process.getuid?.() === 0 && hasCommand('unshare', ['--version']) && hasCommand('gcc', ['--version']);
  it.runIf(canUnshare)(
    'inside WSL2 loads /usr/lib/wsl/lib/libcuda.so.1 before a Linux driver in the distribution, and says it found that one',
    () => {
      const dir = tempDir();
      execFileSync('gcc', ['-shared', '-o', path.join(dir, 'libcuda.so.1'), '-x', 'c', '/dev/null']);
      writeFileSync(path.join(dir, 'version'), 'Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) #1 SMP\n');
      const libDir = `/usr/lib/${nodeArch()}-linux-gnu`;
      const script = [
        `mkdir ${dir}/u ${dir}/w`,
        `mount -t overlay overlay -o lowerdir=/usr/lib,upperdir=${dir}/u,workdir=${dir}/w /usr/lib`,
        'mkdir -p /usr/lib/wsl/lib',
        `cp ${dir}/libcuda.so.1 /usr/lib/wsl/lib/libcuda.so.1`,
        `cp ${dir}/libcuda.so.1 ${libDir}/libcuda.so.1`,
        `mount --bind ${dir}/version /proc/version`,
        `exec ${probe.path} run sysinfo`,
      ].join(' && ');
      const result = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script], { encoding: 'utf8' });
      expect(result.stderr).toBe('');
      const sysinfo = sysinfoOf(result.stdout);
      expect(sysinfo.wsl_version!.value).toBe(2);
      expect(sysinfo.cuda_driver_version!.reason).toBe('the CUDA driver library /usr/lib/wsl/lib/libcuda.so.1 lacks cuInit');
      expect(sysinfo.driver_library_ignored!.value).toBe(`${libDir}/libcuda.so.1`);
    },
  );

  it('only reports sysinfo names the catalogue documents', () => {
    const documented = new Set(catalogue.find((probeSpec) => probeSpec.name === 'sysinfo')!.facts.map((fact) => fact.name));
    for (const name of Object.keys(sysinfoOf(run(['run', 'sysinfo']).stdout))) expect(documented, name).toContain(name);
  });

  it.each([
    [['frobnicate'], 'unknown command frobnicate'],
    [['run'], 'run needs a probe name'],
    [['run', 'warp-drive'], 'unknown probe warp-drive'],
    [['run', 'sysinfo', '--device', 'x'], '--device needs a device index'],
    [['run', 'sysinfo', '--param', 'novalue'], '--param needs NAME=VALUE'],
    [[], 'missing command'],
  ])('exits 2 with a usage message for %j', (args, message) => {
    const result = run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stdout).toBe('');
  });

  const havePtxas = integrationAvailable('ptxas', hasCommand('ptxas', ['--version']), 'install the CUDA toolkit');
  it.runIf(havePtxas)('embeds PTX that ptxas accepts (ISA 6.0, sm_50 target, loadable by R470+)', () => {
    const ptx = run(['ptx']).stdout;
    expect(ptx).toMatch(/^\.version 6\.0$/m);
    expect(ptx).toMatch(/^\.target sm_50$/m);
    for (const k of ['noop', 'spin', 'fill']) expect(ptx).toContain(`.visible .entry ${k}(`);
    const dir = tempDir();
    const file = path.join(dir, 'kernels.ptx');
    writeFileSync(file, ptx);
    // CUDA 13's ptxas no longer generates code for sm_50; sm_75 is its oldest target, and
    // compiling the sm_50 PTX for it checks the syntax and the ISA version all the same.
    const out = execFileSync('ptxas', ['-arch=sm_75', file, '-o', path.join(dir, 'kernels.cubin')], { encoding: 'utf8' });
    expect(out).toBe('');
    expect(readFileSync(path.join(dir, 'kernels.cubin')).subarray(0, 4).toString('latin1')).toBe('\u007fELF');
  });

  it('caches builds by a hash of sources and compiler', async () => {
    const again = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
    expect(again).toMatchObject({ path: probe.path, hash: probe.hash, built: false });
    const fresh = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: tempDir() });
    expect(fresh).toMatchObject({ hash: probe.hash, built: true });
    // A fresh build of every source: 55 s to over 60 s on the 2-core dev box shared with others.
  }, 300_000);
});

describe('cudaprobe.exe (Windows build, cross-compiled with MinGW-w64, run under Wine)', () => {
  const haveMingw = hasCommand('x86_64-w64-mingw32-g++-posix');
  const haveWine = hasCommand(WINE, ['--version']);
  const ready = integrationAvailable('MinGW-w64 and Wine', haveMingw && haveWine, 'apt-get install g++-mingw-w64-x86-64-posix wine64');
  let exe: ProbeBinary;
  const wineEnv = { ...process.env, WINEDEBUG: '-all', WINEPREFIX: path.join(testCacheDir, 'wineprefix') };
  /** Whether Wine has a DLL (Debian's wine64 keeps them in one folder). */
  const hasDll = (name: string) => existsSync(path.join('/usr/lib/x86_64-linux-gnu/wine/x86_64-windows', name));
  const wine = (args: string[]) => {
    const result = spawnSync(WINE, [exe.path, ...args], { encoding: 'utf8', env: wineEnv, timeout: 120_000 });
    return { code: result.status, stdout: result.stdout };
  };

  beforeAll(async () => {
    if (ready) exe = await buildProbe({ platform: 'windows', arch: 'x86_64', cacheDir: testCacheDir });
  }, 300_000);

  it.runIf(ready)('is a PE executable', () => {
    expect(readFileSync(exe.path).subarray(0, 2).toString('latin1')).toBe('MZ');
    expect(exe.path.endsWith('cudaprobe.exe')).toBe(true);
  });

  it.runIf(ready)('takes the no-driver path on Windows: nvcuda.dll missing, exit 3, OS facts from RtlGetVersion', () => {
    const result = wine(['run', 'sysinfo']);
    expect(result.code).toBe(3);
    const sysinfo = sysinfoOf(result.stdout);
    expect(sysinfo.os_family!.value).toBe('windows');
    expect(typeof sysinfo.os_build!.value).toBe('number');
    expect(sysinfo.wine_version!.value).toMatch(/^\d+\.\d+/);
    expect(sysinfo.driver_found!.value).toBe(false);
    expect(sysinfo.cuda_driver_version!.reason).toContain('nvcuda.dll');
    expect(sysinfo.driver_version!.reason).toContain('nvml.dll');
    expect(sysinfo.cudart_found!.value).toBe(false);
    // Without a driver the Windows driver model, and so the environment, cannot be known.
    expect(sysinfo.environment).toMatchObject({ value: null, reason: expect.stringContaining('without a usable NVIDIA driver') });
    // The registry setting, absent in Wine's registry; the live state needs the device's adapter.
    expect(sysinfo.hags_setting).toMatchObject({ value: null, reason: expect.stringContaining('HwSchMode') });
    expect(sysinfo.hags_enabled).toMatchObject({ value: null, reason: 'no CUDA device to match a GPU adapter with' });
    expect(sysinfo.hags).toBeUndefined();
    expect(sysinfo.os_name!.value).toMatch(/^Windows (11 )?\d+\.\d+\.\d+$/);
    if (Number(sysinfo.os_build!.value) >= 22000) expect(sysinfo.os_name!.value).toMatch(/^Windows 11 /);
    expect(sysinfo.wsl).toBeUndefined();
    // Wine answers GlobalMemoryStatusEx from this machine's memory.
    expect(sysinfo.host_memory_total_bytes).toMatchObject({ value: expect.any(Number), source: 'GlobalMemoryStatusEx' });
    expect(sysinfo.host_memory_total_bytes!.value).toBeGreaterThan(2 ** 30);
  });

  it.runIf(ready)('skips ipc-handles without nvcuda.dll (exit 3), and its importer answers with the reason (exit 3)', () => {
    const result = wine(['run', 'ipc-handles']);
    expect(result.code).toBe(3);
    expect(parseProbeOutput(result.stdout).records).toEqual([
      expect.objectContaining({ type: 'skip', probe: 'ipc-handles', reason: expect.stringContaining('nvcuda.dll') }),
    ]);
    const imported = spawnSync(WINE, [exe.path, 'ipc-import'], {
      input: '{"handle_type":"win32","bytes":4096,"seed":1,"handle":"1234"}\n',
      encoding: 'utf8',
      env: wineEnv,
      timeout: 120_000,
    });
    expect(imported.status).toBe(3);
    expect(JSON.parse(imported.stdout)).toEqual({ call: 'load the driver library', result: expect.stringContaining('nvcuda.dll') });
  });

  it.runIf(ready)('starts a subject, steps it through its phases over the pipe, and reports PDH unavailable with the reason', () => {
    const result = wine(['run', 'pinned-release', '--param', 'size_gib=0.25', '--param', 'apis=driver']);
    expect(result.code).toBe(3);
    const records = parseProbeOutput(result.stdout).records;
    const samples = records.flatMap((record) => (record.type === 'sample' ? [record] : []));
    expect(samples.map((sample) => sample.phase)).toEqual(['baseline', 'after-touch', 'after-free+0s', 'after-exit']);
    const baseline = samples[0]!;
    // The subject is a real Windows process: the sampler read its working set with GetProcessMemoryInfo.
    expect(baseline.readings.subject_rss_bytes).toBeGreaterThan(0);
    expect(baseline.readings.system_available_bytes).toBeGreaterThan(0);
    for (const k of [
      'pdh_process_dedicated_bytes',
      'pdh_process_shared_bytes',
      'pdh_adapter_dedicated_bytes',
      'pdh_adapter_shared_bytes',
    ]) {
      expect(baseline.readings[k], k).toBeNull();
      expect(baseline.reasons?.[k], k).toMatch(
        /^PDH counter \\GPU (Process|Adapter) Memory\(\*\)\\(Dedicated|Shared) Usage not available \(0x[0-9A-F]{8}/,
      );
    }
    expect(baseline.reasons?.dxgi_local_bytes).toBe('no CUDA device to match a DXGI adapter with');
    expect(baseline.reasons?.nvml_process_used_bytes).toContain('nvml.dll');
    expect(samples.at(-1)!.reasons?.subject_rss_bytes).toBe('the subject has exited');
    expect(records.at(-1)).toMatchObject({ type: 'skip', reason: expect.stringContaining('nvcuda.dll') });
  });

  it.runIf(ready)('skips windows-registry with its reason when no value exists, and has the timing probes skip without a driver', () => {
    const reg = wine(['run', 'windows-registry']);
    expect(reg.code).toBe(0);
    const facts = parseProbeOutput(reg.stdout).records.filter((record) => record.type === 'fact');
    expect(facts).toEqual([expect.objectContaining({ name: 'gpu_memory_compression_value_exists', value: false })]);
    const timing = wine(['run', 'sync-latency']);
    expect(timing.code).toBe(3);
  });

  it.runIf(ready).each(['memory-pools', 'virtual-memory'])(
    'skips %s without nvcuda.dll: exit 3, a skip with the reason, no fact',
    (name) => {
      const result = wine(['run', name]);
      expect(result.code).toBe(3);
      const records = parseProbeOutput(result.stdout).records;
      expect(records).toEqual([expect.objectContaining({ type: 'skip', probe: name, reason: expect.stringContaining('nvcuda.dll') })]);
    },
  );

  it.runIf(ready)(
    'reads an adapter that is not there as absent, each source with its reason: no PDH GPU counters, no DXGI adapter, no dxcore.dll (Wine 8), no D3DKMT adapter',
    () => {
      const result = spawnSync(WINE, [exe.path, 'selftest', 'adapter', '0x00000000_0x0000D3E5'], {
        encoding: 'utf8',
        env: wineEnv,
        timeout: 120_000,
      });
      expect(result.status).toBe(0);
      const adapter = JSON.parse(result.stdout.trim()) as Record<string, unknown>;
      expect(adapter.pdh_adapter_dedicated_bytes).toBeNull();
      expect(adapter.pdh_adapter_dedicated_bytes_reason).toMatch(/^PDH counter \\GPU Adapter Memory\(\*\)\\Dedicated Usage not available/);
      expect(adapter.dxgi_local_bytes).toBeNull();
      // DXGI lists display adapters only; DXCore (compute-only MCDM adapters too) is tried next.
      expect(adapter.dxgi_local_bytes_reason).toMatch(
        /^(DXGI lists no adapter with the CUDA device's luid_0x00000000_0x0000D3E5|CreateDXGIFactory1 failed: 0x[0-9A-F]{8}); DXCore: /,
      );
      const dxcore = String(adapter.dxgi_local_bytes_reason).split('; DXCore: ')[1];
      if (hasDll('dxcore.dll'))
        expect(dxcore).toMatch(/^no adapter has the CUDA device's luid_0x00000000_0x0000D3E5|^DXCoreCreateAdapterFactory failed/);
      else expect(dxcore).toMatch(/^dxcore\.dll not available \(LoadLibrary error 126; it ships with Windows 10 2004 and later\)$/);
      expect(adapter.hags_enabled).toBeNull();
      expect(adapter.hags_enabled_reason).toMatch(
        /^D3DKMTOpenAdapterFromLuid\(luid_0x00000000_0x0000D3E5\) failed: NTSTATUS 0x[0-9A-F]{8}$|^gdi32\.dll lacks/,
      );
    },
  );

  it.runIf(ready)(
    'starts its subjects from a folder whose name is outside the ANSI code page (C:\\Users\\Jürgen Ярослав): wide Win32 calls',
    () => {
      const dir = path.join(tempDir(), 'Jürgen Ярослав');
      mkdirSync(dir);
      const copy = path.join(dir, 'cudaprobe.exe');
      copyFileSync(exe.path, copy);
      const result = spawnSync(WINE, [copy, 'run', 'pinned-release', '--param', 'size_gib=0.25', '--param', 'apis=driver'], {
        encoding: 'utf8',
        env: wineEnv,
        timeout: 120_000,
      });
      const records = parseProbeOutput(result.stdout).records;
      expect(records.filter((record) => record.type === 'error')).toEqual([]);
      const baseline = records.find((record) => record.type === 'sample');
      // A subject ran: cudaprobe found its own path (GetModuleFileNameW) and started it (CreateProcessW).
      expect(baseline?.type === 'sample' && baseline.readings.subject_rss_bytes).toBeGreaterThan(0);
    },
  );

  it.runIf(ready)('takes the no-driver path in every capability probe on Windows: exit 3, a skip naming nvcuda.dll', () => {
    for (const name of capabilityProbes) {
      const result = wine(['run', name]);
      expect(result.code, name).toBe(3);
      const records = parseProbeOutput(result.stdout).records;
      expect(
        records.filter((record) => record.type === 'fact'),
        name,
      ).toEqual([]);
      expect(records.at(-1), name).toMatchObject({ type: 'skip', probe: name, reason: expect.stringContaining('nvcuda.dll') });
    }
  });

  it.runIf(ready)('lists every probe as the catalogue declares it, as the Linux build does', () => {
    const result = wine(['list']);
    expect(result.code).toBe(0);
    expect(listing(result.stdout)).toEqual(catalogue.map(asListed));
  });
});
