import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../test/events-fixture.ts';
import { repoRoot } from '../test/helpers.ts';
import { readEventLog } from '../events/events.ts';
import { exitCodeOf, summarize } from './verdicts.ts';

const h200 = path.join(repoRoot, 'results', 'records', 'driver-580.159.04', 'h200-linux-sysinfo', 'events.jsonl');

describe('verdicts', () => {
  it('judges the committed H200 record: Linux detected, its class expectations met', () => {
    const s = summarize(readEventLog(h200));
    const t = s.targets[0]!;
    expect(t.detectedEnvironment).toBe('linux');
    expect(t.sysinfo.driver_version).toBe('580.159.04');
    expect(t.sysinfo.gpu_name).toBe('NVIDIA H200');
    expect(t.verdicts.map((v) => [v.title, v.status])).toEqual([
      ['sysinfo.tcc_driver == false', 'passed'],
      ['sysinfo.driver_model == null', 'passed'],
    ]);
    expect(exitCodeOf(s, { strict: true })).toBe(0);
  });

  it('lets a target expectation replace the class expectation on the same fact', () => {
    const events = [
      runStart({ linux: [{ fact: 'sysinfo.gpu_name', equals: 'NVIDIA A100' }, { fact: 'sysinfo.tcc_driver', equals: false }] }),
      targetStart('box', [{ fact: 'sysinfo.gpu_name', equals: 'NVIDIA H200' }]),
      cell('box', 'sysinfo', 'passed', sysinfo({ environment: 'linux', gpu_name: 'NVIDIA H200', tcc_driver: false })),
      runEnd,
    ];
    const v = summarize(events).targets[0]!.verdicts;
    expect(v.map((x) => [x.title, x.source, x.status])).toEqual([
      ['sysinfo.gpu_name == "NVIDIA H200"', 'target', 'passed'],
      ['sysinfo.tcc_driver == false', 'linux', 'passed'],
    ]);
  });

  it('uses the declared environment class over the detected one, and "all" everywhere', () => {
    const events = [
      runStart({ all: [{ fact: 'sysinfo.os_family', equals: 'linux' }], wsl2: [{ fact: 'sysinfo.wsl_version', equals: 2 }], linux: [{ fact: 'sysinfo.tcc_driver', equals: false }] }),
      targetStart('wsl', [], 'wsl2'),
      cell('wsl', 'sysinfo', 'passed', sysinfo({ environment: 'wsl2', os_family: 'linux', wsl_version: 1, tcc_driver: false })),
      runEnd,
    ];
    const s = summarize(events);
    expect(s.targets[0]!.verdicts.map((x) => [x.title, x.status])).toEqual([
      ['sysinfo.os_family == "linux"', 'passed'],
      ['sysinfo.wsl_version == 2', 'failed'],
    ]);
    expect(s.targets[0]!.verdicts[1]!.message).toBe('expected sysinfo.wsl_version to be 2, observed 1');
    expect(exitCodeOf(s, { strict: false })).toBe(1);
  });

  it('judges what a skipped probe still measured, and skips what it could not', () => {
    const events = [
      runStart({ linux: [{ fact: 'sysinfo.os_family', equals: 'windows' }, { fact: 'sysinfo.tcc_driver', equals: false }] }),
      targetStart('nodriver'),
      cell('nodriver', 'sysinfo', 'skipped', sysinfo({ environment: 'linux', os_family: 'linux', cuda_driver_version: null }), { reason: 'no NVIDIA driver found' }),
      runEnd,
    ];
    const s = summarize(events);
    expect(s.targets[0]!.verdicts.map((x) => x.status)).toEqual(['failed', 'skipped']);
    expect(s.targets[0]!.verdicts[1]!.message).toBe('probe sysinfo was skipped: no NVIDIA driver found');
    expect(s.nothingMeasured).toBe(true);
  });

  it('makes expectations on a crashed probe errors, and the run an infrastructure failure', () => {
    const events = [
      runStart({ linux: [{ fact: 'sysinfo.tcc_driver', equals: false }] }),
      targetStart('box', [], 'linux'),
      cell('box', 'sysinfo', 'error', [], { reason: 'killed by SIGSEGV', errorCode: 'PROBE_CRASHED' }),
      runEnd,
    ];
    const s = summarize(events);
    expect(s.targets[0]!.verdicts[0]).toMatchObject({ status: 'error', message: 'probe sysinfo failed: PROBE_CRASHED: killed by SIGSEGV' });
    expect(s.hasInfrastructureError).toBe(true);
    expect(exitCodeOf(s, { strict: false })).toBe(3);
  });

  it('judges metrics against bounds, per series selected by "where"', () => {
    const metric = (value: number | null, size: number) => ({ schema: 'cudaprobe/1', type: 'metric', probe: 'sysinfo', name: 'fake', value, unit: 'count', attrs: { size } }) as const;
    const base = [runStart(), targetStart('m', [{ metric: 'sysinfo.fake', '<=': 10, where: { size: 1 } }, { metric: 'sysinfo.fake', between: [5, 6] }])];
    const s = summarize([...base, cell('m', 'sysinfo', 'passed', [metric(3, 1), metric(7, 2)]), runEnd]);
    expect(s.targets[0]!.verdicts.map((v) => [v.status, v.actual])).toEqual([
      ['passed', '3 count {"size":1}'],
      ['failed', '3 count {"size":1}, 7 count {"size":2}'],
    ]);
    const missing = summarize([...base, cell('m', 'sysinfo', 'passed', [metric(null, 1)]), runEnd]);
    expect(missing.targets[0]!.verdicts[0]).toMatchObject({ status: 'failed', message: expect.stringContaining('not measured') });
  });

  it('orders exit codes: interrupted, configuration, infrastructure, failed, strict-nothing, ok', () => {
    const mismatch = summarize([runStart(), targetStart('a'), { type: 'target-error', target: 'a', time: '', code: 'ENVIRONMENT_MISMATCH', message: 'x' }, runEnd]);
    expect(exitCodeOf(mismatch, { strict: false })).toBe(2);
    const unfinished = summarize([runStart(), targetStart('a'), cell('a', 'sysinfo', 'passed')]);
    expect(unfinished.interrupted).toBe(true);
    expect(exitCodeOf(unfinished, { strict: false })).toBe(130);
    const skipped = summarize([runStart(), targetStart('a'), cell('a', 'sysinfo', 'skipped'), runEnd]);
    expect(exitCodeOf(skipped, { strict: false })).toBe(0);
    expect(exitCodeOf(skipped, { strict: true })).toBe(4);
  });

  it('skips a target that cannot run probes by its nature (WSL_VERSION_1): no error, and the exit status of skipped cells', () => {
    const why = 'WSL distribution "Legacy" runs under WSL 1, which has no GPU: "wsl.exe --set-version Legacy 2"';
    const wsl1 = [
      targetStart('wsl1', [], 'wsl2'),
      { type: 'target-error' as const, target: 'wsl1', time: '', code: 'WSL_VERSION_1', message: why },
      cell('wsl1', 'sysinfo', 'skipped', [], { reason: why, errorCode: 'WSL_VERSION_1', durationMs: 0 }),
    ];
    const expectations = { wsl2: [{ fact: 'sysinfo.wsl_version', equals: 2 }] };
    const alone = summarize([runStart(expectations), ...wsl1, runEnd]);
    const t = alone.targets[0]!;
    expect(t.error).toBeUndefined();
    expect(t.skipped).toMatchObject({ code: 'WSL_VERSION_1', message: why });
    expect(t.verdicts.map((v) => [v.status, v.message])).toEqual([['skipped', `probe sysinfo was skipped: ${why}`]]);
    expect(alone).toMatchObject({ hasInfrastructureError: false, hasConfigurationError: false, nothingMeasured: true, counts: { cells: { skipped: 1 } } });
    expect(exitCodeOf(alone, { strict: false })).toBe(0);
    expect(exitCodeOf(alone, { strict: true })).toBe(4);
    // Beside a target that measured, --strict is satisfied; beside one that failed, that one decides.
    const measured = summarize([runStart(expectations), ...wsl1, targetStart('gpu'), cell('gpu', 'sysinfo', 'passed', sysinfo({ environment: 'linux' })), runEnd]);
    expect(exitCodeOf(measured, { strict: true })).toBe(0);
    const crashed = summarize([runStart(expectations), ...wsl1, targetStart('box'), cell('box', 'sysinfo', 'error', [], { errorCode: 'PROBE_CRASHED' }), runEnd]);
    expect(exitCodeOf(crashed, { strict: false })).toBe(3);
    // A log written before WSL 1 was a skip has its cells as errors: rendered as it was recorded.
    const older = summarize([runStart(), wsl1[0]!, wsl1[1]!, cell('wsl1', 'sysinfo', 'error', [], { reason: why, errorCode: 'WSL_VERSION_1' }), runEnd]);
    expect(exitCodeOf(older, { strict: false })).toBe(3);
  });

  it('keeps one sysinfo run per target when shards are merged', () => {
    const c = cell('a', 'sysinfo', 'passed', sysinfo({ environment: 'linux' }));
    const s = summarize([runStart(), targetStart('a'), c, { ...c, planned: false }, c, runEnd]);
    expect(s.targets[0]!.cells).toHaveLength(2);
  });
});
