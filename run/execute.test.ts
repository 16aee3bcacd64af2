/**
 * The engine on this machine (no driver: every probe is skipped, quickly), with plans built in
 * code where the matrix loader would refuse the input: the engine itself must never let one
 * target's failure abort the run.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CudamatrixError } from '../core/errors.ts';
import type { CellEndEvent, RunEvent } from '../events/events.ts';
import { parseMatrix } from '../matrix/load.ts';
import { exitCodeOf, summarize } from '../verdicts/verdicts.ts';
import { connectChain } from '../transports/registry.ts';
import { tempDir } from '../test/helpers.ts';
import { executePlan } from './execute.ts';
import { planCells } from './plan.ts';

// connectChain as it is, unless a test makes one target's transport fail in a way of its choosing
// (what the WSL transport says of a WSL 1 distribution; test/wsl/wsl.test.ts has the real one).
vi.mock('../transports/registry.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../transports/registry.ts')>();
  return { ...real, connectChain: vi.fn(real.connectChain) };
});
const realConnectChain = (await vi.importActual<typeof import('../transports/registry.ts')>('../transports/registry.ts')).connectChain;
afterEach(() => {
  vi.mocked(connectChain).mockImplementation(realConnectChain);
});

describe('the run engine', () => {
  it('ends a target whose transport options are unusable with an error, and finishes the others (defect 3)', async () => {
    const matrix = parseMatrix(
      'version: 1\ndefaults: {probes: [sysinfo]}\ntargets:\n  - name: here\n  - name: broken\n    transport: {kind: docker, image: x}\n',
      'engine.yaml',
    );
    // What the loader now refuses, put in behind its back: the engine must still cope.
    matrix.targets[1]!.hops = [{ kind: 'docker', endpoint: 'ftp://x' }];
    const seen: RunEvent[] = [];
    const result = await executePlan(planCells(matrix), { runsDir: tempDir(), onEvent: (e) => seen.push(e) });
    expect(seen).toEqual(result.events);
    expect(result.events.at(-1)).toMatchObject({ type: 'run-end', interrupted: false });
    const cells = result.events.filter((e): e is CellEndEvent => e.type === 'cell-end');
    expect(cells.find((cell) => cell.target === 'here')).toMatchObject({ status: 'skipped' });
    expect(cells.find((cell) => cell.target === 'broken')).toMatchObject({ status: 'error' });
    expect(result.events.find((e) => e.type === 'target-error')).toMatchObject({
      target: 'broken',
      message: expect.stringContaining('ftp://x'),
    });
  });

  it('marks the cells of a cancelled run "not-run", with one start and one end per cell', async () => {
    const matrix = parseMatrix(
      'version: 1\ndefaults: {probes: [sysinfo, sync-latency]}\ntargets:\n  - name: a\n  - name: b\n',
      'cancel.yaml',
    );
    const controller = new AbortController();
    controller.abort();
    const result = await executePlan(planCells(matrix), { runsDir: tempDir(), signal: controller.signal });
    const cells = result.events.filter((e): e is CellEndEvent => e.type === 'cell-end');
    expect(cells.map((cell) => `${cell.cell}:${cell.status}`)).toEqual([
      'a/sysinfo:not-run',
      'a/sync-latency:not-run',
      'b/sysinfo:not-run',
      'b/sync-latency:not-run',
    ]);
    expect(result.events.filter((e) => e.type === 'cell-start')).toEqual([]);
    expect(result.events.at(-1)).toMatchObject({ type: 'run-end', interrupted: true });
  });

  it('ends a started cell "cancelled", not "not-run", when its exec rejects during the interrupt (issue 22.6)', async () => {
    // What a real wsl.exe does on Ctrl-C (it dies; the agent's stream ends): the running exec
    // rejects with a transport error instead of resolving as a stopped command. A real local
    // session; only its exec of the probe is made to fail that way once the run is cancelled.
    const controller = new AbortController();
    vi.mocked(connectChain).mockImplementation(async (hops, context) => {
      const session = await realConnectChain(hops, context);
      const exec = session.exec.bind(session);
      session.exec = (argv, options) =>
        argv.includes('event-timing')
          ? new Promise((_, reject) =>
              options?.signal?.addEventListener(
                'abort',
                () => reject(new CudamatrixError('TRANSPORT_FAILED', 'the wsl.exe that runs the commands has ended')),
                { once: true },
              ),
            )
          : exec(argv, options);
      return session;
    });
    const matrix = parseMatrix(
      'version: 1\ndefaults: {probes: [sysinfo, sync-latency, event-timing]}\ntargets:\n  - name: a\n',
      'cancel-mid.yaml',
    );
    const onEvent = (e: RunEvent) => {
      if (e.type === 'cell-start' && e.probe === 'event-timing') setImmediate(() => controller.abort());
    };
    const result = await executePlan(planCells(matrix), { runsDir: tempDir(), signal: controller.signal, onEvent });
    const cells = result.events.filter((e): e is CellEndEvent => e.type === 'cell-end');
    expect(cells.map((cell) => `${cell.cell}:${cell.status}`)).toEqual([
      'a/sysinfo:skipped',
      'a/event-timing:cancelled',
      'a/sync-latency:not-run',
    ]);
    expect(cells[1]).toMatchObject({ reason: 'cancelled before it finished', planned: true });
    expect(result.events.some((e) => e.type === 'target-error')).toBe(false);
    expect(result.events.at(-1)).toMatchObject({ type: 'run-end', interrupted: true });
  });

  it('skips the cells of a target that cannot run probes by its nature (WSL_VERSION_1), and the run does not fail for it', async () => {
    const wsl1 =
      'WSL distribution "Legacy" on this machine runs under WSL 1, which has no GPU: convert it with "wsl.exe --set-version Legacy 2"';
    vi.mocked(connectChain).mockImplementation((hops, context) =>
      context.target === 'legacy' ? Promise.reject(new CudamatrixError('WSL_VERSION_1', wsl1)) : realConnectChain(hops, context),
    );
    const matrix = parseMatrix(
      'version: 1\ndefaults: {probes: [sysinfo, pinned-vram]}\ntargets:\n  - name: here\n  - name: legacy\n',
      'wsl1.yaml',
    );
    const result = await executePlan(planCells(matrix), { runsDir: tempDir() });
    // Recorded as the transport said it, with its code, then every cell of the target skipped with
    // that message: no cell-start, since nothing ran there.
    const legacy = result.events.filter((e) => 'target' in e && e.target === 'legacy');
    expect(legacy.map((e) => e.type)).toEqual(['target-start', 'target-error', 'cell-end', 'cell-end']);
    expect(legacy[1]).toMatchObject({ type: 'target-error', code: 'WSL_VERSION_1', message: wsl1 });
    const cells = legacy.filter((e): e is CellEndEvent => e.type === 'cell-end');
    expect(cells.map((cell) => [cell.cell, cell.status, cell.reason, cell.errorCode])).toEqual([
      ['legacy/sysinfo', 'skipped', wsl1, 'WSL_VERSION_1'],
      ['legacy/pinned-vram', 'skipped', wsl1, 'WSL_VERSION_1'],
    ]);
    // This machine has no driver: everything is skipped, which is exit 0 (4 with --strict), as
    // for a run with no WSL 1 target at all.
    const summary = summarize(result.events);
    expect(summary.hasInfrastructureError).toBe(false);
    const target = summary.targets.find((targetSummary) => targetSummary.name === 'legacy')!;
    expect(target.error).toBeUndefined();
    expect(target.skipped).toMatchObject({ code: 'WSL_VERSION_1', message: wsl1 });
    expect(exitCodeOf(summary, { strict: false })).toBe(0);
    expect(exitCodeOf(summary, { strict: true })).toBe(4);
  });

  it('still ends a target with errors when its transport fails with an infrastructure code', async () => {
    vi.mocked(connectChain).mockImplementation((hops, context) =>
      context.target === 'nogpu'
        ? Promise.reject(new CudamatrixError('WSL_NO_GPU', 'no /dev/dxg in WSL distribution "NoGpu"'))
        : realConnectChain(hops, context),
    );
    const matrix = parseMatrix('version: 1\ndefaults: {probes: [sysinfo]}\ntargets:\n  - name: here\n  - name: nogpu\n', 'nogpu.yaml');
    const result = await executePlan(planCells(matrix), { runsDir: tempDir() });
    const cells = result.events.filter((e): e is CellEndEvent => e.type === 'cell-end' && e.target === 'nogpu');
    expect(cells.map((cell) => [cell.status, cell.errorCode])).toEqual([['error', 'WSL_NO_GPU']]);
    expect(exitCodeOf(summarize(result.events), { strict: false })).toBe(3);
  });

  it('emits cell-start before each cell runs', async () => {
    const matrix = parseMatrix('version: 1\ndefaults: {probes: [sysinfo, cuda-graph]}\ntargets:\n  - name: a\n', 'starts.yaml');
    const result = await executePlan(planCells(matrix), { runsDir: tempDir() });
    const order = result.events.flatMap((e) => (e.type === 'cell-start' || e.type === 'cell-end' ? [`${e.type}:${e.cell}`] : []));
    expect(order).toEqual(['cell-start:a/sysinfo', 'cell-end:a/sysinfo', 'cell-start:a/cuda-graph', 'cell-end:a/cuda-graph']);
  });
});
