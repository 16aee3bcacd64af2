import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandsAvailable, tempDir } from '../test/helpers.ts';
import { execProcessTree, connectLocal } from './local.ts';
import type { Session } from './transport.ts';

/** ps lists the processes, to prove a killed tree is gone. */
const havePs = commandsAvailable('the tests that kill process trees', { ps: 'procps' });

/** Processes whose command line contains `marker` (to prove a tree was really killed). */
function processesWith(marker: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(marker) && !l.includes('ps -eo'));
}

describe('local transport', () => {
  let session: Session;
  beforeAll(async () => {
    session = await connectLocal({}, { target: 't', runId: 'test' });
  });
  afterAll(async () => {
    await session[Symbol.asyncDispose]();
  });

  it('passes argv through without a shell', async () => {
    const tricky = ['a b', '"q"', "'s'", '$HOME', '`id`', '; rm -rf /', '&&', '\n', 'ünï'];
    const r = await session.exec(['printf', '%s|', ...tricky]);
    expect(r).toMatchObject({ exitCode: 0, signal: null, timedOut: false, cancelled: false, truncated: false });
    expect(r.stdout).toBe(`${tricky.join('|')}|`);
    expect(r.command).toEqual(['printf', '%s|', ...tricky]);
  });

  it('records a non-zero exit as data', async () => {
    const r = await session.exec(['sh', '-c', 'echo out; echo err >&2; exit 7']);
    expect(r).toMatchObject({ exitCode: 7, stdout: 'out\n', stderr: 'err\n' });
    expect(r.durationMs).toBeGreaterThan(0);
  });

  it('reports a command that cannot be started', async () => {
    const r = await session.exec(['/nonexistent/cudaprobe']);
    expect(r.exitCode).toBeNull();
    expect(r.stderr).toMatch(/ENOENT|not found|no such file/i);
  });

  it('sets cwd, env and stdin', async () => {
    const r = await session.exec(['sh', '-c', 'pwd; echo "$CM_X"; cat'], { cwd: session.workDir, env: { CM_X: 'x y' }, stdin: 'from stdin' });
    expect(r.stdout).toBe(`${session.workDir}\nx y\nfrom stdin`);
  });

  it.runIf(havePs)('kills the whole process tree on timeout', async () => {
    const r = await session.exec(['sh', '-c', 'sleep 300 & sleep 301'], { timeoutMs: 300 });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode === null || r.signal !== null).toBe(true);
    expect(r.durationMs).toBeLessThan(5000);
    // Both sleeps (the background one too) must be gone.
    await new Promise((res) => setTimeout(res, 200));
    const left = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').filter((l) => /^sleep 30[01]$/.test(l.trim()));
    expect(left).toEqual([]);
  });

  it('caps the output, stops the flood and says so', async () => {
    const r = await session.exec(['sh', '-c', 'yes cudamatrix'], { maxOutput: 10_000, timeoutMs: 10_000 });
    expect(r.truncated).toBe(true);
    expect(r.timedOut).toBe(false);
    expect(r.stdout.length).toBeLessThanOrEqual(10_000);
  });

  it.runIf(havePs)('stops on cancellation and returns what was printed so far', async () => {
    const controller = new AbortController();
    const marker = `cm-cancel-${process.pid}`;
    const pending = session.exec(['sh', '-c', `echo started; sleep 300; echo ${marker}`], { signal: controller.signal });
    await new Promise((res) => setTimeout(res, 300));
    controller.abort();
    const r = await pending;
    expect(r.cancelled).toBe(true);
    expect(r.stdout).toBe('started\n');
    expect(processesWith(marker)).toEqual([]);
  });

  it('copies files in and out, keeping the executable bit', async () => {
    const dir = tempDir();
    const src = path.join(dir, 'tool.sh');
    writeFileSync(src, '#!/bin/sh\necho hello from tool\n');
    const remote = session.joinPath(session.workDir, 'tool.sh');
    await session.put(src, remote, { executable: true });
    expect(statSync(remote).mode & 0o111).not.toBe(0);
    expect((await session.exec([remote])).stdout).toBe('hello from tool\n');
    const back = path.join(dir, 'back.sh');
    await session.get(remote, back);
    expect(readFileSync(back, 'utf8')).toContain('hello from tool');
  });

  it('removes its work directory when disposed', async () => {
    const s = await connectLocal({}, { target: 't', runId: 'dispose' });
    expect(existsSync(s.workDir)).toBe(true);
    await s[Symbol.asyncDispose]();
    expect(existsSync(s.workDir)).toBe(false);
  });

  it('runs argv directly with execProcessTree as well', async () => {
    expect((await execProcessTree(['echo', 'ok'])).stdout).toBe('ok\n');
  });
});
