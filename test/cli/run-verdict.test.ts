/**
 * What a run's verdict says, as a user runs the CLI on this machine (no NVIDIA driver here): a
 * matrix that judges nothing says so (console, GitHub job summary and annotation); the exit
 * status it prints is the one it exits with, even with a late Ctrl-C; a node that measured
 * nothing is no healthy node to a health checker.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, startCli, whenOutput } from '../cli.ts';
import { hasCommand, tempDir } from '../helpers.ts';

const noGpuHere = !hasCommand('nvidia-smi', ['-L']);

function matrixFile(dir: string, body: string): string {
  const file = path.join(dir, 'm.yaml');
  writeFileSync(file, body);
  return file;
}

describe('a matrix that judges nothing', () => {
  const FINDING = 'This matrix judges nothing: it has no expectations, so the run passes whatever the driver does.';

  it('no expectations at all (no extends: default): the console says so and how to fix it; the exit status stays 0', async () => {
    const dir = tempDir();
    // The matrix of the issue, as a new user writes it.
    const matrix = matrixFile(dir, 'version: 1\ntargets:\n  - name: here\n    transport: local\n');
    const result = await runCli(['run', '-m', matrix, '--probe', 'sysinfo', '--results-dir', path.join(dir, 'runs')]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      `${FINDING}\n  fix: add "extends: default" to ${matrix} for the default expectations of each environment`,
    );
    expect(result.stdout).toContain('Exit status: 0 (nothing was judged)');
    // Said once, before the counts it explains.
    expect(result.stdout.split(FINDING).length).toBe(2);
    expect(result.stdout.indexOf(FINDING)).toBeLessThan(result.stdout.indexOf('Expectations: 0 passed'));
  });

  it('in a GitHub Actions step: a warning annotation, and the job summary says it instead of "every expectation met"', async () => {
    const dir = tempDir();
    const matrix = matrixFile(dir, 'version: 1\ntargets:\n  - name: here\n');
    const summaryPath = path.join(dir, 'summary.md');
    const outputPath = path.join(dir, 'output.txt');
    writeFileSync(summaryPath, '');
    writeFileSync(outputPath, '');
    const result = await runCli(['run', '-m', matrix, '--probe', 'sysinfo', '--results-dir', path.join(dir, 'runs')], {
      env: { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: summaryPath, GITHUB_OUTPUT: outputPath },
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^::warning title=cudamatrix%3A this run judged nothing::This matrix judges nothing: .*Fix: add "extends: default"/m,
    );
    const summary = readFileSync(summaryPath, 'utf8');
    expect(summary).toContain('**Exit status 0**: nothing judged');
    expect(summary).not.toContain('every expectation met');
    expect(summary).toContain(`> [!WARNING]\n> ${FINDING}\n> Fix: add "extends: default"`);
  });

  it('expectations that apply to nothing this run ran: said too; with extends: default nothing of the kind is said', async () => {
    const dir = tempDir();
    const wddmOnly = matrixFile(
      dir,
      'version: 1\nexpectations:\n  wddm:\n    - fact: sysinfo.tcc_driver\n      equals: false\ntargets:\n  - name: here\n',
    );
    const result = await runCli(['run', '-m', wddmOnly, '--probe', 'sysinfo', '--results-dir', path.join(dir, 'runs')]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("No expectation was judged: none of the matrix's expectations is on a probe this run ran");
    expect(result.stdout).toContain('give ' + wddmOnly + ' expectations for the environments that ran (linux)');
    const judged = matrixFile(dir, 'version: 1\nextends: default\ntargets:\n  - name: here\n');
    const judgedResult = await runCli(['run', '-m', judged, '--probe', 'sysinfo', '--results-dir', path.join(dir, 'runs2')]);
    expect(judgedResult.code).toBe(0);
    expect(judgedResult.stdout).not.toMatch(/judges nothing|No expectation was judged|nothing was judged/);
  });

  it('the embedded default with --probe on a probe it has no expectation for: asks for a matrix of the user’s own, not an edit of the package', async () => {
    const dir = tempDir();
    const result = await runCli(['run', '--probe', 'memory-pools', '--results-dir', path.join(dir, 'runs')]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("No expectation was judged: none of the matrix's expectations is on a probe this run ran");
    expect(result.stdout).toContain('fix: the default matrix has no expectation on what ran here (linux)');
    expect(result.stdout).toContain('pass a matrix of your own with expectations (cudamatrix init writes one)');
    expect(result.stdout).not.toContain('give matrix/default.yaml');
  });
});

describe('the exit status printed is the exit status', () => {
  it('a SIGINT after "Exit status: 0" was printed: the process still exits 0, as summary.json says', async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const dir = tempDir();
      const { child, done } = startCli(['run', '--quick', '--probe', 'sysinfo', '--results-dir', path.join(dir, 'runs')]);
      // One Ctrl-C as soon as the status shows: it lands while the process winds down (100-250 ms
      // here, open handles closing), as a user's late Ctrl-C would.
      await whenOutput(child, 'Exit status: 0', () => child.kill('SIGINT'));
      const result = await done;
      const [run] = readdirSync(path.join(dir, 'runs'));
      const summary = JSON.parse(readFileSync(path.join(dir, 'runs', run!, 'summary.json'), 'utf8')) as { interrupted: boolean };
      expect(summary.interrupted).toBe(false);
      expect({ code: result.code, signal: child.signalCode }).toEqual({ code: 0, signal: null });
      expect(result.stderr).not.toContain('interrupted');
    }
  });
});

describe.runIf(noGpuHere)('the health line of a node without a usable driver', () => {
  it('run --quick --reporter nhc: status 4 and the reason, not OK, without --strict', async () => {
    const dir = tempDir();
    const result = await runCli(['run', '--quick', '--reporter', 'nhc', '--results-dir', path.join(dir, 'runs')]);
    // The run itself passes (nothing failed; --strict would make it 4), but the node is not healthy.
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^local 4 ERROR: nhc: Health check failed: local: nothing measured: \d+ cells skipped, sysinfo: no NVIDIA driver found: .*\n$/,
    );
  });
});
