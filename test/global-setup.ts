/**
 * Once for the whole suite, before the test files run in parallel:
 * - builds cudaprobe, so that they share the cached binary instead of racing to compile it;
 * - makes the suite's own temp dir: test/setup-temp.ts points every test file's TMPDIR at it, and
 *   at the end any cm-* / cudamatrix-* entry still in it fails the suite (a test left it behind);
 * - starts a Docker engine of its own for the Docker tests, under CUDAMATRIX_REQUIRE_INTEGRATION=1
 *   or CUDAMATRIX_TEST_START_DOCKERD=1 (or uses the one CUDAMATRIX_TEST_DOCKER_HOST names), and
 *   stops it by its PID at the end. Never the engine DOCKER_HOST or the Docker context points at.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildProbe } from '../probes/build.ts';
import { nodeArch } from '../transports/local.ts';
import { startTestEngine, type TestEngine } from './docker/docker-engine.ts';
import { requireIntegration, testCacheDir } from './helpers.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The suite's own temp dir (TMPDIR of every test file). */
    suiteTmpDir: string;
    /** The Docker engine the tests may use, or null. */
    dockerHost: string | null;
    /** Why there is none. */
    dockerUnavailable: string;
  }
}

/** The names of the temp folders tests and cudamatrix make. */
const ours = (name: string) => name.startsWith('cm-') || name.startsWith('cudamatrix-');

function oursIn(dir: string): string[] {
  try {
    return readdirSync(dir).filter(ours);
  } catch {
    return [];
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const outerTmp = tmpdir();
  const before = new Set(oursIn(outerTmp));
  const suiteTmp = mkdtempSync(path.join(outerTmp, 'cudamatrix-suite-'));
  project.provide('suiteTmpDir', suiteTmp);

  const cacheDir = project.config.env?.CUDAMATRIX_CACHE ?? testCacheDir;
  process.env.CUDAMATRIX_CACHE = cacheDir;
  await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir });

  let engine: TestEngine | undefined;
  let dockerHost: string | null = null;
  let dockerUnavailable = '';
  const given = process.env.CUDAMATRIX_TEST_DOCKER_HOST;
  if (given) {
    dockerHost = given;
  } else if (requireIntegration || process.env.CUDAMATRIX_TEST_START_DOCKERD === '1') {
    try {
      engine = await startTestEngine(suiteTmp);
      dockerHost = engine.host;
      console.log(`test Docker engine: dockerd pid ${engine.pid} on ${engine.host}`);
    } catch (error) {
      dockerUnavailable = `could not start a Docker engine for the tests: ${(error as Error).message}`;
    }
  } else {
    dockerUnavailable =
      'the tests never use the engine DOCKER_HOST or the Docker context points at: set CUDAMATRIX_TEST_START_DOCKERD=1 to have the suite start its own (as root, with dockerd installed), or CUDAMATRIX_TEST_DOCKER_HOST=unix:///path/docker.sock (or tcp://host:port) to use a given one';
  }
  project.provide('dockerHost', dockerHost);
  project.provide('dockerUnavailable', dockerUnavailable);

  return async () => {
    const problems: string[] = [];
    if (engine) {
      problems.push(...(await engine.stop()));
      console.log(`test Docker engine: dockerd pid ${engine.pid} stopped, ${engine.dir} removed`);
    }
    const left = oursIn(suiteTmp);
    if (left.length) problems.push(`the tests left ${left.length} temp folder(s) behind in ${suiteTmp}: ${left.sort().join(', ')}`);
    await rm(suiteTmp, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }).catch((error: Error) =>
      problems.push(`could not remove ${suiteTmp}: ${error.message}`),
    );
    const after = oursIn(outerTmp);
    const added = after.filter((n) => !before.has(n));
    console.log(
      `temp folders (cm-*, cudamatrix-*) in ${outerTmp}: ${before.size} before the suite, ${after.length} after` +
        `${added.length ? ` (new, possibly from other processes: ${added.sort().join(', ')})` : ''}; left in the suite's own temp dir: ${left.length}`,
    );
    if (problems.length) {
      console.error(`\n*** test suite teardown failed ***\n${problems.map((p) => `- ${p}`).join('\n')}\n`);
      process.exitCode = 1;
    }
  };
}
