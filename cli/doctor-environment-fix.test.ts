/**
 * doctor's fix for an environment sysinfo could not tell: on Windows without a driver the cause is
 * the driver (the environment is its model), so the line points there instead of asking for a bug
 * report. The reasons are cudaprobe's own (probes/cudaprobe/probes/sysinfo.cpp).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../test/helpers.ts';
import { environmentFix } from './doctor.ts';

const sysinfoSource = readFileSync(path.join(repoRoot, 'probes', 'cudaprobe', 'probes', 'sysinfo.cpp'), 'utf8');

describe('doctor: the fix for an unknown environment', () => {
  it("points to the driver line when cudaprobe says the driver is missing (Windows: the model is the driver's)", () => {
    const reason = /"(Windows without a usable NVIDIA driver[^"]*)"/.exec(sysinfoSource)?.[1];
    expect(reason).toBeDefined();
    expect(environmentFix(reason!)).toBe('see driver');
  });

  it('asks for a debug run and a report when nothing explains it', () => {
    expect(environmentFix('')).toMatch(/CUDAMATRIX_DEBUG=1/);
  });
});
