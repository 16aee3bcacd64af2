import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { cell, runEnd, runStart, targetStart } from '../../test/events-fixture.ts';
import { factIn, h200WithLinuxExpectations, metricsIn, pinnedH2dAtLeast40 } from '../../test/h200-fixture.ts';
import { tempDir } from '../../test/helpers.ts';
import { summarize } from '../verdicts.ts';
import { jsonReporter, summaryJson } from './json.ts';

describe('JSON summary', () => {
  it('gives a target that cannot run probes by its nature as skipped, with the reason, and not as an error', () => {
    const why = 'WSL distribution "Legacy" runs under WSL 1, which has no GPU: "wsl.exe --set-version Legacy 2"';
    const events = [
      runStart(),
      targetStart('wsl1'),
      { type: 'target-error' as const, target: 'wsl1', time: '', code: 'WSL_VERSION_1', message: why },
      cell('wsl1', 'sysinfo', 'skipped', [], { reason: why, errorCode: 'WSL_VERSION_1', durationMs: 0 }),
      targetStart('down'),
      { type: 'target-error' as const, target: 'down', time: '', code: 'TARGET_UNREACHABLE', message: 'connect ECONNREFUSED' },
      cell('down', 'sysinfo', 'error', [], { reason: 'connect ECONNREFUSED', errorCode: 'TARGET_UNREACHABLE' }),
      runEnd,
    ];
    const json = JSON.parse(summaryJson(summarize(events))) as { counts: { cells: Record<string, number> }; targets: Record<string, unknown>[] };
    expect(json.counts.cells).toEqual({ skipped: 1, error: 1 });
    expect(json.targets[0]).toMatchObject({ name: 'wsl1', error: null, skipped: { code: 'WSL_VERSION_1', reason: why }, cells: [{ status: 'skipped', reason: why }] });
    expect(json.targets[1]).toMatchObject({ name: 'down', error: { code: 'TARGET_UNREACHABLE' }, skipped: null });
  });
});

describe('JSON summary: the evidence per verdict', () => {
  it('gives each verdict its samples within and outside the bounds, or the fact\'s evidence, its why and the event log', () => {
    const events = h200WithLinuxExpectations([pinnedH2dAtLeast40, { fact: 'pinned-vram.counts_as_vram', equals: true, why: 'the design card says so (C1)' }]);
    const dir = tempDir();
    const eventsFile = path.join(dir, 'events.jsonl');
    jsonReporter((runDir) => path.join(runDir, 'summary.json')).onEnd!(summarize(events), { runDir: dir, eventsFile, strict: false });
    type V = { title: string; status: string; why?: string; eventsFile?: string; evidence?: Record<string, unknown> };
    const json = JSON.parse(readFileSync(path.join(dir, 'summary.json'), 'utf8')) as { events: string; targets: { verdicts: V[] }[] };
    expect(json.events).toBe(eventsFile);
    const verdicts = json.targets[0]!.verdicts;
    const bandwidth = verdicts.find((v) => v.title.startsWith('transfer-bandwidth.bandwidth_gbps'))!;
    const [small, ...large] = metricsIn(events, 'transfer-bandwidth.bandwidth_gbps', { direction: 'h2d', memory: 'pinned' });
    expect(bandwidth).toMatchObject({
      status: 'failed',
      why: pinnedH2dAtLeast40.why,
      eventsFile,
      evidence: {
        kind: 'metric',
        bounds: { low: 40, high: null, unit: 'GB/s' },
        outside: [{ attrs: { direction: 'h2d', memory: 'pinned', size_bytes: 1048576 }, value: small!.value, unit: 'GB/s' }],
        within: large.map((m) => ({ attrs: m.attrs, value: m.value, unit: 'GB/s' })),
      },
    });
    const fact = verdicts.find((v) => v.title === 'pinned-vram.counts_as_vram == true')!;
    expect(fact.evidence).toMatchObject({ kind: 'fact', value: false, evidence: factIn(events, 'pinned-vram.counts_as_vram').evidence, summary: expect.stringMatching(/^NVML process memory \+0 B for 4 GiB \(the deciding source\)/) });
    // Every judged verdict carries evidence and the log; the passed ones too.
    for (const v of verdicts) expect(v, v.title).toMatchObject({ eventsFile, evidence: expect.any(Object) });
  });
});

