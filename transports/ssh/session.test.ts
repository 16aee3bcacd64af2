/**
 * SshSession.exec on a real sshd (test/sshd.ts): the edges of the helper's stream parsing (its
 * "cm-started" line, its end markers, output across many chunks) and of the shared control logic
 * (transports/supervise.ts) on both paths. The run-level behaviour is in test/ssh/ssh.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sshdReady, startSshd, type Sshd } from '../../test/sshd.ts';
import { connectChain } from '../registry.ts';
import type { Session } from '../transport.ts';
import { afterMarker, MarkerStrip } from './channel.ts';

const ready = sshdReady();

const running = (marker: string) =>
  execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.trim() === marker);

describe.runIf(ready)('SshSession.exec', () => {
  let sshd: Sshd;
  let session: Session;
  beforeAll(async () => {
    sshd = await startSshd(1);
    const hop = {
      kind: 'ssh',
      host: '127.0.0.1',
      port: sshd.ports[0],
      identityFile: sshd.key,
      knownHosts: sshd.knownHosts,
      sshConfig: false,
      retries: 0,
    };
    session = await connectChain([hop], { target: 't', runId: 'session-exec' });
  });
  afterAll(async () => {
    await session?.[Symbol.asyncDispose]();
    await sshd?.stop();
  });

  it("takes out the helper's own lines and markers, and nothing of the command's", async () => {
    expect(await session.exec(['true'])).toMatchObject({ exitCode: 0, stdout: '', stderr: '' });
    expect(await session.exec(['sh', '-c', 'printf x'])).toMatchObject({ exitCode: 0, stdout: 'x', stderr: '' });
    // A command that prints what looks like the helper's first line keeps it.
    expect(await session.exec(['sh', '-c', 'echo cm-started 5; printf "ünï\\n" >&2'])).toMatchObject({
      exitCode: 0,
      stdout: 'cm-started 5\n',
      stderr: 'ünï\n',
    });
    const noDir = await session.exec(['true'], { cwd: '/nonexistent-cm-dir' });
    expect(noDir).toMatchObject({ exitCode: 125, stdout: '' });
    expect(noDir.stderr).toContain('nonexistent-cm-dir');
  });

  it('passes megabytes through unchanged when under the cap', async () => {
    const result = await session.exec(['sh', '-c', 'head -c 3000000 /dev/zero | tr "\\0" a; head -c 500000 /dev/zero | tr "\\0" b >&2']);
    expect(result).toMatchObject({ exitCode: 0, truncated: false });
    expect(result.stdout).toBe('a'.repeat(3_000_000));
    expect(result.stderr).toBe('b'.repeat(500_000));
  });

  it('caps a flood on stderr as on stdout, and the session goes on', async () => {
    const result = await session.exec(['sh', '-c', 'yes e >&2'], { maxOutput: 1000 });
    expect(result).toMatchObject({ truncated: true, exitCode: null, signal: 'SIGTERM', stdout: '', stderr: 'e\n'.repeat(500) });
    expect(await session.exec(['echo', 'after'])).toMatchObject({ exitCode: 0, stdout: 'after\n' });
  });

  it('stops a command at once when its signal is already aborted', async () => {
    const result = await session.exec(['sh', '-c', 'sleep 407'], { signal: AbortSignal.abort() });
    // Stopped (sleep 407 would run for minutes), and gone: polled, the kill is asynchronous.
    expect(result).toMatchObject({ cancelled: true, exitCode: null });
    await vi.waitUntil(() => running('sleep 407').length === 0, { timeout: 30_000, interval: 100 }).catch(() => undefined);
    expect(running('sleep 407')).toEqual([]);
  });

  it('does not fire a 30-day timeout at once', async () => {
    expect(await session.exec(['sh', '-c', 'sleep 0.2; echo ok'], { timeoutMs: 30 * 24 * 3600 * 1000 })).toMatchObject({
      timedOut: false,
      exitCode: 0,
      stdout: 'ok\n',
    });
  });

  it('caps a flood on a channel of its own (a command that reads stdin)', async () => {
    const result = await session.exec(['sh', '-c', 'cat >/dev/null; yes c'], { stdin: 'x', maxOutput: 1000 });
    expect(result).toMatchObject({ truncated: true, stdout: 'c\n'.repeat(500) });
    expect(await session.exec(['cat'], { stdin: 'é' })).toMatchObject({ exitCode: 0, stdout: 'é' });
  });
});

describe('marker lines (what a login script prints comes before them)', () => {
  const feedAll = (strip: MarkerStrip, chunks: string[]) => chunks.map((chunk) => strip.feed(chunk)).join('') + strip.end();

  it('drops what comes before the marker line, however the text is cut into chunks', () => {
    const text = 'Welcome to gpu-node-7\nno newline cm-begin-abc\nout 1\nout 2';
    for (let size = 1; size <= text.length; size++) {
      const chunks = text.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g'))!;
      const strip = new MarkerStrip('cm-begin-abc');
      expect(feedAll(strip, chunks), `chunks of ${size}`).toBe('out 1\nout 2');
      expect(strip.chatter).toBe('Welcome to gpu-node-7\nno newline ');
    }
  });

  it('takes a CRLF line end after the marker (PowerShell), even in the next chunk', () => {
    const strip = new MarkerStrip('cm-begin-abc');
    expect(feedAll(strip, ['profile says hi\r\ncm-begin-abc', '\r', '\n', 'out\r\n'])).toBe('out\r\n');
  });

  it('passes a text that never had the marker on at the end (the shell failed before our line ran)', () => {
    const strip = new MarkerStrip('cm-begin-abc');
    expect(strip.feed('bash: cannot set terminal process group\n')).toBe('');
    expect(strip.end()).toBe('bash: cannot set terminal process group\n');
    expect(strip.seen).toBe(false);
  });

  it('finds the answer after a marker in collected output', () => {
    expect(afterMarker('motd\r\ncm-dir-1\r\nC:\\Temp\\x\r\n', 'cm-dir-1')).toBe('C:\\Temp\\x\r\n');
    expect(afterMarker('nothing', 'cm-dir-1')).toBeUndefined();
  });
});
