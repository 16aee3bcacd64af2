/**
 * bench/capability-check's comparison on hand-written outputs of both sides: cudaprobe's fact
 * lines as the capability probes print them, and the peer's JSON as bench/capability_peer.py
 * prints it (the GPU run itself is scripts/gpu-suite.ts --capability-checks).
 */
import { describe, expect, it } from 'vitest';
import { parseProbeOutput } from '../probes/protocol.ts';
import { compareCapabilities, compareFact, comparedFeatures, comparisonsFail, peerFacts, probeFacts } from './capability-compare.ts';

const line = (probe: string, fields: Record<string, unknown>) => JSON.stringify({ schema: 'cudaprobe/1', probe, ...fields });
const capability = (probe: string, name: string, value: string, claimed: boolean | null, attributeValue: number | null) =>
  line(probe, {
    type: 'fact',
    name,
    value,
    evidence: { claimed, attribute: 'CU_DEVICE_ATTRIBUTE_X', attribute_value: attributeValue, call: 'cuMemCreate', result: 'CUDA_SUCCESS' },
  });
const nullFact = (probe: string, name: string, reason: string) => line(probe, { type: 'fact', name, value: null, reason });
const records = (...lines: string[]) => parseProbeOutput(`${lines.join('\n')}\n`).records;

describe('the capability comparison', () => {
  it('lists every capability fact of the four probes from the catalogue, then the C33 and C34 facts', () => {
    const features = comparedFeatures();
    expect(features).toContain('host-register-flags.portable');
    expect(features).toContain('memory-pools.pool_posix_fd');
    expect(features).toContain('virtual-memory.vmm_grow');
    expect(features).toContain('ipc-handles.legacy_ipc');
    expect(features.slice(-4)).toEqual([
      'pinned-ceiling.failure_poisons',
      'p2p.iommu_mode',
      'p2p.acs_redirect',
      'p2p.peer_override_variables',
    ]);
    expect(new Set(features).size).toBe(features.length);
  });

  it('reads value, claimed, attribute_value and a null fact’s reason from cudaprobe’s lines', () => {
    const facts = probeFacts(
      'memory-pools',
      records(
        capability('memory-pools', 'pool_posix_fd', 'claimed-but-fails', true, 9),
        nullFact('memory-pools', 'pool_win32', 'a Win32 handle is for Windows'),
      ),
    );
    expect(facts['memory-pools.pool_posix_fd']).toMatchObject({ value: 'claimed-but-fails', claimed: true, attribute_value: 9 });
    expect(facts['memory-pools.pool_win32']).toEqual({ value: null, reason: 'a Win32 handle is for Windows' });
  });

  it('agrees when value, claimed and attribute_value are equal', () => {
    const probe = probeFacts('ipc-handles', records(capability('ipc-handles', 'posix_fd', 'works', true, 1)));
    const row = compareFact(
      'ipc-handles.posix_fd',
      probe['ipc-handles.posix_fd'],
      { value: 'works', claimed: true, attribute_value: 1 },
      true,
    );
    expect(row).toMatchObject({ status: 'agree', why: '' });
  });

  it('disagrees on the value, and names each field that differs', () => {
    const probe = { value: 'works', claimed: true, attribute_value: 9 };
    expect(
      compareFact('memory-pools.pool_posix_fd', probe, { value: 'claimed-but-fails', claimed: true, attribute_value: 9 }, true),
    ).toMatchObject({ status: 'disagree', why: 'value: cudaprobe "works", peer "claimed-but-fails"' });
    const row = compareFact('memory-pools.pool_posix_fd', probe, { value: 'works', claimed: false, attribute_value: 8 }, true);
    expect(row.status).toBe('disagree');
    expect(row.why).toBe('claimed: cudaprobe true, peer false; attribute_value: cudaprobe 9, peer 8');
  });

  it('does not compare claimed for facts that are not capability facts, nor the order of the override variables', () => {
    expect(compareFact('p2p.acs_redirect', { value: false }, { value: false, claimed: true }, false).status).toBe('agree');
    expect(compareFact('p2p.acs_redirect', { value: false }, { value: true }, false).status).toBe('disagree');
    expect(
      compareFact('p2p.peer_override_variables', { value: 'NCCL_P2P_LEVEL,CUDA_PEER_X' }, { value: 'CUDA_PEER_X,NCCL_P2P_LEVEL' }, false)
        .status,
    ).toBe('agree');
    expect(compareFact('p2p.peer_override_variables', { value: 'none' }, { value: 'NCCL_P2P_DISABLE' }, false).status).toBe('disagree');
  });

  it('does not compare a fact null on either side, and says whose null and why', () => {
    const row = compareFact(
      'pinned-ceiling.failure_poisons',
      { value: null, reason: 'no pin failed before the safety cap' },
      { value: true },
      false,
    );
    expect(row.status).toBe('not compared');
    expect(row.why).toBe('cudaprobe: null (no pin failed before the safety cap)');
    expect(
      compareFact('ipc-handles.win32', { value: 'unsupported', claimed: false }, { value: null, reason: 'Windows only' }, true).why,
    ).toBe('peer: null (Windows only)');
  });

  it('calls a fact one side lacks missing, and fails the run for it as for a disagreement, not for not compared', () => {
    const row = compareFact('virtual-memory.vmm', undefined, { value: 'works' }, true);
    expect(row).toMatchObject({ status: 'missing', why: 'cudaprobe did not report it' });
    expect(comparisonsFail([row])).toBe(true);
    expect(comparisonsFail([compareFact('p2p.iommu_mode', { value: null, reason: 'x' }, { value: 'DMA' }, false)])).toBe(false);
  });

  it('compares a whole run: every feature once, in order, with the peer’s features and iommu merged', () => {
    const features = comparedFeatures();
    const probe = Object.fromEntries(features.map((feature) => [feature, { value: 'works', claimed: true, attribute_value: 1 }]));
    const peer = peerFacts({
      features: Object.fromEntries(
        features
          .filter((feature) => !feature.startsWith('p2p.'))
          .map((feature) => [feature, { value: 'works', claimed: true, attribute_value: 1 }]),
      ),
      iommu: { 'p2p.iommu_mode': { value: 'works' }, 'p2p.acs_redirect': { value: 'works' } },
    });
    peer['virtual-memory.vmm'] = { value: 'claimed-but-fails', claimed: true, attribute_value: 1 };
    const rows = compareCapabilities(probe, peer);
    expect(rows.map((row) => row.feature)).toEqual(features);
    const byStatus = (status: string) => rows.filter((row) => row.status === status).map((row) => row.feature);
    expect(byStatus('disagree')).toEqual(['virtual-memory.vmm']);
    expect(byStatus('missing')).toEqual(['p2p.peer_override_variables']);
    expect(byStatus('agree')).toHaveLength(features.length - 2);
  });
});
