/**
 * The engine on this machine (no driver: every probe is skipped, quickly), with plans built in
 * code where the matrix loader would refuse the input: the engine itself must never let one
 * target's failure abort the run.
 */
import { describe, expect, it } from 'vitest';
import type { CellEndEvent, RunEvent } from '../events/events.ts';
import { parseMatrix } from '../matrix/load.ts';
import { tempDir } from '../test/helpers.ts';
import { executePlan } from './execute.ts';
import { planCells } from './plan.ts';

describe('the run engine', () => {
  it('ends a target whose transport options are unusable with an error, and finishes the others (defect 3)', async () => {
    const matrix = parseMatrix('version: 1\ndefaults: {probes: [sysinfo]}\ntargets:\n  - name: here\n  - name: broken\n    transport: {kind: docker, image: x}\n', 'engine.yaml');
    // What the loader now refuses, put in behind its back: the engine must still cope.
    matrix.targets[1]!.hops = [{ kind: 'docker', endpoint: 'ftp://x' }];
    const seen: RunEvent[] = [];
    const result = await executePlan(planCells(matrix), { runsDir: tempDir(), onEvent: (e) => seen.push(e) });
    expect(seen).toEqual(result.events);
    expect(result.events.at(-1)).toMatchObject({ type: 'run-end', interrupted: false });
    const cells = result.events.filter((e): e is CellEndEvent => e.type === 'cell-end');
    expect(cells.find((c) => c.target === 'here')).toMatchObject({ status: 'skipped' });
    expect(cells.find((c) => c.target === 'broken')).toMatchObject({ status: 'error' });
    expect(result.events.find((e) => e.type === 'target-error')).toMatchObject({ target: 'broken', message: expect.stringContaining('ftp://x') });
  });

  it('marks the cells of a cancelled run "not-run", with one start and one end per cell', async () => {
    const matrix = parseMatrix('version: 1\ndefaults: {probes: [sysinfo, sync-latency]}\ntargets:\n  - name: a\n  - name: b\n', 'cancel.yaml');
    const controller = new AbortController();
    controller.abort();
    const result = await executePlan(planCells(matrix), { runsDir: tempDir(), signal: controller.signal });
    const cells = result.events.filter((e): e is CellEndEvent => e.type === 'cell-end');
    expect(cells.map((c) => `${c.cell}:${c.status}`)).toEqual(['a/sysinfo:not-run', 'a/sync-latency:not-run', 'b/sysinfo:not-run', 'b/sync-latency:not-run']);
    expect(result.events.filter((e) => e.type === 'cell-start')).toEqual([]);
    expect(result.events.at(-1)).toMatchObject({ type: 'run-end', interrupted: true });
  });

  it('emits cell-start before each cell runs', async () => {
    const matrix = parseMatrix('version: 1\ndefaults: {probes: [sysinfo, cuda-graph]}\ntargets:\n  - name: a\n', 'starts.yaml');
    const result = await executePlan(planCells(matrix), { runsDir: tempDir() });
    const order = result.events.flatMap((e) => (e.type === 'cell-start' || e.type === 'cell-end' ? [`${e.type}:${e.cell}`] : []));
    expect(order).toEqual(['cell-start:a/sysinfo', 'cell-end:a/sysinfo', 'cell-start:a/cuda-graph', 'cell-end:a/cuda-graph']);
  });
});
