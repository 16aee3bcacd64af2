/**
 * The comparison of the p2p probe with its independent check and nvidia-smi topo -m, on outputs
 * written in the shapes both programs print (the GPU run itself is scripts/gpu-suite.ts --p2p).
 */
import { describe, expect, it } from 'vitest';
import { compareP2p, parseTopo } from './p2p-compare.ts';

const line = (fields: Record<string, unknown>) => JSON.stringify({ schema: 'cudaprobe/1', probe: 'p2p', ...fields });
const metric = (name: string, value: number, attrs: Record<string, unknown>) =>
  line({ type: 'metric', name, value, unit: name === 'wrong_bytes' ? 'bytes' : 'GB/s', attrs });

function probeOut(bw: Record<string, number>, wrong: Record<string, number> = {}, link = 'NV18'): string {
  const lines = [line({ type: 'fact', name: 'link_class', value: link, evidence: { '0-1': link } })];
  for (const [key, gbps] of Object.entries(bw)) {
    const [src, dst, peer] = key.split(':');
    const attrs = { src: Number(src), dst: Number(dst), peer: peer === 'on' };
    lines.push(metric('bandwidth_gbps', gbps, { ...attrs, size_bytes: 268435456 }), metric('wrong_bytes', wrong[key] ?? 0, attrs));
  }
  return `${lines.join('\n')}\n`;
}

const checkOut = (rows: [number, number, boolean, number, boolean][]) =>
  `${JSON.stringify({ device_count: 2 })}\n${rows.map(([src, dst, peer, gbps, intact]) => JSON.stringify({ src, dst, peer, gbps, intact })).join('\n')}\n`;

const topo = `\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\t0-47\t0\t\tN/A
GPU1\tNV18\t X \t0-47\t0\t\tN/A

Legend:
  X    = Self
`;

describe('p2p probe against its independent check', () => {
  const bw = { '0:1:off': 40, '1:0:off': 41, '0:1:on': 380, '1:0:on': 382 };

  it("agrees when every bandwidth is within 10 %, both found the copies intact, and the link class is nvidia-smi's", () => {
    const comparison = compareP2p(
      probeOut(bw),
      checkOut([
        [0, 1, false, 42, true],
        [1, 0, false, 40, true],
        [0, 1, true, 370, true],
        [1, 0, true, 390, true],
      ]),
      topo,
    );
    expect(comparison.problems).toEqual([]);
    expect(comparison.rows).toHaveLength(4);
    expect(comparison.rows[2]).toMatchObject({
      src: 0,
      dst: 1,
      peer: true,
      probeGbps: 380,
      checkGbps: 370,
      probeIntact: true,
      checkIntact: true,
      agrees: true,
    });
    expect(comparison.links).toEqual({ '0-1': { probe: 'NV18', smi: 'NV18' } });
    expect(comparison.agrees).toBe(true);
  });

  it('disagrees on a bandwidth 20 % off, on a copy one side found corrupt, and on another link class', () => {
    const slow = compareP2p(probeOut(bw), checkOut([[0, 1, true, 475, true]]), topo);
    expect(slow.rows[0]!.agrees).toBe(false);
    expect(slow.agrees).toBe(false);
    const corrupt = compareP2p(probeOut(bw, { '0:1:on': 4096 }), checkOut([[0, 1, true, 380, true]]), topo);
    expect(corrupt.rows[0]).toMatchObject({ probeIntact: false, checkIntact: true, agrees: false });
    const link = compareP2p(probeOut(bw, {}, 'PHB'), checkOut([[0, 1, true, 380, true]]), topo);
    expect(link.links['0-1']).toEqual({ probe: 'PHB', smi: 'NV18' });
    expect(link.agrees).toBe(false);
  });

  it("reports the check's errors and a run where nothing was measured", () => {
    const comparison = compareP2p('', `${JSON.stringify({ src: -1, dst: -1, error: 'cudaGetDeviceCount: cudaErrorNoDevice' })}\n`);
    expect(comparison.problems).toEqual(['p2p-check -1 to -1: cudaGetDeviceCount: cudaErrorNoDevice', 'no pair was measured by both']);
    expect(comparison.agrees).toBe(false);
  });

  it('reads the GPU cells of a four-GPU nvidia-smi topo -m with NICs beside them', () => {
    const four = `\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity
GPU0\t X \tNV6\tNV6\tPIX\tSYS\t0-15
GPU1\tNV6\t X \tNV6\tNV6\tSYS\t0-15
GPU2\tNV6\tNV6\t X \tNV6\tSYS\t0-15
GPU3\tPIX\tNV6\tNV6\t X \tSYS\t0-15
NIC0\tSYS\tSYS\tSYS\tSYS\t X \t
`;
    expect(parseTopo(four)).toEqual({ '0-1': 'NV6', '0-2': 'NV6', '0-3': 'PIX', '1-2': 'NV6', '1-3': 'NV6', '2-3': 'NV6' });
  });
});
