/**
 * The verdict engine. Every test runs twice (test/live-and-merged.ts): on the log as given, and on
 * the same log cut into shard logs and merged by cudamatrix merge; the verdicts must be the same.
 * A real run on this machine, live and as two shards merged, is judged alike too.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../test/events-fixture.ts';
import { repoRoot } from '../test/helpers.ts';
import { readEventLog, type RunEvent } from '../events/events.ts';
import { formatValue } from '../core/units.ts';
import { factIn, h200Events, h200WithLinuxExpectations, metricsIn, pinnedH2dAtLeast40 } from '../test/h200-fixture.ts';
import { mergedShards, SOURCES, type SourceName } from '../test/live-and-merged.ts';
import { exitCodeOf, summarize as summarizeLog, withEventsFile, type FactEvidence, type MetricEvidence, type Verdict } from './verdicts.ts';

/** summarize, on the log as given ('live') or on the same log merged from its shards. */
const summarizer =
  (source: SourceName) =>
  (events: RunEvent[], options?: { eventsFile?: string }): ReturnType<typeof summarizeLog> =>
    summarizeLog(source === 'live' ? events : mergedShards(events), options);

const h200 = path.join(repoRoot, 'records', 'driver-580.159.04', 'h200-linux-sysinfo', 'events.jsonl');

describe.each(SOURCES)('verdicts (%s)', (source) => {
  const summarize = summarizer(source);
  it('judges the committed H200 record: Linux detected, its class expectations met', () => {
    const summary = summarize(readEventLog(h200));
    const target = summary.targets[0]!;
    expect(target.detectedEnvironment).toBe('linux');
    expect(target.sysinfo.driver_version).toBe('580.159.04');
    expect(target.sysinfo.gpu_name).toBe('NVIDIA H200');
    expect(target.verdicts.map((verdict) => [verdict.title, verdict.status])).toEqual([
      ['sysinfo.tcc_driver == false', 'passed'],
      ['sysinfo.driver_model == null', 'passed'],
    ]);
    expect(exitCodeOf(summary, { strict: true })).toBe(0);
  });

  it('lets a target expectation replace the class expectation on the same fact', () => {
    const events = [
      runStart({
        linux: [
          { fact: 'sysinfo.gpu_name', equals: 'NVIDIA A100' },
          { fact: 'sysinfo.tcc_driver', equals: false },
        ],
      }),
      targetStart('box', [{ fact: 'sysinfo.gpu_name', equals: 'NVIDIA H200' }]),
      cell('box', 'sysinfo', 'passed', sysinfo({ environment: 'linux', gpu_name: 'NVIDIA H200', tcc_driver: false })),
      runEnd,
    ];
    const verdicts = summarize(events).targets[0]!.verdicts;
    expect(verdicts.map((verdict) => [verdict.title, verdict.source, verdict.status])).toEqual([
      ['sysinfo.gpu_name == "NVIDIA H200"', 'target', 'passed'],
      ['sysinfo.tcc_driver == false', 'linux', 'passed'],
    ]);
  });

  it('uses the declared environment class over the detected one, and "all" everywhere', () => {
    const events = [
      runStart({
        all: [{ fact: 'sysinfo.os_family', equals: 'linux' }],
        wsl2: [{ fact: 'sysinfo.wsl_version', equals: 2 }],
        linux: [{ fact: 'sysinfo.tcc_driver', equals: false }],
      }),
      targetStart('wsl', [], 'wsl2'),
      cell('wsl', 'sysinfo', 'passed', sysinfo({ environment: 'wsl2', os_family: 'linux', wsl_version: 1, tcc_driver: false })),
      runEnd,
    ];
    const summary = summarize(events);
    expect(summary.targets[0]!.verdicts.map((verdict) => [verdict.title, verdict.status])).toEqual([
      ['sysinfo.os_family == "linux"', 'passed'],
      ['sysinfo.wsl_version == 2', 'failed'],
    ]);
    expect(summary.targets[0]!.verdicts[1]!.message).toBe('expected sysinfo.wsl_version to be 2, observed 1');
    expect(exitCodeOf(summary, { strict: false })).toBe(1);
  });

  it('judges what a skipped probe still measured, and skips what it could not', () => {
    const events = [
      runStart({
        linux: [
          { fact: 'sysinfo.os_family', equals: 'windows' },
          { fact: 'sysinfo.tcc_driver', equals: false },
        ],
      }),
      targetStart('nodriver'),
      cell('nodriver', 'sysinfo', 'skipped', sysinfo({ environment: 'linux', os_family: 'linux', cuda_driver_version: null }), {
        reason: 'no NVIDIA driver found',
      }),
      runEnd,
    ];
    const summary = summarize(events);
    expect(summary.targets[0]!.verdicts.map((verdict) => verdict.status)).toEqual(['failed', 'skipped']);
    expect(summary.targets[0]!.verdicts[1]!.message).toBe('probe sysinfo was skipped: no NVIDIA driver found');
    expect(summary.nothingMeasured).toBe(true);
  });

  it('makes expectations on a crashed probe errors, and the run an infrastructure failure', () => {
    const events = [
      runStart({ linux: [{ fact: 'sysinfo.tcc_driver', equals: false }] }),
      targetStart('box', [], 'linux'),
      cell('box', 'sysinfo', 'error', [], { reason: 'killed by SIGSEGV', errorCode: 'PROBE_CRASHED' }),
      runEnd,
    ];
    const summary = summarize(events);
    expect(summary.targets[0]!.verdicts[0]).toMatchObject({
      status: 'error',
      message: 'probe sysinfo failed: PROBE_CRASHED: killed by SIGSEGV',
    });
    expect(summary.hasInfrastructureError).toBe(true);
    expect(exitCodeOf(summary, { strict: false })).toBe(3);
  });

  it('judges metrics against bounds, per series selected by "where"', () => {
    const metric = (value: number | null, size: number) =>
      ({ schema: 'cudaprobe/1', type: 'metric', probe: 'sysinfo', name: 'fake', value, unit: 'count', attrs: { size } }) as const;
    const base = [
      runStart(),
      targetStart('m', [
        { metric: 'sysinfo.fake', '<=': 10, where: { size: 1 } },
        { metric: 'sysinfo.fake', between: [5, 6] },
      ]),
    ];
    const summary = summarize([...base, cell('m', 'sysinfo', 'passed', [metric(3, 1), metric(7, 2)]), runEnd]);
    expect(summary.targets[0]!.verdicts.map((verdict) => [verdict.status, verdict.actual])).toEqual([
      ['passed', '3 count {"size":1}'],
      ['failed', '3 count {"size":1}, 7 count {"size":2}'],
    ]);
    const missing = summarize([...base, cell('m', 'sysinfo', 'passed', [metric(null, 1)]), runEnd]);
    expect(missing.targets[0]!.verdicts[0]).toMatchObject({ status: 'failed', message: expect.stringContaining('not measured') });
  });

  it('applies every bound given: ">=" or "<=" beside "between" narrows it, as the title\'s "and" says', () => {
    const metric = (value: number) =>
      ({ schema: 'cudaprobe/1', type: 'metric', probe: 'sysinfo', name: 'fake', value, unit: 'count', attrs: { v: value } }) as const;
    const both = [
      { metric: 'sysinfo.fake', '>=': 3, between: [5, 10] as [number, number] },
      { metric: 'sysinfo.fake', '<=': 20, between: [1, 8] as [number, number], where: { v: 9 } },
    ];
    const summary = summarize([runStart(), targetStart('m', both), cell('m', 'sysinfo', 'passed', [metric(4), metric(9)]), runEnd]);
    expect(
      summary.targets[0]!.verdicts.map((verdict) => [
        verdict.title,
        verdict.status,
        verdict.evidence && 'bounds' in verdict.evidence ? verdict.evidence.bounds : null,
      ]),
    ).toEqual([
      ['sysinfo.fake >= 3 and between 5 and 10', 'failed', { low: 5, high: 10, unit: 'count' }],
      ['sysinfo.fake {"v":9} <= 20 and between 1 and 8', 'failed', { low: 1, high: 8, unit: 'count' }],
    ]);
  });

  it('orders exit codes: interrupted, configuration, infrastructure, failed, strict-nothing, ok', () => {
    const mismatch = summarize([
      runStart(),
      targetStart('a'),
      { type: 'target-error', target: 'a', time: '', code: 'ENVIRONMENT_MISMATCH', message: 'x' },
      runEnd,
    ]);
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
    const target = alone.targets[0]!;
    expect(target.error).toBeUndefined();
    expect(target.skipped).toMatchObject({ code: 'WSL_VERSION_1', message: why });
    expect(target.verdicts.map((verdict) => [verdict.status, verdict.message])).toEqual([['skipped', `probe sysinfo was skipped: ${why}`]]);
    expect(alone).toMatchObject({
      hasInfrastructureError: false,
      hasConfigurationError: false,
      nothingMeasured: true,
      counts: { cells: { skipped: 1 } },
    });
    expect(exitCodeOf(alone, { strict: false })).toBe(0);
    expect(exitCodeOf(alone, { strict: true })).toBe(4);
    // Beside a target that measured, --strict is satisfied; beside one that failed, that one decides.
    const measured = summarize([
      runStart(expectations),
      ...wsl1,
      targetStart('gpu'),
      cell('gpu', 'sysinfo', 'passed', sysinfo({ environment: 'linux' })),
      runEnd,
    ]);
    expect(exitCodeOf(measured, { strict: true })).toBe(0);
    const crashed = summarize([
      runStart(expectations),
      ...wsl1,
      targetStart('box'),
      cell('box', 'sysinfo', 'error', [], { errorCode: 'PROBE_CRASHED' }),
      runEnd,
    ]);
    expect(exitCodeOf(crashed, { strict: false })).toBe(3);
    // A log written before WSL 1 was a skip has its cells as errors: rendered as it was recorded.
    const older = summarize([
      runStart(),
      wsl1[0]!,
      wsl1[1]!,
      cell('wsl1', 'sysinfo', 'error', [], { reason: why, errorCode: 'WSL_VERSION_1' }),
      runEnd,
    ]);
    expect(exitCodeOf(older, { strict: false })).toBe(3);
  });

  it('keeps one sysinfo run per target when shards are merged', () => {
    const sysinfoCell = cell('a', 'sysinfo', 'passed', sysinfo({ environment: 'linux' }));
    const summary = summarize([runStart(), targetStart('a'), sysinfoCell, { ...sysinfoCell, planned: false }, sysinfoCell, runEnd]);
    expect(summary.targets[0]!.cells).toHaveLength(2);
  });
});

describe.each(SOURCES)('evidence in verdicts (%s)', (source) => {
  const summarize = summarizer(source);
  const verdictOf = (events: Parameters<typeof summarize>[0], title: string): Verdict => {
    const verdict = summarize(events).targets[0]!.verdicts.find((candidate) => candidate.title === title);
    if (!verdict) throw new Error(`no verdict "${title}"`);
    return verdict;
  };
  const bandwidthTitle = 'transfer-bandwidth.bandwidth_gbps {"direction":"h2d","memory":"pinned"} >= 40 GB/s';

  it('names the failing sample of a metric (the 1 MiB transfer of the H200 run) and how many matching samples were within', () => {
    const events = h200WithLinuxExpectations([pinnedH2dAtLeast40]);
    const samples = metricsIn(events, 'transfer-bandwidth.bandwidth_gbps', { direction: 'h2d', memory: 'pinned' });
    // The real run: four sizes, of which only the smallest is below 40 GB/s.
    expect(samples.map((sample) => sample.attrs?.size_bytes)).toEqual([1024 ** 2, 16 * 1024 ** 2, 256 * 1024 ** 2, 1024 ** 3]);
    const [small, ...large] = samples;
    expect(small!.value!).toBeLessThan(40);
    for (const sample of large) expect(sample.value!).toBeGreaterThanOrEqual(40);

    const verdict = verdictOf(events, bandwidthTitle);
    expect(verdict.status).toBe('failed');
    expect(verdict.message).toBe(
      `expected ${bandwidthTitle}, observed ${formatValue(small!.value, 'GB/s')} at size 1 MiB; 3 of 4 matching samples within`,
    );
    expect(verdict.why).toBe(pinnedH2dAtLeast40.why);
    const e = verdict.evidence as MetricEvidence;
    expect(e).toEqual({
      kind: 'metric',
      bounds: { low: 40, high: null, unit: 'GB/s' },
      outside: [{ attrs: small!.attrs, value: small!.value, unit: 'GB/s' }],
      within: large.map((sample) => ({ attrs: sample.attrs, value: sample.value, unit: 'GB/s' })),
    });
    // The fields other code reads stay as they were.
    expect(verdict.actual).toContain(`${formatValue(small!.value, 'GB/s')} {"direction":"h2d","memory":"pinned","size_bytes":1048576}`);
  });

  it('gives a passed metric its samples too, all within', () => {
    const verdict = verdictOf(h200Events, 'pinned-vram.device_growth_per_gib_bytes {"api":"driver","kind":"pinned"} <= 64 MiB');
    const samples = metricsIn(h200Events, 'pinned-vram.device_growth_per_gib_bytes', { api: 'driver', kind: 'pinned' });
    expect(samples.length).toBeGreaterThan(0);
    expect(verdict).toMatchObject({ status: 'passed', why: expect.stringContaining('page tables') });
    expect(verdict.evidence).toEqual({
      kind: 'metric',
      bounds: { low: null, high: 64 * 1024 ** 2, unit: 'bytes' },
      outside: [],
      within: samples.map((sample) => ({ attrs: sample.attrs, value: sample.value, unit: sample.unit })),
    });
  });

  it("fails a metric on a sample without a value, with the probe's reason, and names every failing one", () => {
    const metric = (value: number | null, size: number, reason?: string) =>
      ({
        schema: 'cudaprobe/1',
        type: 'metric',
        probe: 'sysinfo',
        name: 'fake',
        value,
        unit: 'count',
        attrs: { size_bytes: size, mode: 'x' },
        ...(reason ? { reason } : {}),
      }) as const;
    const events = [
      runStart(),
      targetStart('m', [{ metric: 'sysinfo.fake', '<=': 10, where: { mode: 'x' } }]),
      cell('m', 'sysinfo', 'passed', [metric(3, 1024), metric(null, 2048, 'timed out'), metric(12, 4096)]),
      runEnd,
    ];
    const verdict = summarize(events).targets[0]!.verdicts[0]!;
    expect(verdict.message).toBe(
      'expected sysinfo.fake {"mode":"x"} <= 10, observed not measured (timed out) at size 2 KiB, 12 count at size 4 KiB; 1 of 3 matching samples within',
    );
    expect((verdict.evidence as MetricEvidence).outside.map((sample) => [sample.value, sample.reason])).toEqual([
      [null, 'timed out'],
      [12, undefined],
    ]);
  });

  it("gives a fact its value, the probe's evidence and a line for people naming the deciding source", () => {
    const events = h200WithLinuxExpectations([{ fact: 'pinned-vram.counts_as_vram', equals: true, why: 'the design card says so (C1)' }]);
    const fact = factIn(events, 'pinned-vram.counts_as_vram');
    const ev = fact.evidence as Record<string, number | string>;
    expect(ev.source).toBe('nvml_process_used_bytes');
    const verdict = verdictOf(events, 'pinned-vram.counts_as_vram == true');
    expect(verdict).toMatchObject({
      status: 'failed',
      why: 'the design card says so (C1)',
      message: 'expected pinned-vram.counts_as_vram to be true, observed false',
    });
    const e = verdict.evidence as FactEvidence;
    expect(e).toMatchObject({ kind: 'fact', value: false, evidence: fact.evidence });
    const grew = (key: string) => `${(ev[key] as number) >= 0 ? '+' : ''}${formatValue(ev[key] as number, 'bytes')}`;
    expect(e.summary).toBe(
      `NVML process memory ${grew('nvml_process_used_bytes')} for ${formatValue(ev.size_bytes as number, 'bytes')} (the deciding source); ` +
        `NVML device memory ${grew('nvml_device_used_bytes')}, cuMemGetInfo used ${grew('subject_cu_used_bytes')}, resident set ${grew('subject_rss_bytes')}, system available memory ${grew('system_available_bytes')}`,
    );
  });

  it('gives a sysinfo fact its source, and a null fact its reason', () => {
    const events = [
      runStart({
        linux: [
          { fact: 'sysinfo.gpu_name', equals: 'NVIDIA A100' },
          { fact: 'sysinfo.driver_model', equals: 'WDDM' },
        ],
      }),
      targetStart('box'),
      cell('box', 'sysinfo', 'passed', [
        { schema: 'cudaprobe/1', type: 'sysinfo', probe: 'sysinfo', name: 'environment', value: 'linux' },
        { schema: 'cudaprobe/1', type: 'sysinfo', probe: 'sysinfo', name: 'gpu_name', value: 'NVIDIA H200', source: 'NVML' },
        { schema: 'cudaprobe/1', type: 'sysinfo', probe: 'sysinfo', name: 'driver_model', value: null, reason: 'NVML: Not Supported' },
      ]),
      runEnd,
    ];
    const [name, model] = summarize(events).targets[0]!.verdicts;
    expect(name!.evidence).toEqual({ kind: 'fact', value: 'NVIDIA H200', source: 'NVML' });
    expect(model!.evidence).toEqual({ kind: 'fact', value: null, reason: 'NVML: Not Supported' });
  });

  it('puts the event log on the summary and on every verdict, when the caller knows it', () => {
    expect(summarize(h200Events).targets[0]!.verdicts.every((verdict) => verdict.eventsFile === undefined)).toBe(true);
    const summary = summarize(h200Events, { eventsFile: 'runs/a/events.jsonl' });
    expect(summary.eventsFile).toBe('runs/a/events.jsonl');
    expect(summary.targets[0]!.verdicts.map((verdict) => verdict.eventsFile)).toEqual(
      summary.targets[0]!.verdicts.map(() => 'runs/a/events.jsonl'),
    );
    // A summary that names its log keeps it; one that does not takes the reporters' path.
    expect(withEventsFile(summary, 'elsewhere.jsonl').targets[0]!.verdicts[0]!.eventsFile).toBe('runs/a/events.jsonl');
    expect(withEventsFile(summarize(h200Events), 'b.jsonl').targets[0]!.verdicts[0]!.eventsFile).toBe('b.jsonl');
  });
});
