/**
 * The remote shell scripts are real .sh files: shellcheck reads every one (as POSIX sh: the
 * hosts' sh is dash or busybox), and what shellFile() sends is the script less its comments.
 * The WSL scripts stay one line each (wsl/scripts.ts: BOOT evaluates them word by word), and
 * shellcheck reads them decoded.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { hasCommand, integrationAvailable } from '../test/helpers.ts';
import { shellFile } from './shell-files.ts';
import * as slurm from './slurm/scripts.ts';
import * as wsl from './wsl/scripts.ts';

const scripts = readdirSync('transports', { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.sh'));
const shellcheck = integrationAvailable('shellcheck', hasCommand('shellcheck'), 'apt-get install shellcheck');

describe('the remote shell scripts', () => {
  it('are there (the SSH agent at least)', () => {
    expect(scripts).toContain('ssh/agent.sh');
  });

  it.runIf(shellcheck).each(scripts)('%s passes shellcheck as POSIX sh', (name) => {
    const result = spawnSync('shellcheck', ['--shell=sh', '--severity=info', `transports/${name}`], { encoding: 'utf8' });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it.each(scripts)('%s is sent without its comment and blank lines, and still parses', (name) => {
    const sent = shellFile(name);
    const source = readFileSync(`transports/${name}`, 'utf8');
    expect(sent.split('\n').filter((line) => /^\s*#/.test(line))).toEqual([]);
    expect(sent.length).toBeLessThan(source.length);
    // sh -n: read the script, run nothing.
    execFileSync('sh', ['-n', '-c', sent]);
  });
});

/** The WSL scripts, decoded: every export of wsl/scripts.ts that is base64 text. */
const wslScripts = Object.entries(wsl).filter((e): e is [string, string] => typeof e[1] === 'string' && /^[A-Za-z0-9+/]+=*$/.test(e[1]));

describe.runIf(shellcheck)('the WSL scripts, one line each', () => {
  it('are all found', () => {
    expect(wslScripts.map(([name]) => name)).toEqual(expect.arrayContaining(['AGENT', 'GUARD', 'GUARDIAN', 'INFO']));
  });

  // Left out: word splitting on purpose (kill -${1:-KILL}, $(wc -c <f) without its blanks) and
  // `read x x x p x` (the fields before PPid are not needed).
  it.each(wslScripts)('%s passes shellcheck as POSIX sh', (_, base64) => {
    const result = spawnSync('shellcheck', ['--shell=sh', '--severity=info', '--exclude=SC2086,SC2046,SC2034', '-'], {
      input: Buffer.from(base64, 'base64').toString('utf8'),
      encoding: 'utf8',
    });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});

/** The Slurm scripts (slurm/scripts.ts): sent as they are, `sh -c SCRIPT`; the lifeline is the agent's script. */
const slurmScripts = Object.entries(slurm).filter((e): e is [string, string] => typeof e[1] === 'string');

describe.runIf(shellcheck)('the Slurm scripts', () => {
  it('are all found', () => {
    expect(slurmScripts.map(([name]) => name)).toEqual(expect.arrayContaining(['LIFELINE', 'STEP']));
  });

  // Left out as for the WSL scripts: the agent is the same script.
  it.each(slurmScripts)('%s passes shellcheck as POSIX sh', (_, text) => {
    const result = spawnSync('shellcheck', ['--shell=sh', '--severity=info', '--exclude=SC2086,SC2046,SC2034', '-'], {
      input: text,
      encoding: 'utf8',
    });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
