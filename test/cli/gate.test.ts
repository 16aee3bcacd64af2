/** `cudamatrix gate` as CI runs it: the real CLI process against the committed H200 records. */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { H200_DIR, H200_RUNS, halvedBandwidthLog, noDriverLog } from '../record-fixture.ts';
import { runCli } from '../cli.ts';
import { tempDir } from '../helpers.ts';

const records = path.join(H200_DIR, '..');

function writeLog(text: string): string {
  const file = path.join(tempDir('cm-gate-'), 'events.jsonl');
  writeFileSync(file, text);
  return file;
}

/** A registry of one entry for every Linux driver from 580 on, about transfer-bandwidth. */
function registry(trust: string): string {
  const file = path.join(tempDir('cm-gate-'), 'known-bad.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'entries:',
      '  - id: test-pinned-copies',
      '    drivers:',
      '      - {os: linux, from: "580"}',
      '    symptom: Pinned copies lose a tenth of their bandwidth.',
      '    fixedIn: null',
      '    source: https://github.com/example/tracker/issues/1',
      `    trust: ${trust}`,
      '    concerns: [transfer-bandwidth]',
      '',
    ].join('\n'),
  );
  return file;
}

describe('cudamatrix gate', () => {
  it('--help gives each outcome and its exit status', async () => {
    const result = await runCli(['gate', '--help']);
    expect(result.code).toBe(0);
    for (const expected of [
      '<run>',
      '--records-dir <dir>',
      '--baseline <path>',
      '--json <file>',
      '--known-bad <file>',
      '0  pass',
      '1  changed',
      '7  known-bad',
      '8  inconclusive',
    ])
      expect(result.stdout).toContain(expected);
  });

  it('a committed run against the other records of its key: pass, with the JSON verdict', async () => {
    const out = path.join(tempDir('cm-gate-'), 'verdict.json');
    const result = await runCli(['gate', path.dirname(H200_RUNS[3]!), '--records-dir', records, '--json', out]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^local: PASS {2}linux · NVIDIA H200 · 580\.159\.04 · Ubuntu 24\.04\.3 LTS · in docker against driver 580\.159\.04 \(\d+ records in /,
    );
    expect(result.stdout).toContain('Gate: pass\n');
    const json = JSON.parse(readFileSync(out, 'utf8'));
    expect(json).toMatchObject({ schema: 'cudamatrix-gate/1', status: 'pass', healthy: true });
    expect(json.targets[0].baseline.records).toBeGreaterThanOrEqual(12);
    expect(json.targets[0].baseline.runs).toBeGreaterThanOrEqual(3);
  });

  it('the same run with pinned bandwidth halved: changed (exit 1), each series with its evidence', async () => {
    const result = await runCli(['gate', writeLog(halvedBandwidthLog()), '--records-dir', records, '--json', '-']);
    expect(result.code, result.stderr).toBe(1);
    const json = JSON.parse(result.stdout);
    expect(json.status).toBe('changed');
    const changed = json.targets[0].reasons.find((reason: { type: string }) => reason.type === 'BehaviourChanged');
    expect(changed.fails).toBe(true);
    expect(changed.evidence.metrics.length).toBeGreaterThanOrEqual(8);
    expect(changed.evidence.metrics.every((metric: { name: string }) => metric.name === 'transfer-bandwidth.bandwidth_gbps')).toBe(true);
    expect(result.stderr).toContain('Gate: changed');
  });

  it('a known-bad entry about a probe the run checked fails it (exit 7); a single report is said, not failed on', async () => {
    const run = path.dirname(H200_RUNS[3]!);
    const bad = await runCli(['gate', run, '--records-dir', records, '--known-bad', registry('multiple-reports')]);
    expect(bad.code, bad.stdout + bad.stderr).toBe(7);
    expect(bad.stdout).toContain(
      '  ✗ driver 580.159.04 is a known-bad driver: Pinned copies lose a tenth of their bandwidth. (linux, from 580 on; not fixed; source https://github.com/example/tracker/issues/1, multiple-reports)',
    );
    const lead = await runCli(['gate', run, '--records-dir', records, '--known-bad', registry('single-report')]);
    expect(lead.code, lead.stdout + lead.stderr).toBe(0);
    expect(lead.stdout).toContain(
      '(linux, from 580 on; not fixed; source https://github.com/example/tracker/issues/1, single-report): only one report says so, so it is said here and does not fail the gate',
    );
  });

  it('no record of the key to judge against: inconclusive (exit 8)', async () => {
    const result = await runCli(['gate', path.dirname(H200_RUNS[3]!), '--records-dir', tempDir('cm-gate-empty-')]);
    expect(result.code, result.stdout + result.stderr).toBe(8);
    expect(result.stdout).toContain('no record of linux · NVIDIA H200 · Ubuntu 24.04.3 LTS · in docker to judge against');
  });

  it('a run without a GPU observation is exit 4; a folder of records or a missing --records-dir is a usage error (exit 2)', async () => {
    const dir = tempDir('cm-gate-');
    const log = path.join(dir, 'events.jsonl');
    writeFileSync(log, noDriverLog());
    const none = await runCli(['gate', log, '--records-dir', records]);
    expect(none.code, none.stderr).toBe(4);
    expect(none.stderr).toContain('holds no observation of a GPU');
    const folder = await runCli(['gate', records, '--records-dir', records]);
    expect(folder.code).toBe(2);
    expect(folder.stderr).toContain('is a folder of records: the gate judges one run');
    const missing = await runCli(['gate', path.dirname(H200_RUNS[3]!), '--records-dir', path.join(dir, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`--records-dir ${path.join(dir, 'nope')} is not a folder`);
  });

  it('a changed run names what changed under its reason', async () => {
    const result = await runCli(['gate', writeLog(halvedBandwidthLog()), '--records-dir', records]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      / {6}transfer-bandwidth\.bandwidth_gbps \{direction: h2d, memory: pinned, size_bytes: \d+\} {2}[\d.]+ GB\/s → [\d.]+ GB\/s \(moved \d+\.\d %\)/,
    );
    expect(result.stdout).toContain('(cudamatrix diff of the baseline and the run lists each with its noise)');
  });
});
