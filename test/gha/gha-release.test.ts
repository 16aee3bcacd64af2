/**
 * The release workflow (.github/workflows/release.yml), played here with the workflow player
 * (tools/gha-player/player.ts) for a pushed tag: pack -> release -> npm, their real steps run, and what
 * a user then does with the release (check the sha256, npm install -g the downloaded file).
 *
 * Declared stand-ins (the player logs each): the pack job's node:20-bullseye container (its steps
 * run on this machine); actions/checkout, upload-/download-artifact (folders); the packing step
 * itself, replaced by the tarball test/package.ts packs from this checkout (as in
 * test/gha/gha-e2e.test.ts), and the single executables step, replaced by the executables
 * test/package.ts builds with `pnpm build:sea` (cached, as test/package/sea.test.ts runs them); `gh`, which would talk to GitHub, by a script that records its arguments
 * and keeps the files it would attach to the release; `npm` in the npm job, which would publish,
 * by a script that records its arguments and the package.json it would publish.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { playWorkflow, type JobPlay, type WorkflowPlay } from '@cudamatrix/gha-player';
import { repoRoot, tempDir } from '../helpers.ts';
import { buildSeaCached, packCheckout } from '../package.ts';

const VERSION = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
const TARBALL = `cudamatrix-${VERSION}.tgz`;
const EXECUTABLES = [`cudamatrix-${VERSION}-linux-x64`, `cudamatrix-${VERSION}-windows-x64.exe`];
const NPM_TOKEN = 'npm_test-token-4f1c9e7a2b';

/** Stand-ins on PATH: gh keeps the release's files; npm records what it would publish. */
function standIns(dir: string) {
  const bin = path.join(dir, 'bin');
  const calls = path.join(dir, 'calls.jsonl');
  const released = path.join(dir, 'released');
  mkdirSync(bin);
  mkdirSync(released);
  const record = `require('fs').appendFileSync(${JSON.stringify(calls)}, JSON.stringify({ tool: require('path').basename(process.argv[1]), args: process.argv.slice(2), extra }) + '\\n');`;
  writeFileSync(
    path.join(bin, 'gh'),
    `#!/usr/bin/env node\n// [player] gh stand-in: records its arguments and keeps the release's files; nothing reaches GitHub\nconst a = process.argv.slice(2); const extra = {};\nif (a[0] === 'release' && a[1] === 'create') { const files = a.slice(3, a.findIndex((x, i) => i > 2 && x.startsWith('--'))); for (const f of files) require('fs').copyFileSync(f, require('path').join(${JSON.stringify(released)}, require('path').basename(f))); extra.files = files; }\n${record}\n`,
  );
  writeFileSync(
    path.join(bin, 'npm'),
    `#!/usr/bin/env node\n// [player] npm stand-in: records what it would publish; nothing reaches the registry\nconst a = process.argv.slice(2); const fs = require('fs'); const extra = {};\nif (a[0] === 'publish') { extra.pkg = JSON.parse(fs.readFileSync(require('path').join(a[1], 'package.json'), 'utf8')); const rc = process.env.NPM_CONFIG_USERCONFIG; extra.npmrc = rc && fs.readFileSync(rc, 'utf8'); extra.token = process.env.NODE_AUTH_TOKEN === ${JSON.stringify(NPM_TOKEN)}; }\n${record}\n`,
  );
  for (const standIn of ['gh', 'npm']) chmodSync(path.join(bin, standIn), 0o755);
  const read = () =>
    readFileSync(calls, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { tool: string; args: string[]; extra: Record<string, unknown> });
  return { bin, released, calls: () => (existsSync(calls) ? read() : []) };
}

/** Plays release.yml for a push of `tag`, the repository being this checkout's release workflow and package.json. */
async function playRelease(tag: string, options: { vars?: Record<string, string> } = {}) {
  const dir = tempDir('cm-gha-release-');
  const tarball = packCheckout();
  const sea = buildSeaCached();
  const repo = path.join(dir, 'cudamatrix');
  for (const file of ['.github/workflows/release.yml', 'package.json']) cpSync(path.join(repoRoot, file), path.join(repo, file));
  const tools = standIns(dir);
  let legs = 0;
  const play = await playWorkflow({
    workflowFile: path.join(repo, '.github/workflows/release.yml'),
    event: 'push',
    github: { repository: 'your-org/cudamatrix', ref: `refs/tags/${tag}` },
    // Each job a fresh runner with the checkout of the tag.
    workspace: () => {
      const ws = path.join(dir, 'runners', String(legs++));
      cpSync(repo, ws, { recursive: true });
      return ws;
    },
    artifactsDir: path.join(dir, 'artifacts'),
    containers: 'run-here',
    secrets: { NPM_TOKEN },
    vars: options.vars,
    env: { ...process.env, PATH: `${tools.bin}:${process.env.PATH}`, NO_COLOR: '1' },
    replaceSteps: {
      // The package GitHub's runner would pack (the step's contract: one cudamatrix-<version>.tgz in the workspace, output name).
      'pack.package': (ctx) => {
        cpSync(tarball, path.join(ctx.workspace, TARBALL));
        ctx.log(`[player] the package step is replaced: ${tarball} (packed from this checkout by test/package.ts), as ${TARBALL}`);
        ctx.setOutput('name', TARBALL);
      },
      // The step's contract: each executable and its .sha256 in the workspace, output names.
      'pack.sea': (ctx) => {
        for (const name of EXECUTABLES)
          for (const file of [name, `${name}.sha256`]) cpSync(path.join(sea.dir, file), path.join(ctx.workspace, file));
        ctx.log(
          `[player] the single executables step is replaced: ${sea.dir} (pnpm build:sea in a copy of this checkout, by test/package.ts)`,
        );
        ctx.setOutput('names', EXECUTABLES.join(' '));
      },
    },
  });
  return { dir, tarball, sea, play, ...tools };
}

const job = (play: WorkflowPlay, id: string): JobPlay | undefined => play.jobs[id]?.legs[0];

describe('the release workflow, played for a pushed tag', () => {
  let release: Awaited<ReturnType<typeof playRelease>>;
  beforeAll(async () => {
    release = await playRelease(`v${VERSION}`, { vars: { NPM_PACKAGE_NAME: '@your-org/cudamatrix' } });
  }, 600_000);

  it('makes the GitHub release of the tag with the tarball and its sha256 attached', () => {
    expect(release.play.result).toBe('success');
    expect(release.play.order).toEqual(['pack', 'release', 'npm']);
    expect(job(release.play, 'pack')!.log).toMatch(/\[player\] container "node:20-bullseye" is not played/);
    const create = release.calls().find((call) => call.tool === 'gh')!;
    expect(create.args.slice(0, 5)).toEqual(['release', 'create', `v${VERSION}`, TARBALL, `${TARBALL}.sha256`]);
    expect(create.args).toEqual(
      expect.arrayContaining(['--repo', 'your-org/cudamatrix', '--verify-tag', '--title', `cudamatrix ${VERSION}`]),
    );
    const notes = create.args[create.args.indexOf('--notes') + 1]!;
    expect(notes).toContain(`npm install -g https://github.com/your-org/cudamatrix/releases/download/v${VERSION}/${TARBALL}`);
    // The attached files: the packed bytes, and a sha256 file that checks them (as a user checks the download).
    expect(readdirSync(release.released)).toEqual(expect.arrayContaining([TARBALL, `${TARBALL}.sha256`]));
    const bytes = readFileSync(path.join(release.released, TARBALL));
    expect(bytes.equals(readFileSync(release.tarball))).toBe(true);
    const sha = createHash('sha256').update(bytes).digest('hex');
    expect(readFileSync(path.join(release.released, `${TARBALL}.sha256`), 'utf8')).toBe(`${sha}  ${TARBALL}\n`);
    expect(notes).toContain(sha);
    expect(execFileSync('sha256sum', ['--check', `${TARBALL}.sha256`], { cwd: release.released, encoding: 'utf8' })).toBe(
      `${TARBALL}: OK\n`,
    );
  });

  it('attaches the single executables with their sha256, the built bytes, each checked by sha256sum --check', () => {
    expect(job(release.play, 'pack')!.steps.find((step) => step.id === 'sea')!.outcome).toBe('success');
    const create = release.calls().find((call) => call.tool === 'gh')!;
    expect(create.args.slice(3, 9)).toEqual([TARBALL, `${TARBALL}.sha256`, ...EXECUTABLES.flatMap((name) => [name, `${name}.sha256`])]);
    expect(readdirSync(release.released).sort()).toEqual(
      [TARBALL, `${TARBALL}.sha256`, ...EXECUTABLES.flatMap((name) => [name, `${name}.sha256`])].sort(),
    );
    const notes = create.args[create.args.indexOf('--notes') + 1]!;
    for (const name of EXECUTABLES) {
      const bytes = readFileSync(path.join(release.released, name));
      expect(bytes.equals(readFileSync(path.join(release.sea.dir, name))), name).toBe(true);
      const sha = createHash('sha256').update(bytes).digest('hex');
      expect(readFileSync(path.join(release.released, `${name}.sha256`), 'utf8')).toBe(`${sha}  ${name}\n`);
      expect(notes).toContain(`- ${name}: sha256 \`${sha}\``);
      expect(execFileSync('sha256sum', ['--check', `${name}.sha256`], { cwd: release.released, encoding: 'utf8' })).toBe(`${name}: OK\n`);
    }
    expect(notes).toContain('Or one file that needs no Node.js (Linux x64 with glibc 2.28 or newer; Windows x64)');
  });

  it('installs from the downloaded release file with npm install -g, and runs', () => {
    const prefix = path.join(release.dir, 'prefix');
    execFileSync(
      'npm',
      ['install', '-g', '--offline', '--no-audit', '--no-fund', '--prefix', prefix, path.join(release.released, TARBALL)],
      {
        encoding: 'utf8',
        env: { ...process.env, npm_config_cache: path.join(release.dir, 'npm-cache') },
      },
    );
    expect(execFileSync(path.join(prefix, 'bin', 'cudamatrix'), ['--version'], { encoding: 'utf8' }).trim()).toBe(VERSION);
  });

  it("publishes to npm under the project's name only, with the token from the secret and never in a log", () => {
    const publish = release.calls().find((call) => call.tool === 'npm')!;
    expect(publish.args).toEqual(['publish', './package', '--access', 'public', '--provenance', '--ignore-scripts']);
    const pkg = publish.extra.pkg as Record<string, unknown>;
    expect(pkg).toMatchObject({ name: '@your-org/cudamatrix', version: VERSION, bin: { cudamatrix: 'bin/cudamatrix.cjs' } });
    expect(pkg.repository).toEqual({ type: 'git', url: 'git+https://github.com/your-org/cudamatrix.git' });
    expect(pkg).not.toHaveProperty('private');
    expect(pkg).not.toHaveProperty('scripts');
    // The token reached npm through the environment; the file names the variable, not the token.
    expect(publish.extra.token).toBe(true);
    expect(publish.extra.npmrc).toBe('//registry.npmjs.org/:_authToken=${NODE_AUTH_TOKEN}\n');
    for (const id of ['pack', 'release', 'npm']) expect(job(release.play, id)!.log).not.toContain(NPM_TOKEN);
  });
});

describe("the release workflow, for a tag that is not the package's version", () => {
  it('fails the pack job with an annotation saying what to tag, makes no release and publishes nothing', async () => {
    const release = await playRelease('v9.9.9');
    expect(release.play.result).toBe('failure');
    const pack = job(release.play, 'pack')!;
    expect(pack.steps.find((step) => step.id === 'version')!.outcome).toBe('failure');
    expect(pack.annotations).toContainEqual(
      expect.objectContaining({
        level: 'error',
        title: 'release tag',
        message: expect.stringContaining(`the tag v9.9.9 does not name package.json's version ${VERSION}`),
      }),
    );
    expect(pack.steps.find((step) => step.id === 'package')!.outcome).toBe('skipped');
    expect(release.play.jobs.release!.result).toBe('skipped');
    expect(release.play.jobs.npm!.result).toBe('skipped');
    expect(release.calls()).toEqual([]);
  }, 300_000);
});
