/**
 * A container that asks for no GPU (gpus: none), on the suite's own Docker engine: `run` and
 * `doctor` say the same of it, and what happens (issue 33). sysinfo runs there and reports the
 * system; its GPU facts, and the probes that need a GPU, are skipped because the target asks for
 * none. Before, doctor said so while run listed sysinfo as skipped for "no NVIDIA driver found".
 */
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CellEndEvent } from '../../events/events.ts';
import { readEventLog } from '../../events/events.ts';
import { buildProbe } from '../../probes/build.ts';
import { nodeArch } from '../../transports/local.ts';
import { runCli } from '../cli.ts';
import { buildTestBase, dockerEnv, dockerToolsReady, testDockerUnavailable } from './docker.ts';
import { integrationAvailable, tempDir, testCacheDir } from '../helpers.ts';
import { readdirSync, writeFileSync } from 'node:fs';

const noEngine = testDockerUnavailable();
const ready = dockerToolsReady() && integrationAvailable('a Docker engine for the tests', !noEngine, noEngine);

let base: string;
beforeAll(async () => {
  if (!ready) return;
  const probe = await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
  base = buildTestBase(probe.path);
}, 180_000);

describe.runIf(ready)('a container that asks for no GPU (gpus: none): run and doctor agree (real Docker engine)', () => {
  it('sysinfo ran and reported the system; the GPU probes are skipped because the target asks for no GPU', async () => {
    const dir = tempDir();
    const matrix = path.join(dir, 'lab.yaml');
    writeFileSync(
      matrix,
      `version: 1\ntargets:\n  - name: no-gpu\n    transport: {kind: docker, base: ${base}, gpus: none}\n    probes: [sysinfo, sync-latency]\n`,
    );
    const run = await runCli(['run', '-m', matrix, '--results-dir', path.join(dir, 'runs')], { env: dockerEnv() });
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const [id] = readdirSync(path.join(dir, 'runs'));
    const cells = readEventLog(path.join(dir, 'runs', id!, 'events.jsonl')).filter((e): e is CellEndEvent => e.type === 'cell-end');
    const sysinfo = cells.find((cell) => cell.probe === 'sysinfo')!;
    expect(sysinfo.records.some((record) => record.type === 'sysinfo' && record.name === 'environment' && record.value === 'linux')).toBe(
      true,
    );
    // Why, in the event log too: the target asks for no GPU.
    for (const cell of cells) expect(cell.reason, cell.probe).toMatch(/^no GPU, as the target asks \(gpus: none\)/);
    // The console: sysinfo is said to have run (the system only), not listed among the skipped probes.
    expect(run.stdout).toMatch(/^ {4}environment +linux/m);
    expect(run.stdout).toMatch(/^ {2}sysinfo ran: the system only; its GPU facts are skipped — no GPU, as the target asks \(gpus: none\)/m);
    expect(run.stdout).not.toMatch(/^ {2}skipped.*\bsysinfo\b/m);
    expect(run.stdout).toMatch(/^ {2}skipped: sync-latency — no GPU, as the target asks \(gpus: none\)/m);

    const doctor = await runCli(['doctor', '--target', 'no-gpu', '-m', matrix], { env: dockerEnv() });
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
    expect(doctor.stdout).toContain('only sysinfo runs there (it reports the environment; its GPU facts are skipped)');
  }, 600_000);
});
