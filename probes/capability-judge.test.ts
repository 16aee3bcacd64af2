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

describe('cudaprobe judge refuses what it cannot judge, and reads a run’s events.jsonl too', () => {
  const raw = (name: string, input: string) => spawnSync(probe.path, ['judge', name], { input, encoding: 'utf8' });
  const log = () => fixture('host-register-flags-wddm-portable-refused.jsonl');

  it('says so, with exit 2, when stdin holds nothing of the probe (empty, garbage, another probe’s lines)', () => {
    for (const [input, name] of [
      ['', 'host-register-flags'],
      ['garbage\n', 'host-register-flags'],
      [log(), 'memory-pools'],
    ] as const) {
      const result = raw(name, input);
      expect(result.status, `${name} <<< ${input.slice(0, 20)}`).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(`judge ${name}: nothing to judge`);
    }
  });

  it('refuses an attempt without its feature or result, and decides works from the result, not the flag', () => {
    const line = (attrs: Record<string, unknown>) =>
      JSON.stringify({ schema: 'cudaprobe/1', type: 'sample', probe: 'host-register-flags', phase: 'attempt', readings: {}, attrs });
    const noFeature = raw('host-register-flags', line({ call: 'cuMemHostRegister', result: 'CUDA_SUCCESS' }));
    expect(noFeature.status).toBe(2);
    expect(noFeature.stderr).toContain('needs attrs.feature, attrs.call and attrs.result');
    const contradicts = raw(
      'host-register-flags',
      line({
        feature: 'portable',
        attribute: 'X',
        claimed: true,
        call: 'cuMemHostRegister',
        result: 'CUDA_ERROR_INVALID_VALUE',
        works: true,
      }),
    );
    expect(contradicts.status).toBe(0);
    expect(JSON.parse(contradicts.stdout)).toMatchObject({ name: 'portable', value: 'claimed-but-fails' });
  });

  it('reads the probe’s lines out of a run’s events.jsonl (its cell-end events)', () => {
    const records = log()
      .split('\n')
      .filter(Boolean)
      .map((text) => JSON.parse(text) as unknown);
    const events = [
      JSON.stringify({ type: 'cell-start', cell: 'local/host-register-flags' }),
      JSON.stringify({ type: 'cell-end', cell: 'local/host-register-flags', probe: 'host-register-flags', records }),
    ].join('\n');
    const result = raw('host-register-flags', events);
    expect(result.status).toBe(0);
    const facts = parseProbeOutput(result.stdout).records.filter((record): record is FactRecord => record.type === 'fact');
    expect(facts.find((fact) => fact.name === 'portable')).toMatchObject({ value: 'claimed-but-fails' });
    expect(facts.map((fact) => fact.name).sort()).toEqual(['default', 'io_memory', 'mapped', 'portable', 'read_only']);
  });
});
