/**
 * Helpers for tests that need a real tool or service. When it is missing, the test is skipped
 * with a loud reason, except under CUDAMATRIX_REQUIRE_INTEGRATION=1 (set by .ci/run), where a
 * missing tool fails the suite instead of silently testing less.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const requireIntegration = process.env.CUDAMATRIX_REQUIRE_INTEGRATION === '1';

export function hasCommand(command: string, args: string[] = ['--version']): boolean {
  try {
    execFileSync(command, args, { stdio: 'ignore', timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * Returns true when `command` can be used. When not: throws under
 * CUDAMATRIX_REQUIRE_INTEGRATION=1, else warns and returns false (the caller skips).
 */
export function integrationAvailable(what: string, available: boolean, install: string): boolean {
  if (available) return true;
  const message = `${what} is not available (${install})`;
  if (requireIntegration) throw new Error(`CUDAMATRIX_REQUIRE_INTEGRATION=1 but ${message}`);
  console.warn(`\n*** SKIPPING integration tests: ${message} ***\n`);
  return false;
}

const madeDirs = new Set<string>();

/**
 * A new empty folder under the temp dir, removed when the test file ends (test/setup-temp.ts)
 * or, outside vitest (the benchmarks), when the process exits.
 */
export function tempDir(prefix = 'cm-test-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  if (madeDirs.size === 0 && !process.env.VITEST) process.once('exit', removeTempDirsSync);
  madeDirs.add(dir);
  return dir;
}

/**
 * Removes every folder tempDir() made in this process. Call it after whatever used them
 * (a server, a CLI run) has stopped; a removal that races with a child still writing is retried.
 */
export async function removeTempDirs(): Promise<void> {
  const dirs = [...madeDirs];
  madeDirs.clear();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 })));
}

function removeTempDirsSync(): void {
  for (const d of madeDirs) rmSync(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  madeDirs.clear();
}

export const repoRoot = path.resolve(import.meta.dirname, '..');

/**
 * Where the tests cache cudaprobe builds (one build shared by every test file, and kept between
 * runs). vitest.config.ts sets CUDAMATRIX_CACHE to it; the workers' temp dir is the suite's own
 * (test/global-setup.ts), so the fallback must not follow TMPDIR there.
 */
export const testCacheDir = process.env.CUDAMATRIX_CACHE || path.join(tmpdir(), 'cudamatrix-test-cache');

export const WINE = '/usr/lib/wine/wine64';

/**
 * The JUnit schema CI tools validate against. It lives in the shared folder beside the
 * checkout; a copy is kept in test/fixtures for clones that have no shared folder (CI).
 */
export const junitXsd = [path.resolve(repoRoot, '..', 'shared', 'junit', 'junit-10.xsd'), path.join(repoRoot, 'test', 'fixtures', 'junit-10.xsd')].find((f) => existsSync(f))!;

/** Validates JUnit XML with xmllint against the JUnit 10 schema; throws with xmllint's message. */
export function validateJunit(xml: string): void {
  const file = path.join(tempDir(), 'junit.xml');
  writeFileSync(file, xml);
  execFileSync('xmllint', ['--noout', '--schema', junitXsd, file], { stdio: 'pipe' });
}
