/**
 * Every example matrix in matrix/examples/ is one `cudamatrix plan` accepts: each is checked
 * through the real CLI, so that an example can never teach a form the tool refuses.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../test/cli.ts';
import { repoRoot } from '../test/helpers.ts';

const examples = readdirSync(path.join(repoRoot, 'matrix', 'examples')).filter((file) => file.endsWith('.yaml'));

describe('cudamatrix plan on every example matrix', () => {
  it('has examples to check', () => {
    expect(examples.length).toBeGreaterThanOrEqual(3);
  });

  for (const name of examples) {
    it(`plans ${name}`, async () => {
      const result = await runCli(['plan', '-m', path.join('matrix', 'examples', name), '--json']);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const plan = JSON.parse(result.stdout) as { cells: { target: string; probe: string }[] };
      expect(plan.cells.length).toBeGreaterThan(0);
    });
  }

  it('tells only commands that work from a checkout: cudamatrix (npm link) or pnpm -s cudamatrix, never npx (issue 20)', () => {
    // No cudamatrix package is published: "npx cudamatrix" would fetch whatever has the name.
    const commands = examples.flatMap((name) =>
      readFileSync(path.join(repoRoot, 'matrix', 'examples', name), 'utf8')
        .split('\n')
        .filter((line) => /^#\s{2,}\S*\s*cudamatrix\s+[a-z]/.test(line))
        .map((line) => [name, line.replace(/^#\s+/, '')]),
    );
    expect(commands.length).toBeGreaterThan(0);
    for (const [name, command] of commands) expect(command, name).toMatch(/^(cudamatrix|pnpm -s cudamatrix) [a-z]/);
  });

  it('plans the Linux server natively and through ssh, then docker', async () => {
    const result = await runCli(['plan', '-m', 'matrix/examples/linux-gpu-server.yaml']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^gpu-server\/sysinfo\s+linux\s+ssh\s/m);
    expect(result.stdout).toMatch(/^gpu-server-docker\/sysinfo\s+linux\s+ssh → docker\s/m);
  });

  it('plans the Windows workstation natively (WDDM), in its WSL 2 distribution, and in Docker Engine there', async () => {
    const result = await runCli(['plan', '-m', 'matrix/examples/windows-workstation.yaml']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^workstation-native\/sysinfo\s+wddm\s+local\s/m);
    expect(result.stdout).toMatch(/^workstation-wsl2\/sysinfo\s+wsl2\s+wsl\s/m);
    expect(result.stdout).toMatch(/^workstation-wsl2-docker\/sysinfo\s+wsl2\s+wsl → docker\s/m);
  });
});
