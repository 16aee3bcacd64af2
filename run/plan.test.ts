import { describe, expect, it } from 'vitest';
import { CudamatrixError } from '../core/errors.ts';
import { parseMatrix } from '../matrix/load.ts';
import { parseShard, planCells } from './plan.ts';

const matrix = parseMatrix(
  [
    'version: 1',
    'defaults: {probes: [sysinfo]}',
    'targets:',
    ...['lab-a', 'lab-b', 'ci-1', 'ci-2', 'ci-3'].map((targetName) => `  - name: ${targetName}`),
  ].join('\n'),
  'plan.yaml',
);

describe('planner', () => {
  it('names cells target/probe in matrix order', () => {
    const plan = planCells(matrix);
    expect(plan.cells.map((cell) => cell.name)).toEqual(['lab-a/sysinfo', 'lab-b/sysinfo', 'ci-1/sysinfo', 'ci-2/sysinfo', 'ci-3/sysinfo']);
  });

  it('filters targets and probes with globs, repeatable or comma-separated', () => {
    expect(planCells(matrix, { targets: ['lab-*'] }).cells.map((cell) => cell.target)).toEqual(['lab-a', 'lab-b']);
    expect(planCells(matrix, { targets: ['ci-[12]', 'lab-b'] }).cells.map((cell) => cell.target)).toEqual(['lab-b', 'ci-1', 'ci-2']);
    expect(planCells(matrix, { targets: ['lab-a,ci-3'] }).cells.map((cell) => cell.target)).toEqual(['lab-a', 'ci-3']);
    expect(planCells(matrix, { probes: ['sys*'] }).cells).toHaveLength(5);
    const all = parseMatrix('version: 1\ntargets:\n  - name: a\n', 'all.yaml');
    expect(planCells(all, { probes: ['pinned-*'] }).cells.map((cell) => cell.probe)).toEqual([
      'pinned-vram',
      'pinned-release',
      'pinned-ceiling',
    ]);
  });

  it('leaves opt-in probes out of "probes: all" and runs one only where the matrix or --probe names it exactly (issue 24)', () => {
    const all = parseMatrix('version: 1\ntargets:\n  - name: a\n', 'all.yaml');
    const probes = (options = {}) => planCells(all, options).cells.map((cell) => cell.probe);
    expect(probes()).not.toContain('alloc-ceiling');
    expect(probes({ probes: ['*'] })).not.toContain('sysmem-fallback');
    expect(() => probes({ probes: ['alloc-*'] })).toThrow('alloc-ceiling is opt-in: name it exactly (--probe alloc-ceiling)');
    expect(probes({ probes: ['sysinfo,alloc-ceiling'] })).toEqual(['sysinfo', 'alloc-ceiling']);
    expect(planCells(all, { probes: ['alloc-ceiling'] }).warnings).toEqual([]);
    // Named in the matrix, with its parameters: in catalogue order, after the others.
    const named = parseMatrix(
      'version: 1\ndefaults: {probes: [sysmem-fallback, sysinfo], params: {sysmem-fallback: {max_gib: 4}}}\ntargets:\n  - name: a\n',
      'named.yaml',
    );
    expect(planCells(named).cells.map((cell) => cell.probe)).toEqual(['sysinfo', 'sysmem-fallback']);
    expect(named.targets[0]!.params['sysmem-fallback']).toEqual({ max_gib: 4 });
    // Its parameters in the matrix also reach a run that opts in with --probe.
    const params = parseMatrix('version: 1\ndefaults: {params: {alloc-ceiling: {max_gib: 2}}}\ntargets:\n  - name: a\n', 'params.yaml');
    expect(params.targets[0]!.probes).not.toContain('alloc-ceiling');
    expect(params.targets[0]!.params['alloc-ceiling']).toEqual({ max_gib: 2 });
  });

  it('suggests the name a pattern that matches nothing was probably meant to be (issue 20)', () => {
    const all = parseMatrix('version: 1\ntargets:\n  - name: gpu-box\n', 'all.yaml');
    expect(() => planCells(all, { probes: ['pinnedvram'] })).toThrow(
      '--probe pinnedvram ("pinnedvram" matches no probe (did you mean "pinned-vram"?))',
    );
    expect(() => planCells(all, { targets: ['gpubox'] })).toThrow('"gpubox" matches no target (did you mean "gpu-box"?)');
    // A typo among good patterns is said, not fatal: the good ones run.
    const plan = planCells(all, { probes: ['sysinfo,cudagraph', 'pinned-*'] });
    expect(plan.cells.map((cell) => cell.probe)).toContain('sysinfo');
    expect(plan.warnings).toEqual(['--probe "cudagraph" matches no probe (did you mean "cuda-graph"?)']);
    expect(planCells(all, { probes: ['sysinfo', 'nothing-like-it'] }).warnings).toEqual(['--probe "nothing-like-it" matches no probe']);
    expect(planCells(all).warnings).toEqual([]);
  });

  it('says what exists when nothing matches', () => {
    expect(() => planCells(matrix, { targets: ['prod-*'] })).toThrow(/no cell .* matches --target prod-\*; targets: lab-a, lab-b/);
    try {
      planCells(matrix, { probes: ['nope'] });
    } catch (e) {
      expect((e as CudamatrixError).code).toBe('NO_CELLS');
    }
  });

  it('shards whole hosts: every cell of a target, and every target of a host, in one shard (defect 5)', () => {
    // One local target with every probe: before, --shard 1/3 and 2/3 each held part of it, so
    // every shard reconnected, re-ran sysinfo, and parallel CI jobs measured one GPU at once.
    const one = parseMatrix('version: 1\ntargets:\n  - name: gpu\n', 'one.yaml');
    const parts = [1, 2, 3].map((i) => planCells(one, { shard: `${i}/3` }).cells.map((cell) => cell.name));
    expect(parts.filter((shard) => shard.length > 0)).toHaveLength(1);
    expect(parts.flat()).toEqual(planCells(one).cells.map((cell) => cell.name));
  });

  it('keeps the targets of one host together, and splits hosts disjointly, completely and deterministically', () => {
    const hosts = parseMatrix(
      [
        'version: 1',
        'defaults: {probes: [sysinfo, sync-latency]}',
        'targets:',
        '  - {name: a1, transport: {kind: ssh, host: node-a}}',
        '  - {name: b1, transport: {kind: ssh, host: node-b}}',
        '  - {name: a2, transport: {kind: ssh, host: node-a}}',
        '  - {name: c1, transport: {kind: ssh, host: node-c}}',
        '  - {name: here}',
        '  - {name: b2, transport: {kind: ssh, host: node-b}}',
      ].join('\n'),
      'hosts.yaml',
    );
    for (const total of [1, 2, 3, 4, 7]) {
      const parts = Array.from({ length: total }, (_, i) =>
        planCells(hosts, { shard: `${i + 1}/${total}` }).cells.map((cell) => cell.name),
      );
      expect(parts.flat().sort()).toEqual(
        planCells(hosts)
          .cells.map((cell) => cell.name)
          .sort(),
      );
      expect(new Set(parts.flat()).size).toBe(parts.flat().length);
      // a1 and a2 (node-a) are never apart, nor b1 and b2.
      for (const [target, sibling] of [
        ['a1', 'a2'],
        ['b1', 'b2'],
      ]) {
        const at = (targetName: string) => parts.findIndex((shard) => shard.some((cellName) => cellName.startsWith(`${targetName}/`)));
        expect(at(target!)).toBe(at(sibling!));
      }
      // The same inputs always give the same split.
      expect(parts).toEqual(
        Array.from({ length: total }, (_, i) => planCells(hosts, { shard: `${i + 1}/${total}` }).cells.map((cell) => cell.name)),
      );
    }
    // Four hosts (node-a x2, node-b x2, node-c, local) in four shards: one host each.
    const four = [1, 2, 3, 4].map((i) => new Set(planCells(hosts, { shard: `${i}/4` }).targets.map((target) => target.name)));
    expect(four.map((shardTargets) => [...shardTargets].sort().join(',')).sort()).toEqual(['a1,a2', 'b1,b2', 'c1', 'here']);
  });

  it('balances shards by the typical duration of their cells, not by their number', () => {
    // One target with pinned-vram (about 17 s on the H200) weighs more than four with sysinfo.
    const weighted = parseMatrix(
      [
        'version: 1',
        'targets:',
        '  - {name: heavy, probes: [pinned-vram], transport: {kind: ssh, host: h0}}',
        ...[1, 2, 3, 4].map((i) => `  - {name: light${i}, probes: [sysinfo], transport: {kind: ssh, host: h${i}}}`),
      ].join('\n'),
      'weights.yaml',
    );
    const first = planCells(weighted, { shard: '1/2' }).targets.map((target) => target.name);
    const second = planCells(weighted, { shard: '2/2' }).targets.map((target) => target.name);
    expect(first).toEqual(['heavy']);
    expect(second).toEqual(['light1', 'light2', 'light3', 'light4']);
  });

  it.each(['0/2', '3/2', '1/0', 'a/b', '1-2', ''])('refuses --shard %j', (text) => {
    expect(() => parseShard(text)).toThrow(CudamatrixError);
  });
});
