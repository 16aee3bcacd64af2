/**
 * A WSL 2 VM's GPU memory seen from its Windows host (C27): `cudaprobe vm-memory` and
 * probes/host-vm-memory.ts. No Windows machine with WSL is reachable from here, so:
 *   - the matching of process names and counter instances runs as `cudaprobe selftest vm-select`
 *     on handwritten lists (the Linux build: the code is pure);
 *   - the subcommand's absence paths run as the real cudaprobe.exe under Wine: no VM process, and
 *     (CUDAPROBE_TEST_VM_PROCESS naming cudaprobe.exe itself as the VM) no PDH GPU counter set;
 *   - sampleDuring runs that cudaprobe.exe under Wine as the host-side process, through a real
 *     local session, around a real probe run (the Linux cudaprobe, no driver here). Wine has no
 *     GPU counters, so every reading is null with its reason: what is proved is the order (the
 *     sampler's first sample before the probe), the records in the cell, and that no sampler is
 *     left after the cell, a timeout or a cancellation. The same on a Windows host over SSH: the
 *     real sshd with test/fixtures/windows-ssh-host.mjs as Win32-OpenSSH + PowerShell, which runs
 *     that cudaprobe.exe under Wine; the sampler ends with taskkill. Not proved: a real vmmemWSL's
 *     counters, a real Win32-OpenSSH;
 *   - so the summary of readings is shown on a handwritten trace of sampler lines, in the shape
 *     cudaprobe.exe writes them (the lines of the Wine runs below), with the figures of
 *     Comfy-Org/ComfyUI#15679 (0.4 GB of Shared Usage before pinning, 6.8 GB with it).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasCommand, integrationAvailable, repoRoot, tempDir, testCacheDir, WINE } from '../test/helpers.ts';
import { sshdReady, startSshd, type Sshd } from '../test/sshd.ts';
import { connectChain } from '../transports/registry.ts';
import { connectLocal, nodeArch } from '../transports/local.ts';
import type { Session } from '../transports/transport.ts';
import { buildProbe, type ProbeBinary } from './build.ts';
import { hostVmMetrics } from './catalogue.ts';
import { sampleDuring, summarise } from './host-vm-memory.ts';
import { parseProbeOutput, type MetricRecord, type SampleRecord } from './protocol.ts';
import { runProbe } from './run-probe.ts';

const MiB = 1024 * 1024;
let linuxProbe: ProbeBinary;
beforeAll(async () => {
  linuxProbe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
}, 300_000);

/** `cudaprobe selftest vm-select NAME...` on "process PID NAME" lines and a counter's instances. */
function vmSelect(lines: string[], names: string[] = []): { pids: number[]; value?: number | null; value_reason?: string } {
  const result = spawnSync(linuxProbe.path, ['selftest', 'vm-select', ...names], { input: `${lines.join('\n')}\n`, encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as { pids: number[]; value?: number | null; value_reason?: string };
}

describe('the VM process and its instances (handwritten process and instance lists)', () => {
  const NV = '0x00000000_0x0000D3E5';
  const IGPU = '0x00000000_0x0000C1A2';
  const host = ['process 4 System', 'process 7100 vmmemWSL', 'process 812 explorer.exe', 'process 9000 notvmmem.exe'];

  it('finds vmmemWSL and sums its instances on every adapter, and nothing of other processes or engines', () => {
    const selected = vmSelect([
      ...host,
      `pid_7100_luid_${NV}_phys_0\t${1200 * MiB}`,
      `pid_7100_luid_${IGPU}_phys_0\t${30 * MiB}`,
      `pid_71_luid_${NV}_phys_0\t${5 * MiB}`,
      `pid_9000_luid_${NV}_phys_0\t${7 * MiB}`,
      `pid_7100_luid_${NV}_phys_0_eng_0_engtype_3D\t99`,
      `luid_${NV}_phys_0\t${4000 * MiB}`,
    ]);
    expect(selected).toEqual({ pids: [7100], value: 1230 * MiB });
  });

  it('takes vmmem (before WSL 1.0) and names in any case, with or without .exe; every VM process counts', () => {
    const selected = vmSelect([
      'process 300 VMMEM.EXE',
      'process 301 vmmemwsl',
      `pid_300_luid_${NV}_phys_0\t${10 * MiB}`,
      `pid_301_luid_${NV}_phys_0\t${20 * MiB}`,
    ]);
    expect(selected).toEqual({ pids: [300, 301], value: 30 * MiB });
  });

  it('says when the VM process has no instance, and finds no VM where none runs or another name is asked for', () => {
    expect(vmSelect([...host, `pid_812_luid_${NV}_phys_0\t1`])).toEqual({
      pids: [7100],
      value: null,
      value_reason: expect.stringMatching(/^the counter has no instance of the VM process \(pid 7100\)/),
    });
    expect(vmSelect(['process 4 System', 'process 812 explorer.exe'])).toEqual({ pids: [] });
    expect(vmSelect(host, ['explorer'])).toMatchObject({ pids: [812] });
  });

  it('answers on Linux with one null sample and exit status 3: the counters are read on the Windows host', () => {
    const result = spawnSync(linuxProbe.path, ['vm-memory', '--max-seconds', '5'], { encoding: 'utf8' });
    expect(result.status).toBe(3);
    const samples = samplesOf(result.stdout);
    expect(samples).toHaveLength(1);
    expect(samples[0]!.readings).toEqual({ vm_dedicated_bytes: null, vm_shared_bytes: null });
    expect(samples[0]!.reasons?.vm_shared_bytes).toMatch(/read on its Windows host: this is not Windows/);
    const bad = spawnSync(linuxProbe.path, ['vm-memory', '--max-seconds', 'soon'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--max-seconds needs a positive number, got soon');
  });
});

describe("the host's metrics from the sampler's lines (handwritten trace)", () => {
  const GB = 1e9;
  const line = (tMs: number, dedicated: number | null, shared: number | null) =>
    JSON.stringify({
      schema: 'cudaprobe/1',
      type: 'sample',
      probe: 'vm-memory',
      phase: 'host',
      readings: { vm_dedicated_bytes: dedicated, vm_shared_bytes: shared },
      ...(dedicated === null ? { reasons: { vm_dedicated_bytes: 'the counter has no instance of the VM process (pid 7100)' } } : {}),
      attrs: { t_ms: tMs, vm_pids: '7100' },
    });
  const ended = (lines: string[]) => ({
    command: ['cudaprobe.exe', 'vm-memory'],
    exitCode: null,
    signal: null,
    timedOut: false,
    cancelled: true,
    truncated: false,
    durationMs: 1000,
    stdout: `${lines.join('\r\n')}\r\n`,
    stderr: '',
  });
  const byName = (metrics: MetricRecord[], counter: string) =>
    Object.fromEntries(metrics.filter((metric) => metric.attrs?.counter === counter).map((metric) => [metric.name, metric.value]));

  it('takes the first sample as the baseline and the highest as the peak; a sample without a reading is left out', () => {
    const trace = [line(0, 300 * MiB, 0.4 * GB), line(250, 310 * MiB, 3.1 * GB), line(500, null, 6.8 * GB), line(750, 305 * MiB, 0.5 * GB)];
    const metrics = summarise('pinned-vram', ended(trace), 'ssh win-box');
    expect(byName(metrics, 'shared')).toEqual({
      host_vm_baseline_bytes: 0.4 * GB,
      host_vm_peak_bytes: 6.8 * GB,
      host_vm_growth_bytes: 6.8 * GB - 0.4 * GB,
    });
    expect(byName(metrics, 'dedicated')).toEqual({
      host_vm_baseline_bytes: 300 * MiB,
      host_vm_peak_bytes: 310 * MiB,
      host_vm_growth_bytes: 10 * MiB,
    });
    for (const metric of metrics)
      expect(metric).toMatchObject({ probe: 'pinned-vram', unit: 'bytes', attrs: { vm_pids: '7100', samples: 4 } });
  });

  it('is null with the reason where the first sample has none, or there is no sample', () => {
    const noBaseline = summarise('pinned-vram', ended([line(0, null, 0.4 * GB), line(250, 300 * MiB, 0.5 * GB)]), 'local');
    expect(noBaseline.filter((metric) => metric.attrs?.counter === 'dedicated')).toEqual(
      hostVmMetrics.map((hostMetric) =>
        expect.objectContaining({ name: hostMetric.name, value: null, reason: 'the counter has no instance of the VM process (pid 7100)' }),
      ),
    );
    expect(byName(noBaseline, 'shared').host_vm_growth_bytes).toBeCloseTo(0.1 * GB);
    const none = summarise('pinned-ceiling', { ...ended([]), stdout: '', stderr: 'wine: could not load\n', exitCode: 1 }, 'local');
    expect(none).toHaveLength(6);
    for (const metric of none)
      expect(metric).toMatchObject({
        value: null,
        reason: 'cudaprobe vm-memory on local gave no sample (exit status 1): wine: could not load',
      });
  });
});

/** Wine's own prefix, shared with the other Wine tests. */
const wineEnvOf = () => ({ WINEDEBUG: '-all', WINEPREFIX: path.join(testCacheDir, 'wineprefix') });

const samplesOf = (stdout: string) =>
  parseProbeOutput(stdout).records.filter((record): record is SampleRecord => record.type === 'sample' && record.probe === 'vm-memory');

describe('cudaprobe.exe vm-memory on a Windows host without WSL (Wine)', () => {
  const ready = integrationAvailable(
    'MinGW-w64 and Wine',
    hasCommand('x86_64-w64-mingw32-g++-posix') && hasCommand(WINE, ['--version']),
    'apt-get install g++-mingw-w64-x86-64-posix wine64',
  );
  /** A copy of cudaprobe.exe in a folder whose name marks its processes, for ps. */
  let exe: string;
  let mark: string;
  let host: Session;
  const saved = { ...process.env };
  /** Processes whose command line names the marked folder (the Wine processes of that cudaprobe.exe). */
  const running = (): number[] =>
    readdirSync('/proc')
      .filter((pid) => /^\d+$/.test(pid))
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(mark);
        } catch {
          return false;
        }
      })
      .map(Number);
  /** Polls until none is left, 20 s at most (a loaded machine is slow, never wrong). */
  const noneLeft = async (): Promise<number[]> => {
    for (let i = 0; i < 200 && running().length; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    return running();
  };
  const wine = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    spawnSync(WINE, [exe, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120_000 });

  beforeAll(async () => {
    if (!ready) return;
    const built = await buildProbe({ platform: 'windows', arch: 'x86_64', cacheDir: testCacheDir });
    mark = `cm-vm-sampler-${process.pid}`;
    const dir = path.join(tempDir(), mark);
    mkdirSync(dir);
    exe = path.join(dir, 'cudaprobe.exe');
    copyFileSync(built.path, exe);
    // Wine's own prefix, shared with the other Wine tests; what the host-side process inherits.
    Object.assign(process.env, wineEnvOf());
    host = await connectLocal({}, { target: 'host', runId: 'vm-memory' });
  }, 300_000);
  afterAll(async () => {
    process.env = saved;
    if (host) await host[Symbol.asyncDispose]();
  });

  it.runIf(ready)('finds no VM process: one null sample with the reason, exit status 3', () => {
    const result = wine(['vm-memory', '--max-seconds', '30']);
    expect(result.status).toBe(3);
    const samples = samplesOf(result.stdout);
    expect(samples).toHaveLength(1);
    expect(samples[0]!.reasons).toEqual({
      vm_dedicated_bytes: expect.stringMatching(/^no VM process \(vmmemWSL, vmmem\) runs on this host/),
      vm_shared_bytes: expect.stringMatching(/^no VM process \(vmmemWSL, vmmem\) runs on this host/),
    });
  });

  it.runIf(ready)('with a VM process but no PDH GPU counter set: samples until the bound, each null with the reason', () => {
    const result = wine(['vm-memory', '--max-seconds', '1', '--interval-ms', '200'], { CUDAPROBE_TEST_VM_PROCESS: 'cudaprobe.exe' });
    expect(result.status, result.stderr).toBe(0);
    const samples = samplesOf(result.stdout);
    // 0, 200, ... 800 ms: at least two however slow the machine (the bound ends it, not a count).
    expect(samples.length).toBeGreaterThanOrEqual(2);
    const times = samples.map((sample) => sample.attrs?.t_ms as number);
    expect(times).toEqual([...times].sort((left, right) => left - right));
    expect(times.at(-1)).toBeLessThanOrEqual(1000);
    for (const sample of samples) {
      expect(sample.readings).toEqual({ vm_dedicated_bytes: null, vm_shared_bytes: null });
      expect(sample.reasons?.vm_shared_bytes).toMatch(
        /^this host has no PDH GPU counter set \("GPU Process Memory": .*\): PDH counter \\GPU Process Memory\(\*\)\\Shared Usage not available \(0x[0-9A-F]{8}/,
      );
      expect(Number(sample.attrs?.vm_pids)).toBeGreaterThan(0);
    }
  });

  const expectHostMetrics = (metrics: MetricRecord[], reason: RegExp) => {
    expect(metrics.map((metric) => [metric.name, metric.attrs?.counter])).toEqual(
      ['shared', 'dedicated'].flatMap((counter) => hostVmMetrics.map((hostMetric) => [hostMetric.name, counter])),
    );
    for (const metric of metrics)
      expect(metric).toMatchObject({ probe: 'pinned-vram', type: 'metric', value: null, unit: 'bytes', reason });
  };
  const pinnedVram = (options: { timeoutMs?: number; signal?: AbortSignal } = {}) =>
    runProbe(host, { remotePath: linuxProbe.path, binary: linuxProbe, uploaded: false }, 'pinned-vram', {
      params: { sizes_gib: [0.25], register_size_gib: 0 },
      ...options,
    });

  it.runIf(ready)(
    'gives the cell null metrics with the reason when the host has no VM process',
    async () => {
      const { result, metrics } = await sampleDuring(host, [WINE, exe], 'pinned-vram', () => pinnedVram(), {});
      expect(result.status).toBe('skipped');
      expectHostMetrics(metrics, /^no VM process \(vmmemWSL, vmmem\) runs on this host/);
      expect(await noneLeft()).toEqual([]);
    },
    120_000,
  );

  describe.runIf(ready)('with a VM process to watch (CUDAPROBE_TEST_VM_PROCESS: cudaprobe.exe itself)', () => {
    beforeAll(() => {
      process.env.CUDAPROBE_TEST_VM_PROCESS = 'cudaprobe.exe';
    });
    afterAll(() => {
      delete process.env.CUDAPROBE_TEST_VM_PROCESS;
    });
    const noCounters = /^this host has no PDH GPU counter set/;

    it('starts the probe after the first sample, stops the sampler after it, and adds the metrics', async () => {
      let whileProbe: number[] = [];
      const { result, metrics } = await sampleDuring(
        host,
        [WINE, exe],
        'pinned-vram',
        () => {
          whileProbe = running();
          return pinnedVram();
        },
        {},
      );
      expect(whileProbe.length).toBeGreaterThan(0);
      expect(result.status).toBe('skipped');
      expectHostMetrics(metrics, noCounters);
      expect(await noneLeft()).toEqual([]);
    }, 120_000);

    it('leaves no sampler when the probe times out', async () => {
      process.env.CUDAPROBE_TEST_DELAY_MS = '60000';
      try {
        const { result, metrics } = await sampleDuring(host, [WINE, exe], 'pinned-vram', () => pinnedVram({ timeoutMs: 1000 }), {
          timeoutMs: 1000,
        });
        expect(result).toMatchObject({ status: 'error', errorCode: 'PROBE_TIMEOUT' });
        expectHostMetrics(metrics, noCounters);
      } finally {
        delete process.env.CUDAPROBE_TEST_DELAY_MS;
      }
      expect(await noneLeft()).toEqual([]);
    }, 120_000);

    it('leaves no sampler when the run is cancelled (Ctrl-C) while the probe runs', async () => {
      process.env.CUDAPROBE_TEST_DELAY_MS = '60000';
      const cancel = new AbortController();
      try {
        const { result, metrics } = await sampleDuring(
          host,
          [WINE, exe],
          'pinned-vram',
          () => {
            const probe = pinnedVram({ signal: cancel.signal });
            cancel.abort();
            return probe;
          },
          { signal: cancel.signal },
        );
        expect(result.status).toBe('cancelled');
        expectHostMetrics(metrics, noCounters);
      } finally {
        delete process.env.CUDAPROBE_TEST_DELAY_MS;
      }
      expect(await noneLeft()).toEqual([]);
    }, 120_000);

    describe.runIf(sshdReady())('on a Windows host reached over SSH (test/fixtures/windows-ssh-host.mjs, cudaprobe.exe under Wine)', () => {
      let sshd: Sshd;
      let windows: Session;
      let log: string;
      beforeAll(async () => {
        log = path.join(tempDir(), 'host.log');
        const fixture = path.join(repoRoot, 'test', 'fixtures', 'windows-ssh-host.mjs');
        const env = {
          ...wineEnvOf(),
          CUDAPROBE_TEST_VM_PROCESS: 'cudaprobe.exe',
          CM_WINDOWS_HOST_CUDAPROBE: exe,
          CM_WINDOWS_HOST_WINE: WINE,
        };
        sshd = await startSshd(1, [
          `ForceCommand ${process.execPath} ${fixture} ${log}`,
          `SetEnv ${Object.entries(env)
            .map(([k, value]) => `${k}=${value}`)
            .join(' ')}`,
        ]);
        const hop = {
          kind: 'ssh',
          host: '127.0.0.1',
          port: sshd.ports[0],
          identityFile: sshd.key,
          knownHosts: sshd.knownHosts,
          sshConfig: false,
          retries: 0,
        };
        windows = await connectChain([hop], { target: 'win', runId: 'vm-memory-ssh' });
      }, 60_000);
      afterAll(async () => {
        await windows?.[Symbol.asyncDispose]();
        await sshd?.stop();
      });

      it('runs the sampler through PowerShell, the probe after its first sample, and ends it with taskkill after the cell', async () => {
        expect(windows.platform).toBe('windows');
        let whileProbe: number[] = [];
        const { result, metrics } = await sampleDuring(
          windows,
          ['C:\\Users\\Jürgen\\AppData\\Local\\cudamatrix\\deployed\\k\\cudaprobe.exe'],
          'pinned-vram',
          () => {
            whileProbe = running();
            return pinnedVram();
          },
          {},
        );
        expect(whileProbe.length).toBeGreaterThan(0);
        expect(result.status).toBe('skipped');
        // The real cudaprobe.exe's lines, back through the channel's markers.
        expectHostMetrics(metrics, noCounters);
        const logged = readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { pid: number; command?: string });
        const shell = logged.find((invocation) => invocation.command?.includes("'vm-memory'"))!;
        expect(shell.command).toMatch(/'vm-memory' '--max-seconds' '\d+' '--interval-ms' '250'/);
        expect(logged.filter((invocation) => invocation.command?.startsWith('taskkill')).map((invocation) => invocation.command)).toEqual([
          `taskkill /F /T /PID ${shell.pid}`,
        ]);
        expect(await noneLeft()).toEqual([]);
      }, 120_000);
    });
  });
});
