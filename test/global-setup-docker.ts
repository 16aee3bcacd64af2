/**
 * Once for the integration tier (vitest.config.ts), after test/global-setup.ts: starts a Docker
 * engine of its own for the Docker tests, under CUDAMATRIX_REQUIRE_INTEGRATION=1 or
 * CUDAMATRIX_TEST_START_DOCKERD=1 (or uses the one CUDAMATRIX_TEST_DOCKER_HOST names), and stops
 * it by its PID at the end. Never the engine DOCKER_HOST or the Docker context points at.
 */
import type { TestProject } from 'vitest/node';
import { startTestEngine, type TestEngine } from './docker/docker-engine.ts';
import { requireIntegration } from './helpers.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The Docker engine the tests may use, or null. */
    dockerHost: string | null;
    /** Why there is none. */
    dockerUnavailable: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let engine: TestEngine | undefined;
  let dockerHost: string | null = null;
  let dockerUnavailable = '';
  const given = process.env.CUDAMATRIX_TEST_DOCKER_HOST;
  if (given) {
    dockerHost = given;
  } else if (requireIntegration || process.env.CUDAMATRIX_TEST_START_DOCKERD === '1') {
    try {
      // In the tier's temp dir, which test/global-setup.ts (listed first) made.
      engine = await startTestEngine(project.getProvidedContext().suiteTmpDir);
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
    if (!engine) return;
    const problems = await engine.stop();
    console.log(`test Docker engine: dockerd pid ${engine.pid} stopped, ${engine.dir} removed`);
    if (problems.length) {
      console.error(`\n*** test Docker engine: teardown failed ***\n${problems.map((problem) => `- ${problem}`).join('\n')}\n`);
      process.exitCode = 1;
    }
  };
}
