/**
 * Nodes that differ from the rest of their fan-out (verdicts/fleet-outliers.ts), from event logs as a
 * fanned-out slurm run writes them (targets NAME@NODE, sessions "slurm job N on NODE").
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../events/events.ts';
import type { ProbeRecord } from '../probes/protocol.ts';
import { cell, runEnd, runStart, sysinfo, targetStart } from '../test/events-fixture.ts';
import { nodesThatDiffer, nodesThatDifferLines } from './fleet-outliers.ts';
import { summarize } from './verdicts.ts';

const fact = (name: string, value: boolean): ProbeRecord =>
  ({ schema: 'cudaprobe/1', type: 'fact', probe: 'pinned-vram', name, value }) as ProbeRecord;
const metric = (name: string, value: number): ProbeRecord =>
  ({ schema: 'cudaprobe/1', type: 'metric', probe: 'sync-latency', name, value, unit: 'us' }) as ProbeRecord;

function node(name: string, jobId: number, info: Record<string, string>, records: ProbeRecord[] = []): RunEvent[] {
  const target = `gpu@${name}`;
  return [
    targetStart(target),
    {
      type: 'target-ready',
      target,
      time: '2026-11-29T12:00:00.500Z',
      session: `slurm job ${jobId} on ${name}`,
      platform: 'linux',
      arch: 'x86_64',
      probe: { hash: 'h', built: true },
    },
    cell(target, 'sysinfo', 'passed', sysinfo({ gpu_uuid: `GPU-${name}`, ...info })),
    cell(
      target,
      'pinned-vram',
      'passed',
      records.filter((record) => record.type === 'fact'),
    ),
    cell(
      target,
      'sync-latency',
      'passed',
      records.filter((record) => record.type === 'metric'),
    ),
  ];
}

const summaryOf = (...nodes: RunEvent[][]) => summarize([runStart(), ...nodes.flat(), runEnd]);

describe('nodes that differ from the rest of their fan-out', () => {
  it("names the node whose driver, fact or metric is not the others', and not what differs by nature (UUIDs)", () => {
    const summary = summaryOf(
      node('n1', 1, { driver_version: '550.90' }, [fact('counts_as_vram', false), metric('p50_us', 10)]),
      node('n2', 2, { driver_version: '550.90' }, [fact('counts_as_vram', false), metric('p50_us', 11)]),
      node('n3', 3, { driver_version: '550.54' }, [fact('counts_as_vram', true), metric('p50_us', 30)]),
      node('n4', 4, { driver_version: '550.90' }, [fact('counts_as_vram', false), metric('p50_us', 10.5)]),
    );
    expect(nodesThatDiffer(summary)).toEqual([
      { group: 'gpu', node: 'n3', what: 'sysinfo driver_version', value: '550.54', others: '550.90 (3 nodes)' },
      { group: 'gpu', node: 'n3', what: 'fact pinned-vram.counts_as_vram', value: 'true', others: 'false (3 nodes)' },
      { group: 'gpu', node: 'n3', what: 'metric sync-latency.p50_us', value: '30 us', others: 'median 10.5 us of the other 3' },
    ]);
    expect(nodesThatDifferLines(summary)[0]).toBe('Nodes that differ from the rest of gpu: n3');
  });

  it('two nodes that disagree: both named; nodes that agree, or metrics within noise: nothing', () => {
    const two = summaryOf(node('n1', 1, { driver_version: '550.90' }), node('n2', 2, { driver_version: '550.54' }));
    expect(nodesThatDiffer(two).map((difference) => `${difference.node} ${difference.value} / ${difference.others}`)).toEqual([
      'n1 550.90 / 550.54 (1 node)',
      'n2 550.54 / 550.90 (1 node)',
    ]);
    const same = summaryOf(
      node('n1', 1, { driver_version: '550.90' }, [metric('p50_us', 10)]),
      node('n2', 2, { driver_version: '550.90' }, [metric('p50_us', 12)]),
      node('n3', 3, { driver_version: '550.90' }, [metric('p50_us', 11)]),
    );
    expect(nodesThatDifferLines(same)).toEqual([]);
  });
});
