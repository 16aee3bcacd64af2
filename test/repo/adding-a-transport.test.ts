/**
 * What adding a transport touches, counted by doing it (docs/adding-a-transport.md): a copy of
 * the sources gets a trivial kind ("echo": this machine again, under another name) in a folder of
 * its own and one line in the registry, and the real CLI then plans, schedules (gha matrix),
 * checks (doctor) and runs a target of it with nothing else changed.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tsxLoader, type CliResult } from '../cli.ts';
import { CODE_FOLDERS, repoRoot, tempDir } from '../helpers.ts';

/** Runs a script of the copy (its CLI by default) through tsx, as test/cli.ts runs the repository's. */
function runCopy(copy: string, args: string[], script = path.join(copy, 'cli', 'entry.ts')): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', tsxLoader, script, ...args], { cwd: copy, env: { ...process.env, NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** What the CLI needs of the package: its code, the probe sources, the Dockerfile, the package files. */
const product = [...CODE_FOLDERS, 'docker', 'package.json', 'tsconfig.json'];

/** The new kind's folder: its declaration and its connect. */
const kindFiles: Record<string, string> = {
  'transports/echo/kind.ts': `import { z } from 'zod';
import type { TransportKind } from '../transport.ts';

export const echoOptions = z.strictObject({ label: z.string().min(1).optional().describe('A name for messages') });
export type EchoOptions = z.infer<typeof echoOptions>;

export const echo: TransportKind<EchoOptions> = {
  description: 'this machine again, under another name',
  options: echoOptions,
  chainable: false,
  hostKey: (o) => \`echo:\${o.label ?? 'here'}\`,
  reached: 'echoed',
  load: async () => (await import('./transport.ts')).connectEcho,
};
`,
  'transports/echo/transport.ts': `import { connectLocal } from '../local.ts';
import type { Connect } from '../transport.ts';
import type { EchoOptions } from './kind.ts';

export const connectEcho: Connect<EchoOptions> = async (o, context) => {
  const session = await connectLocal({}, context);
  return new Proxy(session, { get: (s, p) => (p === 'description' ? \`echo \${o.label ?? 'here'}\` : Reflect.get(s, p, s)) });
};
`,
};

/** The one registry line (with its import). */
function register(registry: string): string {
  const record = 'const kinds = { local, ssh, docker, wsl, slurm } satisfies';
  expect(registry).toContain(record);
  return registry.replace(
    record,
    "import { echo } from './echo/kind.ts';\nconst kinds = { local, ssh, docker, wsl, slurm, echo } satisfies",
  );
}

describe('adding a transport', () => {
  it('is one folder under transports/ and one registry line: plan, gha matrix, doctor and run need nothing else', async () => {
    const copy = tempDir('cm-newkind-');
    for (const entry of product)
      cpSync(path.join(repoRoot, entry), path.join(copy, entry), {
        recursive: true,
        filter: (file) => !file.includes(`${path.sep}records${path.sep}`) && !file.endsWith('.test.ts'),
      });
    symlinkSync(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'));
    const touched: string[] = [];
    for (const [file, text] of Object.entries(kindFiles)) {
      mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
      expect(existsSync(path.join(copy, file))).toBe(false);
      writeFileSync(path.join(copy, file), text);
      touched.push(file);
    }
    const registry = path.join(copy, 'transports', 'registry.ts');
    writeFileSync(registry, register(readFileSync(registry, 'utf8')));
    touched.push('transports/registry.ts');
    expect(touched).toEqual(['transports/echo/kind.ts', 'transports/echo/transport.ts', 'transports/registry.ts']);

    const matrix = path.join(copy, 'echo.yaml');
    writeFileSync(matrix, 'version: 1\ntargets:\n  - {name: mirror, transport: {kind: echo, label: mirror}, probes: [sysinfo]}\n');
    const plan = await runCopy(copy, ['plan', '-m', matrix]);
    expect(plan.stderr).toBe('');
    expect(plan.stdout).toMatch(/mirror\/sysinfo .* echo /);

    const gha = await runCopy(copy, ['gha', 'matrix', '-m', matrix, '--shards', '2']);
    expect(JSON.parse(gha.stdout)).toEqual({
      include: [{ name: 'shared', targets: 'mirror', runsOn: ['self-hosted', 'linux', 'cudamatrix-shared'], labelled: false }],
    });

    const doctor = await runCopy(copy, ['doctor', '--target', 'mirror', '-m', matrix]);
    expect(doctor.stdout).toMatch(/^i transport +echo \(label mirror\)$/m);
    expect(doctor.stdout).toMatch(/^✓ reachable +echo mirror: echoed$/m);
    expect(doctor.stdout).toMatch(/^✓ cudaprobe /m);

    const runs = path.join(copy, 'runs');
    const run = await runCopy(copy, ['run', '-m', matrix, '--results-dir', runs, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const events = readFileSync((JSON.parse(run.stdout) as { events: string }).events, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events.find((e) => e.type === 'target-start')).toMatchObject({ target: 'mirror', transport: ['echo'] });
    expect(events.find((e) => e.type === 'target-ready')).toMatchObject({ target: 'mirror', session: 'echo mirror' });
    expect(events.find((e) => e.type === 'cell-end')).toMatchObject({ cell: 'mirror/sysinfo' });

    // The JSON Schema for editors is generated from the registry: regenerated, it has the kind.
    const schema = await runCopy(copy, [], path.join(copy, 'matrix', 'write-schema.ts'));
    expect(schema.code, schema.stderr).toBe(0);
    expect(readFileSync(path.join(copy, 'matrix', 'schema.json'), 'utf8')).toContain('"echo"');
  }, 300_000);
});
