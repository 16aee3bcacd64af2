/**
 * The registry answers for each kind what the rest of cudamatrix asks, from hops as the matrix
 * loader parsed them; and the secrets a matrix names are masked under GitHub Actions.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseMatrix } from '../matrix/load.ts';
import { runCli } from '../test/cli.ts';
import { tempDir } from '../test/helpers.ts';
import { asksForNoGpu, fixAt, noGpuAsked, hostKeyOf, machineOf, reachedWords, secretEnvsOf } from './registry.ts';

const hopsOf = (transport: string) =>
  parseMatrix(`version: 1\ntargets:\n  - {name: t, transport: ${transport}}\n`, 'm.yaml', { checkFiles: false }).targets[0]!.hops;

describe('the registry asks the kinds', () => {
  it('which machine a chain measures: the last hop that names another one', () => {
    expect(machineOf(hopsOf('local'))).toBeUndefined();
    expect(machineOf(hopsOf('{kind: wsl}'))).toBeUndefined();
    expect(machineOf(hopsOf('{kind: ssh, host: gpu1.lab, user: ci, port: 2222, sshConfig: false}'))).toBe('ssh:ci@gpu1.lab:2222');
    expect(machineOf(hopsOf('[{kind: ssh, host: gpu1.lab, user: ci, sshConfig: false}, {kind: wsl}]'))).toBe('ssh:ci@gpu1.lab:22');
    expect(
      machineOf(hopsOf('[{kind: ssh, host: gpu1.lab, user: ci, sshConfig: false}, {kind: docker, endpoint: "tcp://gpu2.lab:2376"}]')),
    ).toBe('docker:tcp://gpu2.lab:2376');
    // The scheduling host key stays what it was: the first hop's.
    expect(
      hostKeyOf(hopsOf('[{kind: ssh, host: gpu1.lab, user: ci, sshConfig: false}, {kind: docker, endpoint: "tcp://gpu2.lab:2376"}]')),
    ).toBe('ssh:ci@gpu1.lab:22');
  });

  it('which variables hold secrets, whether no GPU is asked for, and what doctor says', () => {
    const chain = hopsOf('[{kind: ssh, host: a, passphraseEnv: LAB_KEY_PASS}, {kind: docker, gpus: none}]');
    expect(secretEnvsOf(chain)).toEqual(['LAB_KEY_PASS']);
    expect(secretEnvsOf(hopsOf('{kind: ssh, host: a}'))).toEqual([]);
    expect(asksForNoGpu(chain)).toBe(true);
    expect(asksForNoGpu(hopsOf('{kind: docker}'))).toBe(false);
    expect(asksForNoGpu(hopsOf('{kind: slurm, gres: none}'))).toBe(true);
    expect(noGpuAsked(hopsOf('{kind: slurm, gres: none}'))).toBe('gres: none');
    expect(noGpuAsked(chain)).toBe('gpus: none');
    expect(asksForNoGpu(hopsOf('{kind: slurm}'))).toBe(false);
    expect(asksForNoGpu(hopsOf('[{kind: docker, gpus: none}, {kind: wsl}]'))).toBe(false);
    expect(chain.map(reachedWords)).toEqual(['host key verified, authenticated', 'engine reached, container started']);
    expect(fixAt(chain[0], 'AUTH_FAILED')).toMatch(/authorized_keys/);
    expect(fixAt(chain[1], 'AUTH_FAILED')).toBeUndefined();
    expect(fixAt(chain[1], 'TARGET_UNREACHABLE')).toMatch(/^check the endpoint/);
  });
});

describe('secrets the kinds name', () => {
  it('are masked under GitHub Actions before anything prints (SSH passphraseEnv)', async () => {
    const dir = tempDir('cm-secret-env-');
    const matrix = path.join(dir, 'm.yaml');
    writeFileSync(
      matrix,
      'version: 1\ntargets:\n  - {name: far, transport: {kind: ssh, host: far.example, passphraseEnv: LAB_KEY_PASS}}\n',
    );
    const summary = path.join(dir, 'summary.md');
    writeFileSync(summary, '');
    const result = await runCli(['gha', 'matrix', '-m', matrix], {
      env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summary, GITHUB_OUTPUT: path.join(dir, 'out'), LAB_KEY_PASS: 'pass-phrase-4711' },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('::add-mask::pass-phrase-4711');
    expect(result.stdout).not.toContain('pass-phrase-4711');
  });
});
