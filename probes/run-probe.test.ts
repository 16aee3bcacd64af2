import { describe, expect, it } from 'vitest';
import type { ExecResult } from '../transports/transport.ts';
import { classify } from './run-probe.ts';

const exec = (over: Partial<ExecResult>): ExecResult => ({
  command: ['cudaprobe', 'run', 'sysinfo'],
  exitCode: 0,
  signal: null,
  timedOut: false,
  cancelled: false,
  truncated: false,
  durationMs: 10,
  stdout: '',
  stderr: '',
  ...over,
});
const rec = (fields: object) => `${JSON.stringify({ schema: 'cudaprobe/1', probe: 'sysinfo', ...fields })}\n`;

describe('classifying a probe run', () => {
  it.each([
    ['exit 0', {}, 'passed', undefined],
    ['exit 3 (no driver)', { exitCode: 3, stdout: rec({ type: 'skip', reason: 'no NVIDIA driver found' }) }, 'skipped', undefined],
    ['a timeout', { exitCode: null, signal: 'SIGTERM', timedOut: true }, 'error', 'PROBE_TIMEOUT'],
    ['a crash', { exitCode: null, signal: 'SIGSEGV', stderr: 'Segmentation fault' }, 'error', 'PROBE_CRASHED'],
    [
      'exit 1 with an error record',
      { exitCode: 1, stdout: rec({ type: 'error', message: 'cuMemAlloc failed' }) },
      'error',
      'PROBE_CRASHED',
    ],
    ['exit 2 (usage)', { exitCode: 2, stderr: 'cudaprobe: unknown probe x' }, 'error', 'USAGE'],
    ['a protocol problem', { stdout: 'garbage\n' }, 'error', 'PROBE_PROTOCOL'],
    ['an output flood', { truncated: true, exitCode: null, signal: 'SIGTERM' }, 'error', 'PROBE_CRASHED'],
    ['a cancellation', { cancelled: true, exitCode: null, signal: 'SIGTERM' }, 'cancelled', undefined],
    ['a binary that could not start', { exitCode: null, stderr: 'spawn ENOENT' }, 'error', 'PROBE_CRASHED'],
  ] as const)('%s', (_what, over, status, code) => {
    const classified = classify('sysinfo', exec(over));
    expect(classified.status).toBe(status);
    expect(classified.errorCode).toBe(code);
    if (status !== 'passed') expect(classified.reason).toBeTruthy();
  });

  it('gives the reason a person needs', () => {
    expect(classify('sysinfo', exec({ exitCode: 3, stdout: rec({ type: 'skip', reason: 'no NVIDIA driver found' }) })).reason).toBe(
      'no NVIDIA driver found',
    );
    expect(classify('sysinfo', exec({ exitCode: null, signal: 'SIGSEGV', stderr: 'a\nb\nSegmentation fault\n' })).reason).toBe(
      'killed by SIGSEGV: a | b | Segmentation fault',
    );
    expect(classify('sysinfo', exec({ stdout: 'oops\n' })).reason).toBe('probe sysinfo, stdout line 1: not JSON: oops');
    expect(classify('sysinfo', exec({ exitCode: 1, stdout: rec({ type: 'error', message: 'cuMemAlloc failed' }) })).reason).toBe(
      'exited with 1: cuMemAlloc failed',
    );
  });
});
