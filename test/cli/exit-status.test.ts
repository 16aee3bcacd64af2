/**
 * The exit status a run prints is the one it exits with: a Ctrl-C that comes after the console
 * printed "Exit status: N" (while the process winds down) changes nothing. Real runs of the CLI.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startCli, whenOutput } from '../cli.ts';
import { tempDir } from '../helpers.ts';

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
