/** `cudamatrix merge` of a fleet's logs (issue 22, item 5): a readable console, not a line per log and cell. */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { H200_RUNS } from '../record-fixture.ts';
import { runCli } from '../cli.ts';
import { tempDir } from '../helpers.ts';

/** The H200 run once per machine: `count` logs of 13 cells, each its own target and run id. */
function fleetLogs(dir: string, count: number): string[] {
  const lines = readFileSync(H200_RUNS[0]!, 'utf8').split('\n').filter(Boolean);
  const runId = (JSON.parse(lines[0]!) as { runId: string }).runId;
  const target = (JSON.parse(lines[1]!) as { target: string }).target;
  return Array.from({ length: count }, (_, i) => {
    const file = path.join(dir, `gpu-${i}.jsonl`);
    writeFileSync(
      file,
      `${lines.map((line) => line.replaceAll(`"${runId}"`, `"${runId}-${i}"`).replaceAll(`"${target}"`, `"gpu-${i}"`).replaceAll(`"${target}/`, `"gpu-${i}/`)).join('\n')}\n`,
    );
    return file;
  });
}

describe('merge of many logs', () => {
  it('counts the logs instead of naming each, and lists no passing cell or target (--verbose does)', async () => {
    const dir = tempDir('cm-merge-many-');
    const logs = fleetLogs(dir, 25);
    const result = await runCli(['merge', '--results-dir', path.join(dir, 'runs'), ...logs]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/^merged 25 logs into \S+events\.jsonl \(--verbose names each\)$/m);
    expect(result.stderr).not.toContain('gpu-3.jsonl');
    expect(result.stdout).toContain('25 targets: only problems are listed as they come');
    expect(result.stdout).toContain('25 more targets with no problem');
    expect(result.stdout.split('\n').length).toBeLessThan(40);

    const all = await runCli(['merge', '--verbose', '--results-dir', path.join(dir, 'runs-all'), ...logs]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stderr).toContain(`${logs[3]} (run `);
    expect(all.stdout.split('\n').filter((line) => /^ {2}\S \[\d+\/325\] /.test(line))).toHaveLength(325);
  }, 120_000);
});
