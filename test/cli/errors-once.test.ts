/**
 * A target's error is said once in the console: on the target's line as it comes (or, with
 * --quiet, in its block at the end); its cells, its block and the expectations it kept from being
 * judged refer to it. A real unreachable SSH target through the CLI: a port on 127.0.0.1 that
 * nothing listens on, with a real key (the connection is refused before any authentication).
 */
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEventLog } from '../../events/events.ts';
import { defaultProbeNames } from '../../probes/catalogue.ts';
import { runCli } from '../cli.ts';
import { tempDir } from '../helpers.ts';
import { freePort, keygen } from '../sshd.ts';

const occurrences = (text: string, part: string) => text.split(part).length - 1;

async function unreachableRun(args: string[]) {
  const dir = tempDir();
  const key = path.join(dir, 'id_ed25519');
  keygen(key);
  const port = await freePort();
  const matrix = path.join(dir, 'lab.yaml');
  writeFileSync(
    matrix,
    [
      'version: 1',
      'extends: default',
      'targets:',
      '  - name: far',
      `    transport: {kind: ssh, host: 127.0.0.1, port: ${port}, user: ci, identityFile: ${key}, retries: 0}`,
      '',
    ].join('\n'),
  );
  const runs = path.join(dir, 'runs');
  const result = await runCli(['run', '-m', matrix, '--results-dir', runs, ...args]);
  const events = readEventLog(path.join(runs, readdirSync(runs)[0]!, 'events.jsonl'));
  const error = events.find((e) => e.type === 'target-error');
  if (error?.type !== 'target-error') throw new Error(`no target-error: ${result.stdout}${result.stderr}`);
  return { ...result, all: result.stdout + result.stderr, error };
}

describe('an unreachable target: its reason once', () => {
  const cells = defaultProbeNames().length;

  it('said on the target line; one line counts its cells; its block and the expectations refer to it', async () => {
    const result = await unreachableRun([]);
    expect(result.code).toBe(3);
    expect(result.error.code).toBe('TARGET_UNREACHABLE');
    expect(result.error.message).toMatch(/ECONNREFUSED/);
    // The reason, and the refused connection inside it, once in everything printed.
    expect(occurrences(result.all, result.error.message)).toBe(1);
    expect(occurrences(result.all, 'ECONNREFUSED')).toBe(1);
    expect(result.stdout).toContain(
      `  ✗ far: TARGET_UNREACHABLE: ${result.error.message}\n  ✗ [${cells}/${cells}] ${cells} cells of far not run: the error above\n`,
    );
    expect(result.stdout).not.toMatch(/far\/sysinfo error/);
    expect(result.stdout).toContain(`  error (${cells}): every probe — not run: far's TARGET_UNREACHABLE above`);
    expect(result.stdout).toMatch(/^ {2}✗ far: \d+ expectations not judged: far's TARGET_UNREACHABLE above$/m);
    // No list of the expectations it kept from being judged.
    expect(result.stdout).not.toContain('which:');
  });

  it('with --quiet (no live lines) the block at the end says it, once', async () => {
    const result = await unreachableRun(['--quiet']);
    expect(result.code).toBe(3);
    expect(occurrences(result.all, result.error.message)).toBe(1);
    expect(result.stdout).toContain(`  error (${cells}): every probe — not run: TARGET_UNREACHABLE: ${result.error.message}`);
    expect(result.stdout).toMatch(/^ {2}✗ far: \d+ expectations not judged: far's TARGET_UNREACHABLE above$/m);
  });
});
