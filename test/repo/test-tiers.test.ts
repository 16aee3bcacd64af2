/**
 * The test tiers (test/tiers.ts) stay what docs/development.md says: every test file is in exactly
 * one, the lists name no file that is gone, and no unit test imports what starts a service, Wine,
 * Chromium, the CLI or a cudaprobe build: `pnpm test:unit` would then neither be fast nor run
 * where those are missing (the unit tier builds no cudaprobe: vitest.config.ts).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers.ts';
import { endToEndTests, integrationTests } from '../tiers.ts';

const testFiles = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.test.ts'], {
  cwd: repoRoot,
  encoding: 'utf8',
})
  .split('\n')
  .filter(Boolean);

// Called with the file alone: a matcher given a second argument returns an object, always truthy.
const matcher = (globs: string[]) => {
  const match = picomatch(globs);
  return (file: string) => match(file);
};
const inIntegration = matcher(integrationTests);
const inEndToEnd = matcher(endToEndTests);
const unitFiles = testFiles.filter((file) => !inIntegration(file) && !inEndToEnd(file));

/** What the other tiers start, by the module a test imports it from (paths from the repository root). */
const startsSomething: Record<string, string> = {
  'test/sshd.ts': 'a real sshd',
  'test/slurm/slurm-lab.ts': 'a Slurm cluster',
  'test/docker/docker.ts': 'the Docker engine',
  'test/docker/docker-engine.ts': 'a Docker engine',
  'test/wsl/wsl-standin/': 'the stand-in wsl.exe',
  'test/package.ts': 'the packed package',
  'test/gha/gha-lab.ts': 'a played GitHub Actions workflow',
  'test/cli.ts': 'the CLI as a child process',
  'probes/build.ts': 'a cudaprobe build',
  'playwright-core': 'Chromium',
};

/** The modules a file imports, as paths from the repository root (packages by their name). */
function importsOf(file: string): { module: string; names: string }[] {
  const source = readFileSync(path.join(repoRoot, file), 'utf8');
  return [...source.matchAll(/import\s+(?:type\s+)?([^'"]*?)\s*from\s*'([^']+)'|import\('([^']+)'\)/g)].map((match) => {
    const specifier = match[2] ?? match[3]!;
    const module = specifier.startsWith('.') ? path.relative(repoRoot, path.resolve(repoRoot, path.dirname(file), specifier)) : specifier;
    return { module, names: match[1] ?? '' };
  });
}

function whatItStarts(file: string): string[] {
  return importsOf(file).flatMap(({ module, names }) => {
    if (module === 'test/helpers.ts' && /\b(WINE|WINDOWS_NODE)\b/.test(names)) return [`Wine (test/helpers.ts: ${names})`];
    if (module === 'test/live-and-merged.ts' && /\b(realRuns?|liveAndMerged)\b/.test(names))
      return [`a matrix run with cudaprobe built (test/live-and-merged.ts: ${names})`];
    const started = Object.entries(startsSomething).find(([what]) => module === what || (what.endsWith('/') && module.startsWith(what)));
    return started ? [`${started[1]} (${module})`] : [];
  });
}

describe('the test tiers (test/tiers.ts)', () => {
  it('put every test file in exactly one tier', () => {
    expect(testFiles.filter((file) => inIntegration(file) && inEndToEnd(file))).toEqual([]);
    expect(unitFiles.length).toBeGreaterThan(0);
    expect(testFiles.filter(inIntegration).length).toBeGreaterThan(0);
    expect(testFiles.filter(inEndToEnd).length).toBeGreaterThan(0);
  });

  it('name no file that is gone', () => {
    const unmatched = [...integrationTests, ...endToEndTests].filter((glob) => !testFiles.some(matcher([glob])));
    expect(unmatched).toEqual([]);
  });

  it('keep the unit tier free of services, Wine, Chromium and CLI runs', () => {
    const offenders = unitFiles.flatMap((file) => whatItStarts(file).map((what) => `${file} starts ${what}`));
    expect(offenders).toEqual([]);
  });

  it('would see a unit test that starts something (this check on the files of the other tiers)', () => {
    expect(whatItStarts('test/ssh/ssh.test.ts')).toEqual(expect.arrayContaining([expect.stringContaining('a real sshd (test/sshd.ts)')]));
    expect(whatItStarts('test/windows/windows-quoting.test.ts')).toEqual(expect.arrayContaining([expect.stringMatching(/^Wine/)]));
    expect(whatItStarts('test/report/report-browser.test.ts')).toEqual(['Chromium (playwright-core)']);
    expect(whatItStarts('cli/init.test.ts')).toEqual(['the CLI as a child process (test/cli.ts)']);
    expect(whatItStarts('reporters/real-run.test.ts')).toEqual([expect.stringMatching(/^a matrix run with cudaprobe built/)]);
  });
});
