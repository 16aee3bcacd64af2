/**
 * Issue 24's memory probes (alloc-ceiling, sysmem-fallback, pinned-ceiling's registered rounds,
 * managed-memory's percent_of_free) and the wsl2-docker class, on the real cudaprobe builds.
 * There is no GPU here: these are the no-driver paths, on Linux and under Wine; what the probes
 * measure is known from a GPU run (bench/memory-checks.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hasCommand, integrationAvailable, tempDir, testCacheDir, WINE } from '../test/helpers.ts';
import { nodeArch } from '../transports/local.ts';
import { buildProbe, type ProbeBinary } from './build.ts';
import { parseProbeOutput, type ProbeRecord } from './protocol.ts';

const noGpu = !hasCommand('nvidia-smi', ['-L']);

function expectUsage(records: ProbeRecord[], message: string): void {
  expect(records.find((record) => record.type === 'error')).toMatchObject({ code: 'USAGE', message: expect.stringContaining(message) });
}

const badParams: [string[], string][] = [
  [['run', 'alloc-ceiling', '--param', 'apis=cublas'], 'parameter apis must name driver, runtime and/or async'],
  [['run', 'alloc-ceiling', '--param', 'max_gib=0.1'], "max_gib 0 (the device's memory) or at least one chunk"],
  [['run', 'alloc-ceiling', '--param', 'max_gib=-1'], "max_gib 0 (the device's memory) or at least one chunk"],
  [['run', 'sysmem-fallback', '--param', 'past_vram_gib=8'], 'past_vram_gib takes 0 to 4 GiB'],
  [['run', 'sysmem-fallback', '--param', 'api=async'], 'parameter api takes driver or runtime'],
  [['run', 'managed-memory', '--param', 'percent_of_free=200'], 'percent_of_free takes 0 (off) to 150'],
  [['run', 'pinned-ceiling', '--param', 'registered_rounds=11'], 'registered_rounds takes 0 (off) to 10'],
];

describe('issue 24 memory probes (Linux build)', () => {
  let probe: ProbeBinary;
  beforeAll(async () => {
    probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
  }, 300_000);
  const run = (args: string[]) => {
    const result = spawnSync(probe.path, args, { encoding: 'utf8' });
    return { code: result.status, records: parseProbeOutput(result.stdout).records, stderr: result.stderr };
  };

  it.each(badParams)('refuses bad parameters with exit 2: %j', (args, message) => {
    const result = run(args);
    expect(result.code).toBe(2);
    expectUsage(result.records, message);
  });

  it.runIf(noGpu).each([['alloc-ceiling'], ['managed-memory', '--param', 'percent_of_free=120']])(
    'skips %s without a driver, exit 3, with the reason',
    (...args) => {
      const result = run(['run', ...args]);
      expect(result.code).toBe(3);
      expect(result.records.filter((record) => record.type === 'metric' || record.type === 'fact')).toEqual([]);
      expect(result.records.at(-1)).toMatchObject({ type: 'skip', reason: expect.stringContaining('no NVIDIA driver found') });
    },
  );

  it.runIf(noGpu)("records sysmem-fallback's baseline without a driver: a real subject, the PDH sources null with their reason", () => {
    const result = run(['run', 'sysmem-fallback']);
    expect(result.code).toBe(3);
    const samples = result.records.flatMap((record) => (record.type === 'sample' ? [record] : []));
    expect(samples.map((sample) => sample.phase)).toEqual(['baseline']);
    expect(samples[0]!.readings.subject_rss_bytes).toBeGreaterThan(0);
    expect(samples[0]!.readings.pdh_process_shared_bytes).toBeNull();
    expect(samples[0]!.reasons?.pdh_process_shared_bytes).toBe('PDH GPU counters exist on Windows only');
    expect(result.records.at(-1)).toMatchObject({ type: 'skip', reason: expect.stringContaining('no NVIDIA driver found') });
  });

  it.runIf(noGpu)('skips pinned-ceiling with its registered rounds without a driver, before any host-register fact', () => {
    const result = run(['run', 'pinned-ceiling', '--param', 'max_gib=0.5', '--param', 'registered_rounds=1', '--param', 'reset_rounds=0']);
    expect(result.code).toBe(3);
    expect(result.records.filter((record) => record.type === 'fact')).toEqual([]);
    expect(result.records.at(-1)).toMatchObject({ type: 'skip' });
  });

  it("answers the subject's fill and largest commands without a context, and refuses kinds pinmax does not take", () => {
    const result = spawnSync(probe.path, ['subject'], {
      input: 'fill async 268435456 1073741824\nlargest driver 1073741824 67108864\npinmax driver 1024 4096 device\n',
      encoding: 'utf8',
    });
    expect(result.status).toBe(0);
    const answers = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { ok: boolean; error: string });
    expect(answers).toEqual([
      { ok: false, error: 'no CUDA context in the subject (no usable driver)' },
      { ok: false, error: 'no CUDA context in the subject (no usable driver)' },
      { ok: false, error: 'no CUDA context in the subject (no usable driver)' },
    ]);
  });

  // A container on WSL2 as the probe sees it, in a mount namespace of its own (root and unshare(1)
  // needed): WSL2's kernel in /proc/version and /dev/dxg on a private /dev; /proc/1/cgroup is
  // either a Docker container's or the host's. The dev box is itself a container (/.dockerenv),
  // which wins over the cgroup: there the second case cannot be made.
  const canUnshare = process.getuid?.() === 0 && hasCommand('unshare', ['--version']);
  const inDockerAlready = existsSync('/.dockerenv');
  const detected = (cgroup: string) => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'version'), 'Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) #1 SMP\n');
    writeFileSync(path.join(dir, 'cgroup'), cgroup);
    const script = [
      'mount -t tmpfs none /dev',
      'touch /dev/dxg /dev/null',
      `mount --bind ${dir}/version /proc/version`,
      `mount --bind ${dir}/cgroup /proc/1/cgroup`,
      `exec ${probe.path} run sysinfo`,
    ].join(' && ');
    const result = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script], { encoding: 'utf8' });
    return parseProbeOutput(result.stdout).records.find((record) => record.type === 'sysinfo' && record.name === 'environment');
  };
  it.runIf(canUnshare)('detects WSL2 markers inside a container as wsl2-docker, naming both markers', () => {
    expect(detected('0::/docker/3f1c0ffee\n')).toMatchObject({
      value: 'wsl2-docker',
      source: expect.stringMatching(
        /\/dev\/dxg present.*; in a docker container \((\/\.dockerenv present|\/proc\/1\/cgroup names docker)\)$/,
      ),
    });
  });
  it.runIf(canUnshare && !inDockerAlready)('detects the same WSL2 markers outside a container as wsl2', () => {
    expect(detected('0::/init.scope\n')).toMatchObject({ value: 'wsl2', source: expect.not.stringContaining('container') });
  });
});

describe('issue 24 memory probes (Windows build under Wine)', () => {
  const ready = integrationAvailable(
    'MinGW-w64 and Wine',
    hasCommand('x86_64-w64-mingw32-g++-posix') && hasCommand(WINE, ['--version']),
    'apt-get install g++-mingw-w64-x86-64-posix wine64',
  );
  const wineEnv = { ...process.env, WINEDEBUG: '-all', WINEPREFIX: path.join(testCacheDir, 'wineprefix') };
  let exe: ProbeBinary;
  beforeAll(async () => {
    if (ready) exe = await buildProbe({ platform: 'windows', arch: 'x86_64', cacheDir: testCacheDir });
  }, 300_000);
  const wine = (args: string[]) => {
    const result = spawnSync(WINE, [exe.path, ...args], { encoding: 'utf8', env: wineEnv, timeout: 120_000 });
    return { code: result.status, records: parseProbeOutput(result.stdout).records };
  };

  it.runIf(ready)(
    "reads sysmem-fallback's Windows-only sources through the sampler: Shared Usage absent with the PDH reason, no driver, exit 3",
    () => {
      const result = wine(['run', 'sysmem-fallback', '--param', 'max_gib=1']);
      expect(result.code).toBe(3);
      const baseline = result.records.find((record) => record.type === 'sample');
      if (baseline?.type !== 'sample') throw new Error('no baseline sample');
      expect(baseline.readings.subject_rss_bytes).toBeGreaterThan(0);
      for (const k of ['pdh_process_shared_bytes', 'pdh_process_dedicated_bytes']) {
        expect(baseline.readings[k], k).toBeNull();
        expect(baseline.reasons?.[k], k).toMatch(
          /^PDH counter \\GPU Process Memory\(\*\)\\(Dedicated|Shared) Usage not available \(0x[0-9A-F]{8}/,
        );
      }
      expect(result.records.at(-1)).toMatchObject({ type: 'skip', reason: expect.stringContaining('nvcuda.dll') });
    },
  );

  it.runIf(ready)(
    'skips alloc-ceiling and the oversubscribing managed-memory step without nvcuda.dll, and refuses bad parameters alike',
    () => {
      for (const args of [
        ['run', 'alloc-ceiling'],
        ['run', 'managed-memory', '--param', 'percent_of_free=120'],
      ]) {
        const result = wine(args);
        expect(result.code, args.join(' ')).toBe(3);
        expect(result.records.at(-1)).toMatchObject({ type: 'skip', reason: expect.stringContaining('nvcuda.dll') });
      }
      const bad = wine(badParams[4]![0]);
      expect(bad.code).toBe(2);
      expectUsage(bad.records, badParams[4]![1]);
    },
  );
});
