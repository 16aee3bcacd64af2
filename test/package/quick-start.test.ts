/**
 * The commands the quick start gives work as written (issue 20, defect 7): in a checkout,
 * `pnpm -s cudamatrix ... --json` prints only the JSON on stdout (without -s, pnpm prints its
 * "> cudamatrix@0.1.0 ..." banner there), and `npm link` puts a working cudamatrix on PATH,
 * which runs the sources through tsx (no bundle) from any folder. The link goes to a prefix of
 * the test's own, so nothing global is touched; npm link writes nothing in the checkout.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { repoRoot, tempDir } from '../helpers.ts';

const version = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
const hasNpm = (() => {
  try {
    execFileSync('npm', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe('the quick start in a checkout', () => {
  it('pnpm -s cudamatrix ... --json gives stdout that is only the JSON; without -s pnpm puts its banner there', async () => {
    const silent = await execa('pnpm', ['-s', 'cudamatrix', 'plan', '--json'], { cwd: repoRoot, reject: false });
    expect(silent.exitCode, silent.stderr).toBe(0);
    expect(JSON.parse(silent.stdout)).toMatchObject({ cells: expect.arrayContaining([expect.objectContaining({ probe: 'sysinfo' })]) });
    // Why the docs say -s: the banner pnpm prints otherwise is what broke `| jq`.
    const loud = await execa('pnpm', ['cudamatrix', 'plan', '--json'], { cwd: repoRoot, reject: false });
    expect(loud.stdout).toContain(`> cudamatrix@${version} cudamatrix`);
    // A failure keeps its exit status and its message through pnpm -s.
    const failed = await execa('pnpm', ['-s', 'cudamatrix', 'plan', '-p', 'pinnedvram'], { cwd: repoRoot, reject: false });
    expect(failed.exitCode).toBe(2);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toContain('did you mean "pinned-vram"?');
  });

  it.runIf(hasNpm)('npm link puts a cudamatrix on PATH that runs from another folder', async () => {
    const prefix = tempDir('cm-npm-prefix-');
    const env = { NPM_CONFIG_PREFIX: prefix, NPM_CONFIG_CACHE: path.join(prefix, 'cache'), NPM_CONFIG_UPDATE_NOTIFIER: 'false' };
    // npm wants the prefix's lib folder to exist (it does under a real global prefix).
    for (const subdir of ['lib', 'bin']) mkdirSync(path.join(prefix, subdir));
    const link = await execa('npm', ['link', '--offline', '--no-audit', '--no-fund'], { cwd: repoRoot, env, reject: false });
    expect(link.exitCode, link.stderr).toBe(0);
    const bin = path.join(prefix, 'bin', 'cudamatrix');
    expect(existsSync(bin)).toBe(true);
    const elsewhere = tempDir();
    const PATH = `${path.join(prefix, 'bin')}${path.delimiter}${process.env.PATH}`;
    const versionRun = await execa('cudamatrix', ['--version'], { cwd: elsewhere, env: { PATH }, reject: false });
    expect(versionRun.exitCode, versionRun.stderr).toBe(0);
    expect(versionRun.stdout.trim()).toBe(version);
    const plan = await execa('cudamatrix', ['plan', '--json'], { cwd: elsewhere, env: { PATH }, reject: false });
    expect(plan.exitCode, plan.stderr).toBe(0);
    expect((JSON.parse(plan.stdout) as { matrix: string }).matrix).toMatch(/matrix[/\\]default\.yaml$/);
  });
});
