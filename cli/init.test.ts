/** `cudamatrix init` (issue 20, defect 9): a starter matrix that loads, plans and extends the default expectations. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadMatrixFile, parseMatrix } from '../matrix/load.ts';
import { environmentClasses } from '../matrix/schema.ts';
import { runCli } from '../test/cli.ts';
import { repoRoot, tempDir } from '../test/helpers.ts';
import { starterMatrix } from './init.ts';

describe('cudamatrix init', () => {
  it('writes a starter matrix that plans, judged by the default expectations, and never overwrites', async () => {
    const dir = tempDir();
    const result = await runCli(['init'], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    const file = path.join(dir, 'cudamatrix.yaml');
    expect(result.stdout).toContain(`wrote ${file}`);
    const plan = await runCli(['plan', '-m', file, '--json']);
    expect(plan.code, plan.stderr).toBe(0);
    expect((JSON.parse(plan.stdout) as { cells: { target: string }[] }).cells.every((cell) => cell.target === 'local')).toBe(true);
    const defaults = (await loadMatrixFile(path.join(repoRoot, 'matrix', 'default.yaml'))).expectations;
    expect((await loadMatrixFile(file)).expectations).toEqual(defaults);

    // The file's own header names it (the new-user trial's init lab.yaml said cudamatrix.yaml).
    const named = await runCli(['init', 'lab.yaml'], { cwd: dir });
    expect(named.code, named.stderr).toBe(0);
    expect(readFileSync(path.join(dir, 'lab.yaml'), 'utf8')).toContain('cudamatrix plan -m lab.yaml');

    // Wherever it is written, the first line names the schema by a path that exists, and every
    // environment class is named.
    const text = readFileSync(file, 'utf8');
    const schema = /^# yaml-language-server: \$schema=(.+)$/m.exec(text.split('\n')[0]!)?.[1];
    expect(schema && existsSync(schema) && path.isAbsolute(schema), text.split('\n')[0]).toBe(true);
    for (const environment of environmentClasses) expect(text).toContain(environment);

    writeFileSync(file, 'version: 1\ntargets: [{name: mine}]\n');
    const again = await runCli(['init', file]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`${file} already exists; nothing was written`);
    expect(readFileSync(file, 'utf8')).toBe('version: 1\ntargets: [{name: mine}]\n');
  });

  it('has commented targets and expectations that load once uncommented', () => {
    const uncommented = starterMatrix().replace(
      /^(\s*)# (- name:|  transport:|    kind:|    host:|    user:|    identityFile:|    - \{kind:|expectations:|  linux:|    - metric:|      "<=":|      why:)/gm,
      '$1$2',
    );
    expect(uncommented).toContain('  - name: gpu-server-docker');
    const matrix = parseMatrix(uncommented, 'starter.yaml', { checkFiles: false });
    expect(matrix.targets.map((target) => [target.name, target.hops.map((hop) => hop.kind)])).toEqual([
      ['local', ['local']],
      ['gpu-server', ['ssh']],
      ['gpu-server-docker', ['ssh', 'docker']],
    ]);
    // The file's own sync-latency bound replaces the default's, in its place.
    const bounds = matrix.expectations.linux!.filter((e) => e.metric === 'sync-latency.p50_us');
    expect(bounds).toEqual([expect.objectContaining({ '<=': '50 us' })]);
  });
});
