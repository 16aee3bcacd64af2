/**
 * The capability facts (issue 36) decided by `cudaprobe judge PROBE` from hand-written logs of
 * shapes reported from machines we cannot reach (test/fixtures/capability/): the same code that
 * decides them at the end of a real run (probes/cudaprobe/capability.cpp).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, testCacheDir } from '../test/helpers.ts';
import { nodeArch } from '../transports/local.ts';
import { buildProbe, type ProbeBinary } from './build.ts';
import { parseProbeOutput, type FactRecord } from './protocol.ts';

let probe: ProbeBinary;
beforeAll(async () => {
  probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
}, 300_000);

const fixture = (name: string) => readFileSync(path.join(repoRoot, 'test', 'fixtures', 'capability', name), 'utf8');

function judge(name: string, log: string): Record<string, FactRecord> {
  const parsed = parseProbeOutput(log);
  expect(parsed.problems, 'the hand-written log is valid protocol').toEqual([]);
  const result = spawnSync(probe.path, ['judge', name], { input: log, encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  const out = parseProbeOutput(result.stdout);
  expect(out.problems).toEqual([]);
  return Object.fromEntries(out.records.filter((record): record is FactRecord => record.type === 'fact').map((fact) => [fact.name, fact]));
}

describe('host-register-flags on a Windows laptop whose driver refuses the Portable flag (the shape of ComfyUI#10781)', () => {
  it('reads Portable as claimed-but-fails, with the call and its error, and the others as their attributes say', () => {
    const facts = judge('host-register-flags', fixture('host-register-flags-wddm-portable-refused.jsonl'));
    expect(facts.portable).toMatchObject({
      value: 'claimed-but-fails',
      evidence: {
        claimed: true,
        attribute: 'CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED',
        attribute_value: 1,
        call: 'cuMemHostRegister',
        result: 'CUDA_ERROR_INVALID_VALUE',
        agrees: false,
      },
    });
    expect(facts.default).toMatchObject({ value: 'works', evidence: { agrees: true } });
    expect(facts.read_only).toMatchObject({ value: 'unsupported', evidence: { claimed: false, agrees: true } });
    // No attribute speaks for IoMemory on malloc memory: whether it "agrees" cannot be said.
    expect(facts.io_memory).toMatchObject({ value: 'unsupported', evidence: { claimed: null, attribute: null, agrees: null } });
  });

  it('reads a feature that works although its attribute denies it as works-unclaimed, and one not applicable as null', () => {
    const log = fixture('host-register-flags-wddm-portable-refused.jsonl')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { attrs: Record<string, unknown> })
      .map((sample) => {
        if (sample.attrs.feature === 'read_only')
          Object.assign(sample.attrs, { call: 'cuMemHostUnregister', result: 'CUDA_SUCCESS', works: true });
        if (sample.attrs.feature === 'io_memory') sample.attrs.not_applicable = 'not tried on this platform';
        return JSON.stringify(sample);
      })
      .join('\n');
    const facts = judge('host-register-flags', log);
    expect(facts.read_only).toMatchObject({ value: 'works-unclaimed', evidence: { claimed: false, agrees: false } });
    expect(facts.io_memory).toMatchObject({ value: null, reason: 'not tried on this platform' });
  });
});
