/**
 * What a run's verdict says, as a user runs the CLI on this machine (no NVIDIA driver here): the
 * exit status it prints is the one it exits with, even with a late Ctrl-C; a node that measured
 * nothing is no healthy node to a health checker.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, startCli, whenOutput } from '../cli.ts';
import { hasCommand, tempDir } from '../helpers.ts';

const noGpuHere = !hasCommand('nvidia-smi', ['-L']);

describe('the exit status printed is the exit status', () => {
  it('a SIGINT after "Exit status: 0" was printed: the process still exits 0, as summary.json says', async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const dir = tempDir();
      const { child, done } = startCli(['run', '--quick', '--probe', 'sysinfo', '--results-dir', path.join(dir, 'runs')]);
      // One Ctrl-C as soon as the status shows: it lands while the process winds down (100-250 ms
      // here, open handles closing), as a user's late Ctrl-C would.
      await whenOutput(child, 'Exit status: 0', () => child.kill('SIGINT'));
      const r = await done;
      const [run] = readdirSync(path.join(dir, 'runs'));
      const summary = JSON.parse(readFileSync(path.join(dir, 'runs', run!, 'summary.json'), 'utf8')) as { interrupted: boolean };
      expect(summary.interrupted).toBe(false);
      expect({ code: r.code, signal: child.signalCode }).toEqual({ code: 0, signal: null });
      expect(r.stderr).not.toContain('interrupted');
    }
  });
});

describe.runIf(noGpuHere)('the health line of a node without a usable driver', () => {
  it('run --quick --reporter nhc: status 4 and the reason, not OK, without --strict', async () => {
    const dir = tempDir();
    const r = await runCli(['run', '--quick', '--reporter', 'nhc', '--results-dir', path.join(dir, 'runs')]);
    // The run itself passes (nothing failed; --strict would make it 4), but the node is not healthy.
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^local 4 ERROR: nhc: Health check failed: local: nothing measured: \d+ cells skipped, sysinfo: no NVIDIA driver found: .*\n$/,
    );
  });
});
