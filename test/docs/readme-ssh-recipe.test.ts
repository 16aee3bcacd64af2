/**
 * README's recipe (b), "A Linux server over SSH", played as a new user plays it against a real
 * sshd (test/sshd.ts): its matrix, with the server's address, port, user and key put in, and its
 * commands in their order, from a HOME of its own whose known_hosts does not know the server yet.
 * Every command must get past the host key: a first command that fails on every new host
 * (issue 33: doctor without --accept-new before run --accept-new) teaches the user nothing.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { runCli } from '../cli.ts';
import { repoRoot, tempDir } from '../helpers.ts';
import { sshdReady, startSshd, type Sshd } from '../sshd.ts';

/** The fenced blocks of README's section whose heading starts with `heading`, in order. */
function sectionBlocks(markdown: string, heading: string): { lang: string; text: string }[] {
  const start = markdown.indexOf(`\n${heading}`);
  expect(start, `README.md has no section "${heading}"`).toBeGreaterThan(0);
  const rest = markdown.slice(start + 1);
  const section = rest.slice(0, rest.slice(1).search(/\n#{1,3} /) + 1 || undefined);
  return [...section.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].map((match) => ({ lang: match[1]!, text: match[2]! }));
}

/** The `cudamatrix …` command lines of a sh block, without their comments, as argument lists. */
function commandsOf(sh: string): string[][] {
  return sh
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line.startsWith('cudamatrix '))
    .map((line) => line.split(/\s+/).slice(1));
}

const ready = sshdReady();
let sshd: Sshd;
beforeAll(async () => {
  if (ready) sshd = await startSshd(1);
});
afterAll(async () => {
  await sshd?.stop();
});

describe.runIf(ready)("README's recipe (b), a Linux server over SSH, on a host not yet known (real sshd)", () => {
  it('each of its commands, in order, gets past the host key; the run exits 0', async () => {
    const blocks = sectionBlocks(readFileSync(path.join(repoRoot, 'README.md'), 'utf8'), '### (b)');
    const yaml = blocks.find((block) => block.lang === 'yaml');
    expect(yaml, 'recipe (b) shows a matrix').toBeDefined();
    // init writes the starter matrix the recipe then replaces: what is played is the matrix shown.
    const commands = blocks
      .filter((block) => block.lang === 'sh')
      .flatMap((block) => commandsOf(block.text))
      .filter((args) => args[0] !== 'init');
    expect(commands.map((args) => args[0])).toEqual(['doctor', 'run']);

    const home = tempDir('cm-readme-b-');
    mkdirSync(path.join(home, '.ssh'), { mode: 0o700 });
    const matrix = parse(yaml!.text) as { targets: { transport: Record<string, unknown> }[] };
    for (const target of matrix.targets) {
      Object.assign(target.transport, { host: '127.0.0.1', port: sshd.ports[0], user: userInfo().username, identityFile: sshd.key });
    }
    writeFileSync(path.join(home, 'lab.yaml'), stringify(matrix));

    for (const args of commands) {
      const result = await runCli(args, { cwd: home, env: { HOME: home } });
      const said = `cudamatrix ${args.join(' ')}:\n${result.stdout}${result.stderr}`;
      expect(said).not.toMatch(/HOST_KEY_UNKNOWN|not in known_hosts/);
      expect(said).not.toMatch(/\n\s+at /);
      if (args[0] === 'doctor') expect(result.stdout, said).toMatch(/^✓ reachable\s+/m);
      if (args[0] === 'run') expect(result.code, said).toBe(0);
    }
    // The host key was recorded once, by the first command that met the host.
    expect(readFileSync(path.join(home, '.ssh', 'known_hosts'), 'utf8')).toContain(sshd.hostKeyPub.split(' ')[1]!);
  }, 300_000);
});
