/**
 * Issue 24's event-host-gap, watchdog, runtime-init and transfer-bandwidth's filled rounds on
 * the paths this machine has: no driver (Linux build, and the Windows build under Wine, whose
 * registry has no TDR values), and for runtime-init a stand-in libcuda.so.1 whose cuInit fails
 * and a stand-in runtime that crashes, both generated from cuda.hpp's own symbol lists (no GPU
 * here: the GPU path runs on the H200, bench/behaviour-checks.ts).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { nodeArch } from '../transports/local.ts';
import { hasCommand, integrationAvailable, tempDir, testCacheDir, WINE } from '../test/helpers.ts';
import { buildProbe, type ProbeBinary } from './build.ts';
import { parseProbeOutput, type ProbeRecord } from './protocol.ts';

const facts = (records: ProbeRecord[]) =>
  Object.fromEntries(records.flatMap((record) => (record.type === 'fact' ? [[record.name, record]] : [])));

/** The names of an X-macro list of cuda.hpp (CP_CUDA_REQUIRED, CP_CUDART). */
function symbols(list: string): string[] {
  const header = readFileSync(path.join(import.meta.dirname, 'cudaprobe', 'cuda.hpp'), 'utf8');
  const lines = header.slice(header.indexOf(`#define ${list}(X)`)).split('\n');
  const block = lines.slice(0, lines.findIndex((line) => !line.trimEnd().endsWith('\\')) + 1).join('\n');
  return [...block.matchAll(/X\((\w+),/g)].map((match) => match[1]!);
}

/** A shared library of `names` that return 0, but those given a body. */
function stubLibrary(file: string, names: string[], bodies: Record<string, string>): void {
  const src = `${file}.c`;
  writeFileSync(src, names.map((symbol) => bodies[symbol] ?? `int ${symbol}() { return 0; }`).join('\n') + '\n');
  execFileSync('cc', ['-shared', '-fPIC', '-o', file, src]);
}

describe('event-host-gap, watchdog, runtime-init, filled transfer-bandwidth (Linux build)', () => {
  let probe: ProbeBinary;
  beforeAll(async () => {
    probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
  }, 300_000);
  const run = (args: string[], env: NodeJS.ProcessEnv = process.env) => {
    const result = spawnSync(probe.path, args, { encoding: 'utf8', env, timeout: 120_000 });
    return { code: result.status, records: parseProbeOutput(result.stdout).records };
  };

  it('skips each without a driver, with the reason; the watchdog says first why TDR is not read off Windows', () => {
    for (const name of ['event-host-gap', 'runtime-init', 'transfer-bandwidth']) {
      const result = run(['run', name]);
      expect(result.code, name).toBe(3);
      expect(result.records).toEqual([expect.objectContaining({ type: 'skip', reason: expect.stringContaining('libcuda.so.1') })]);
    }
    const watchdog = run(['run', 'watchdog']);
    expect(watchdog.code).toBe(3);
    const reported = facts(watchdog.records);
    // This machine's own kind of Linux: native (no WSL there to speak of), or a WSL distribution.
    const inWsl = /microsoft/i.test(readFileSync('/proc/version', 'utf8')) || existsSync('/dev/dxg');
    for (const [name, value] of [
      ['tdr_delay_s', 'TdrDelay'],
      ['tdr_level', 'TdrLevel'],
    ] as const) {
      const reason = reported[name]?.reason as string;
      expect(reported[name]).toMatchObject({ value: null });
      expect(reason).toContain(`${value} is a Windows registry setting (HKLM\\SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers)`);
      if (inWsl) expect(reason).toContain('not readable from the distribution');
      else expect(reason).not.toMatch(/WSL|host/);
    }
    expect(watchdog.records.at(-1)).toMatchObject({ type: 'skip', reason: expect.stringContaining('libcuda.so.1') });
  });

  it("the watchdog's reason inside WSL: the Windows host's setting applies, its registry is not readable there (selftest)", () => {
    const reason = (where: string) =>
      JSON.parse(execFileSync(probe.path, ['selftest', 'tdr-reason', where], { encoding: 'utf8' })).reason as string;
    expect(reason('wsl')).toBe(
      "TdrDelay is a Windows registry setting (HKLM\\SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers): inside WSL the Windows host's applies (numba/numba#3197), and the host's registry is not readable from the distribution",
    );
    expect(reason('linux')).toBe(
      'TdrDelay is a Windows registry setting (HKLM\\SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers): it exists on Windows only',
    );
  });

  it('refuses a fill above 90 % of free VRAM and a sleep out of range before it looks for a driver', () => {
    const fill = run(['run', 'transfer-bandwidth', '--param', 'fill_percent=0,95']);
    expect(fill.code).toBe(2);
    expect(fill.records[0]).toMatchObject({ type: 'error', message: expect.stringContaining('fill_percent') });
    const sleep = run(['run', 'event-host-gap', '--param', 'sleep_ms=0']);
    expect(sleep.code).toBe(2);
  });

  it.runIf(hasCommand('cc'))(
    'runtime-init records a failing cuInit and a runtime that crashes, each in its own process, and goes on',
    () => {
      const dir = tempDir();
      const driverDir = path.join(dir, 'driver');
      const runtimeDir = path.join(dir, 'runtimes');
      mkdirSync(driverDir);
      mkdirSync(runtimeDir);
      stubLibrary(path.join(driverDir, 'libcuda.so.1'), symbols('CP_CUDA_REQUIRED'), {
        cuInit: 'int cuInit(unsigned f) { return 100; }',
        cuDriverGetVersion: 'int cuDriverGetVersion(int* v) { *v = 13000; return 0; }',
        cuGetErrorName: 'int cuGetErrorName(int rc, const char** s) { *s = rc == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR"; return 0; }',
      });
      stubLibrary(path.join(runtimeDir, 'libcudart.so.12.99'), [...symbols('CP_CUDART'), 'cudaGetDeviceCount'], {
        cudaRuntimeGetVersion: 'int cudaRuntimeGetVersion(int* v) { *v = 12090; return 0; }',
        cudaGetDeviceCount: 'int cudaGetDeviceCount(int* n) { *(volatile int*)0 = 1; return 0; }',
      });
      const result = run(['run', 'runtime-init', '--param', `dirs=${runtimeDir}`], { ...process.env, LD_LIBRARY_PATH: driverDir });
      expect(result.code).toBe(0);
      const reported = facts(result.records);
      expect(reported.driver_init).toMatchObject({ value: 'CUDA_ERROR_NO_DEVICE (100)' });
      // SIGSEGV in the child: 128 + 11. The probe itself went on to the next runtime and the facts.
      expect(reported.runtime_init!.value).toContain('libcudart.so.12.99 (12.9): crashed (exit status 139)');
      expect(reported.supported_runtimes_init).toMatchObject({ value: false, evidence: expect.objectContaining({ driver_cuda: '13.0' }) });
      const found = result.records.find((record) => record.type === 'metric' && record.name === 'runtimes_found');
      expect(found).toMatchObject({ value: String(reported.runtime_init!.value).split('; ').length });
      expect(result.records.find((record) => record.type === 'metric' && record.name === 'cuinit_ms')).toMatchObject({
        unit: 'ms',
        value: expect.any(Number),
      });
    },
  );

  it.runIf(hasCommand('cc'))('runtime-init counts a runtime once however many names link to it', () => {
    const dir = tempDir();
    const driverDir = path.join(dir, 'driver');
    mkdirSync(driverDir);
    stubLibrary(path.join(driverDir, 'libcuda.so.1'), symbols('CP_CUDA_REQUIRED'), {
      cuDriverGetVersion: 'int cuDriverGetVersion(int* v) { *v = 13000; return 0; }',
    });
    stubLibrary(path.join(dir, 'libcudart.so.13.0.1'), symbols('CP_CUDART'), {
      cudaRuntimeGetVersion: 'int cudaRuntimeGetVersion(int* v) { *v = 13000; return 0; }',
    });
    execFileSync('ln', ['-s', 'libcudart.so.13.0.1', path.join(dir, 'libcudart.so.13')]);
    const result = run(['run', 'runtime-init', '--param', `dirs=${dir}`], { ...process.env, LD_LIBRARY_PATH: driverDir });
    const summary = String(facts(result.records).runtime_init!.value);
    expect(summary.match(/libcudart\.so\.13\.0\.1 \(13\.0\)/g)).toHaveLength(1);
    // This stand-in lacks cudaGetDeviceCount, which only runtime-init needs: said so, not a crash.
    expect(summary).toContain('libcudart.so.13.0.1 (13.0): the library lacks cudaGetDeviceCount');
  });
});

// Stand-in drivers for event-host-gap's decision (no GPU here): events stamped with the host
// clock when recorded (as Linux submits them at once), or only when something submits the
// stream (cuStreamQuery, a synchronize), as FLAMEGPU/FLAMEGPU2#451 describes WDDM's command
// buffer. What a real driver does is the H200 run's and a Windows machine's to say.
const EVENTS = `#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
typedef struct { double at; int pending; } ev;
static ev* queued[64]; static int nq = 0;
static void submit(void) { for (int i = 0; i < nq; i++) { queued[i]->at = now(); queued[i]->pending = 0; } nq = 0; }
int cuEventCreate(void** e, unsigned f) { *e = calloc(1, sizeof(ev)); return 0; }
int cuEventDestroy_v2(void* e) { free(e); return 0; }
int cuEventRecord(void* e, void* s) { ev* x = e; if (BATCHED) { x->pending = 1; if (nq < 64) queued[nq++] = x; } else x->at = now(); return 0; }
int cuStreamQuery(void* s) { submit(); return 0; }
int cuEventSynchronize(void* e) { submit(); return 0; }
int cuStreamSynchronize(void* s) { submit(); return 0; }
int cuEventElapsedTime(float* ms, void* a, void* b) { *ms = (float)((((ev*)b)->at - ((ev*)a)->at) * 1e3); return 0; }
int cuDriverGetVersion(int* v) { *v = 13000; return 0; }
int cuDeviceGetCount(int* n) { *n = 1; return 0; }
int cuMemGetInfo_v2(size_t* f, size_t* t) { *f = *t = 1ULL << 30; return 0; }
`;

describe.runIf(hasCommand('cc'))(
  'event-host-gap against stand-in drivers (host-timed events, and events stamped only when submitted)',
  () => {
    let probe: ProbeBinary;
    beforeAll(async () => {
      probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
    }, 300_000);
    const own = [
      'cuEventCreate',
      'cuEventDestroy_v2',
      'cuEventRecord',
      'cuStreamQuery',
      'cuEventSynchronize',
      'cuStreamSynchronize',
      'cuEventElapsedTime',
      'cuDriverGetVersion',
      'cuDeviceGetCount',
      'cuMemGetInfo_v2',
    ];
    const driver = (batched: boolean) => {
      const dir = tempDir();
      const src = path.join(dir, 'libcuda.c');
      const rest = symbols('CP_CUDA_REQUIRED')
        .filter((symbol) => !own.includes(symbol))
        .map((symbol) => `int ${symbol}() { return 0; }`);
      writeFileSync(src, `#define BATCHED ${batched ? 1 : 0}\n${EVENTS}${rest.join('\n')}\n`);
      execFileSync('cc', ['-shared', '-fPIC', '-o', path.join(dir, 'libcuda.so.1'), src]);
      return dir;
    };
    const gap = (dir: string) => {
      const result = spawnSync(probe.path, ['run', 'event-host-gap', '--param', 'repetitions=3'], {
        encoding: 'utf8',
        env: { ...process.env, LD_LIBRARY_PATH: dir },
        timeout: 120_000,
      });
      expect(result.status, result.stdout).toBe(0);
      return parseProbeOutput(result.stdout).records;
    };
    const elapsed = (records: ProbeRecord[], flush: string) =>
      records.find((record) => record.type === 'metric' && record.name === 'elapsed_ms' && record.attrs?.flush === flush);

    it('host-timed events bracket the 20 ms sleep, flushed or not', () => {
      const records = gap(driver(false));
      expect(facts(records).brackets_host_gap).toMatchObject({ value: true });
      expect(facts(records).brackets_host_gap_flushed).toMatchObject({ value: true });
      // The host slept at least 20 ms between the records; the events saw that time.
      expect(elapsed(records, 'none')).toMatchObject({ value: expect.any(Number) });
      expect(Number((elapsed(records, 'none') as { value: number }).value)).toBeGreaterThanOrEqual(19.9);
    });

    it('events stamped at submission miss the sleep without a flush, and bracket it after cuStreamQuery', () => {
      const records = gap(driver(true));
      expect(facts(records).brackets_host_gap).toMatchObject({ value: false });
      expect(facts(records).brackets_host_gap_flushed).toMatchObject({ value: true });
      expect(Number((elapsed(records, 'none') as { value: number }).value)).toBeLessThan(10);
    });
  },
);

describe('watchdog and runtime-init (Windows build under Wine)', () => {
  const ready = integrationAvailable(
    'MinGW-w64 and Wine',
    hasCommand('x86_64-w64-mingw32-g++-posix') && hasCommand(WINE, ['--version']),
    'apt-get install g++-mingw-w64-x86-64-posix wine64',
  );
  let exe: ProbeBinary;
  const wineEnv = { ...process.env, WINEDEBUG: '-all', WINEPREFIX: path.join(testCacheDir, 'wineprefix') };
  beforeAll(async () => {
    if (ready) exe = await buildProbe({ platform: 'windows', arch: 'x86_64', cacheDir: testCacheDir });
  }, 300_000);
  const wine = (args: string[]) => {
    const result = spawnSync(WINE, [exe.path, ...args], { encoding: 'utf8', env: wineEnv, timeout: 120_000 });
    return { code: result.status, records: parseProbeOutput(result.stdout).records };
  };

  it.runIf(ready)(
    "reads TdrDelay and TdrLevel through the registry code windows-registry uses: absent in Wine's registry, so Windows' defaults, said so",
    () => {
      const reg = wine(['run', 'windows-registry']);
      const absent = (name: string) => reg.records.find((record) => record.type === 'metric' && record.name === name);
      expect(absent('registry_TdrDelay')).toMatchObject({ value: null, reason: 'the value does not exist' });
      const watchdog = wine(['run', 'watchdog']);
      expect(watchdog.code).toBe(3);
      const reported = facts(watchdog.records);
      expect(reported.tdr_delay_s).toMatchObject({
        value: 2,
        evidence: { source: 'default', error: 2, key: 'HKLM\\SYSTEM\\CurrentControlSet\\Control\\GraphicsDrivers\\TdrDelay' },
      });
      expect(reported.tdr_level).toMatchObject({ value: 3, evidence: expect.objectContaining({ source: 'default' }) });
      expect(watchdog.records.at(-1)).toMatchObject({ type: 'skip', reason: expect.stringContaining('nvcuda.dll') });
    },
  );

  it.runIf(ready)('skips runtime-init and event-host-gap without nvcuda.dll', () => {
    for (const name of ['runtime-init', 'event-host-gap']) {
      const result = wine(['run', name]);
      expect(result.code, name).toBe(3);
      expect(result.records).toEqual([expect.objectContaining({ type: 'skip', reason: expect.stringContaining('nvcuda.dll') })]);
    }
  });
});
