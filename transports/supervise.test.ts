import { spawn } from 'node:child_process';
import { getEventListeners } from 'node:events';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type ExecIo, type Launched, MAX_TIMER_MS, type StopReason, supervise } from './supervise.ts';
import type { ExecOptions } from './transport.ts';

/**
 * A transport as small as can be: `sh -c script` as a real child process, its output pushed as
 * text, stopped with SIGTERM to its process group. Records every stop it is asked for.
 */
function shell(script: string, options: ExecOptions = {}, launchDelayMs = 0) {
  const stops: StopReason[] = [];
  const launch = (io: ExecIo): Launched | Promise<Launched> => {
    const start = (): Launched => {
      const child = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      child.stdout.setEncoding('utf8').on('data', io.stdout);
      child.stderr.setEncoding('utf8').on('data', io.stderr);
      const done = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) =>
        child.on('close', (code, signal) => resolve({ exitCode: code, signal })),
      );
      return {
        done,
        stop: (why) => {
          stops.push(why);
          process.kill(-child.pid!, 'SIGTERM');
        },
      };
    };
    return launchDelayMs ? new Promise((resolve) => setTimeout(() => resolve(start()), launchDelayMs)) : start();
  };
  return { stops, result: supervise(['sh', '-c', script], options, launch) };
}

/** Runs `body` (ESM, with `supervise` and `spawn` in scope) in a Node process of its own: its exit code, output and time. */
function inOwnProcess(body: string): Promise<{ code: number | null; output: string; ms: number }> {
  const script = `import { spawn } from 'node:child_process';\nimport { supervise } from ${JSON.stringify(path.join(import.meta.dirname, 'supervise.ts'))};\n${body}`;
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    const killer = setTimeout(() => child.kill('SIGKILL'), 4000);
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, output, ms: performance.now() - started });
    });
  });
}

describe('supervise', () => {
  it('returns the one result shape: exit status, output, duration, no flags', async () => {
    const { result, stops } = shell('echo out; echo err >&2; exit 3');
    const outcome = await result;
    expect(outcome).toEqual({
      command: ['sh', '-c', 'echo out; echo err >&2; exit 3'],
      exitCode: 3,
      signal: null,
      timedOut: false,
      cancelled: false,
      truncated: false,
      durationMs: expect.any(Number),
      stdout: 'out\n',
      stderr: 'err\n',
    });
    expect(outcome.durationMs).toBeGreaterThan(0);
    expect(stops).toEqual([]);
  });

  it('stops a command at its timeout, once', async () => {
    const { result, stops } = shell('echo started; sleep 30', { timeoutMs: 200 });
    const outcome = await result;
    expect(outcome).toMatchObject({
      timedOut: true,
      cancelled: false,
      truncated: false,
      exitCode: null,
      signal: 'SIGTERM',
      stdout: 'started\n',
    });
    // Killed at its timeout (SIGTERM, no exit code: sleep 30 did not end), not before it.
    expect(outcome.durationMs).toBeGreaterThanOrEqual(190);
    expect(stops).toEqual(['timeout']);
  });

  it('clamps a timeout past what setTimeout takes: 30 days does not fire at once', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const { result, stops } = shell('sleep 0.3; echo finished', { timeoutMs: 30 * 24 * 3600 * 1000 });
      const outcome = await result;
      expect(outcome).toMatchObject({ timedOut: false, exitCode: 0, stdout: 'finished\n' });
      expect(stops).toEqual([]);
      // Node warns on the next tick after an overflowing setTimeout; give it one.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((warning) => warning.name === 'TimeoutOverflowWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
    expect(MAX_TIMER_MS).toBe(2 ** 31 - 1);
  });

  it('clears its timer: a process that ran one command with a 30-day timeout exits at once', async () => {
    const outcome = await inOwnProcess(`
      const controller = new AbortController();
      const r = await supervise(['sh'], { timeoutMs: 30 * 24 * 3600 * 1000, signal: controller.signal }, (io) => {
        const child = spawn('sh', ['-c', 'echo ran'], { stdio: ['ignore', 'pipe', 'ignore'] });
        child.stdout.setEncoding('utf8').on('data', io.stdout);
        return { done: new Promise((done) => child.on('close', (code) => done({ exitCode: code, signal: null }))), stop() {} };
      });
      process.stdout.write(JSON.stringify(r));
    `);
    expect(outcome.code, outcome.output).toBe(0);
    expect(JSON.parse(outcome.output)).toMatchObject({ exitCode: 0, timedOut: false, stdout: 'ran\n' });
  });

  it('a timeout of Infinity or 0 means no limit', async () => {
    for (const timeoutMs of [Infinity, 0]) {
      const { result, stops } = shell('sleep 0.1; echo ok', { timeoutMs });
      expect(await result).toMatchObject({ timedOut: false, exitCode: 0, stdout: 'ok\n' });
      expect(stops).toEqual([]);
    }
  });

  it('stops on cancellation, returns what was printed, and removes its listener', async () => {
    const controller = new AbortController();
    const { result, stops } = shell('echo started; sleep 30', { signal: controller.signal });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    setTimeout(() => controller.abort(), 200);
    const outcome = await result;
    expect(outcome).toMatchObject({ cancelled: true, timedOut: false, exitCode: null, signal: 'SIGTERM', stdout: 'started\n' });
    expect(stops).toEqual(['cancel']);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('stops at once on a signal already aborted', async () => {
    const { result, stops } = shell('sleep 30', { signal: AbortSignal.abort(), timeoutMs: 100 });
    const outcome = await result;
    // Killed (sleep 30 did not end), by the cancellation alone.
    expect(outcome).toMatchObject({ cancelled: true, exitCode: null, signal: 'SIGTERM' });
    expect(stops).toEqual(['cancel']);
  });

  it('removes its listener when the command ends by itself, and leaves the signal usable', async () => {
    const controller = new AbortController();
    const { result } = shell('true', { signal: controller.signal, timeoutMs: 60_000 });
    expect((await result).cancelled).toBe(false);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    controller.abort();
  });

  it('keeps the first maxOutput characters of a flood, and stops it once whatever else fires', async () => {
    const controller = new AbortController();
    // The command ignores SIGTERM for a while, so that the timeout and the cancellation both
    // fire after the flood while it still runs.
    const script = 'trap "" TERM; yes cudamatrix | head -c 200000; echo tail >&2; sleep 0.6; exit 0';
    const { result, stops } = shell(script, { maxOutput: 1000, timeoutMs: 200, signal: controller.signal });
    setTimeout(() => controller.abort(), 300);
    const outcome = await result;
    expect(outcome.truncated).toBe(true);
    expect(outcome.stdout).toBe('cudamatrix\n'.repeat(100).slice(0, 1000));
    expect(outcome.stderr).toBe('tail\n');
    expect(outcome).toMatchObject({ timedOut: true, cancelled: true, exitCode: 0 });
    expect(stops).toEqual(['flood']);
  });

  it('caps stdout and stderr each, at exactly maxOutput without calling it a flood', async () => {
    const { result, stops } = shell('printf 0123456789; printf abcdefghij >&2', { maxOutput: 10 });
    const outcome = await result;
    expect(outcome).toMatchObject({ truncated: false, stdout: '0123456789', stderr: 'abcdefghij' });
    expect(stops).toEqual([]);
    const over = shell('printf 0123456789x', { maxOutput: 10 });
    expect(await over.result).toMatchObject({ truncated: true, stdout: '0123456789' });
    expect(over.stops).toEqual(['flood']);
  });

  it('delivers a stop asked for while the transport was still starting the command', async () => {
    const { result, stops } = shell('sleep 30', { signal: AbortSignal.abort() }, 150);
    const outcome = await result;
    expect(outcome).toMatchObject({ cancelled: true, signal: 'SIGTERM' });
    expect(stops).toEqual(['cancel']);
  });

  it('rejects as the transport does when it fails, and cleans up all the same', async () => {
    const controller = new AbortController();
    const lost = new Error('the connection closed');
    const failing = supervise(['x'], { timeoutMs: 60_000, signal: controller.signal }, (io) => {
      const child = spawn('sh', ['-c', 'echo partial; exit 0'], { stdio: ['ignore', 'pipe', 'ignore'] });
      child.stdout.setEncoding('utf8').on('data', io.stdout);
      return { done: new Promise((_, reject) => child.on('close', () => reject(lost))), stop: () => undefined };
    });
    await expect(failing).rejects.toBe(lost);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    const notStarted = supervise(['x'], { signal: controller.signal }, async () => {
      throw lost;
    });
    await expect(notStarted).rejects.toBe(lost);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
