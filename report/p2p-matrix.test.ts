/**
 * The report's peer-access matrix per column, on the committed H200 record (one GPU: no matrix)
 * and on a copy of it given the p2p records of a two-GPU machine in the shapes the probe emits.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { h200Records, loaded } from '../test/report-fixture.ts';
import type { BehaviourRecord } from '../behaviour/behaviour-record.ts';
import { renderMarkdown } from './markdown.ts';
import { p2pMatrices } from './p2p-matrix.ts';
import { buildTable } from './behaviour-table.ts';

const paths = { recordsLink: 'records', recordsDirName: 'records' };
let h200: BehaviourRecord;
beforeAll(async () => {
  [h200] = await h200Records();
});

/** The H200 record as if it had two GPUs joined by 18 NVLinks, `wrong` bytes arriving wrong from 1 to 0 with peer access. */
function twoGpus(wrong = 0): BehaviourRecord {
  const record = structuredClone(h200);
  record.facts['p2p.link_class'] = { value: 'NV18', evidence: { '0-1': 'NV18' } };
  record.cells.push({ probe: 'p2p', status: 'passed' });
  for (const [src, dst] of [
    [0, 1],
    [1, 0],
  ] as const) {
    for (const peer of [true, false]) {
      const attrs = { src, dst, peer, size_bytes: 256 * 1024 ** 2 };
      record.metrics.push({ name: 'p2p.bandwidth_gbps', value: peer ? 380 + src : 40 + src, unit: 'GB/s', attrs });
      record.metrics.push({ name: 'p2p.wrong_bytes', value: peer && src === 1 ? wrong : 0, unit: 'bytes', attrs });
    }
  }
  return record;
}

describe('the peer-access matrix of the report', () => {
  it('has none for a record without p2p pairs (the one-GPU H200)', () => {
    const records = loaded([h200]);
    expect(p2pMatrices(buildTable(records).columns)).toEqual([]);
    expect(renderMarkdown(records, paths)).not.toContain('## Peer access between GPUs');
  });

  it('shows each pair both ways: its link, bandwidth with and without peer access, and whether the copies arrived intact', () => {
    const [matrix] = p2pMatrices(buildTable(loaded([twoGpus()])).columns);
    expect(matrix!.devices).toEqual([0, 1]);
    expect(matrix!.cells['1-0']).toEqual({ link: 'NV18', onGbps: 381, offGbps: 41, wrongOn: 0, wrongOff: 0 });
    const md = renderMarkdown(loaded([twoGpus(4096)]), paths);
    const section = md.slice(md.indexOf('## Peer access between GPUs'), md.indexOf('## Conflicts'));
    expect(section).toContain('| from (row) to (column) | GPU 0 | GPU 1 |');
    expect(section).toContain('| GPU 0 | X | NV18: 380 GB/s with peer access, 40 GB/s without; intact |');
    expect(section).toMatch(/\| GPU 1 \| NV18: 381 GB\/s with peer access, 41 GB\/s without; 4(\.0)? KiB wrong \| X \|/);
  });
});
