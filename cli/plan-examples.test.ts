/**
 * Every example matrix in matrix/examples/ is one `cudamatrix plan` accepts: each is checked
 * through the real CLI, so that an example can never teach a form the tool refuses.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../test/cli.ts';
import { repoRoot } from '../test/helpers.ts';

const examples = readdirSync(path.join(repoRoot, 'matrix', 'examples')).filter((f) => f.endsWith('.yaml'));

describe('cudamatrix plan on every example matrix', () => {
  it('has examples to check', () => {
    expect(examples.length).toBeGreaterThanOrEqual(3);
  });

  for (const name of examples) {
    it(`plans ${name}`, async () => {
      const r = await runCli(['plan', '-m', path.join('matrix', 'examples', name), '--json']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const plan = JSON.parse(r.stdout) as { cells: { target: string; probe: string }[] };
      expect(plan.cells.length).toBeGreaterThan(0);
    });
  }

  it('tells only commands that work from a checkout: cudamatrix (npm link) or pnpm -s cudamatrix, never npx (issue 20)', () => {
    // No cudamatrix package is published: "npx cudamatrix" would fetch whatever has the name.
    const commands = examples.flatMap((name) =>
      readFileSync(path.join(repoRoot, 'matrix', 'examples', name), 'utf8')
        .split('\n')
        .filter((l) => /^#\s{2,}\S*\s*cudamatrix\s+[a-z]/.test(l))
        .map((l) => [name, l.replace(/^#\s+/, '')]),
    );
    expect(commands.length).toBeGreaterThan(0);
    for (const [name, command] of commands) expect(command, name).toMatch(/^(cudamatrix|pnpm -s cudamatrix) [a-z]/);
  });

  it('plans the Linux server natively and through ssh, then docker', async () => {
    const r = await runCli(['plan', '-m', 'matrix/examples/linux-gpu-server.yaml']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^gpu-server\/sysinfo\s+linux\s+ssh\s/m);
    expect(r.stdout).toMatch(/^gpu-server-docker\/sysinfo\s+linux\s+ssh → docker\s/m);
  });

  it('plans the Windows workstation natively (WDDM), in its WSL 2 distribution, and in Docker Engine there', async () => {
    const r = await runCli(['plan', '-m', 'matrix/examples/windows-workstation.yaml']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^workstation-native\/sysinfo\s+wddm\s+local\s/m);
    expect(r.stdout).toMatch(/^workstation-wsl2\/sysinfo\s+wsl2\s+wsl\s/m);
    expect(r.stdout).toMatch(/^workstation-wsl2-docker\/sysinfo\s+wsl2\s+wsl → docker\s/m);
  });
});
