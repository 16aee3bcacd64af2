import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger, Plugin } from 'vite';
import { defineConfig } from 'vitest/config';
import { endToEndTests, integrationTests, notTests } from './test/tiers.ts';

/**
 * Vite's logger, less one warning: the @actions packages ship source maps that point to sources
 * they do not ship, and Vite says so once per module it inlines (a screenful for nothing). Vitest
 * sets Vite's logger itself, so the warning is dropped where the resolved config holds it.
 */
const quietActionsSourcemaps: Plugin = {
  name: 'quiet-actions-sourcemaps',
  configResolved(config) {
    const logger = config.logger as Logger;
    for (const level of ['warn', 'warnOnce'] as const) {
      const write = logger[level].bind(logger);
      logger[level] = (message, options) => {
        if (message.includes('points to missing source files') && message.includes('@actions')) return;
        write(message, options);
      };
    }
  },
};

/** A tier: a Vitest project that takes the root's options (extends) and adds its files and setup. */
function tier(name: string, include: string[], exclude: string[], globalSetup: string[]) {
  return { extends: true as const, test: { name, include, exclude: [...notTests, ...exclude], globalSetup } };
}

export default defineConfig({
  plugins: [quietActionsSourcemaps],
  test: {
    // The tiers (test/tiers.ts says what goes where): `pnpm test:unit`, `pnpm test:integration`,
    // `pnpm test:e2e`. `vitest run` runs them all in one pool of maxWorkers (same groupOrder): the
    // tiers' files one tier after another (Vitest orders by project name), the slowest of each
    // first, so the same work keeps both workers busy as before and the last files are unit tests.
    // Each tier has its own temp dir (test/global-setup.ts); the integration and e2e tiers build
    // cudaprobe first (a cache hit for the second), and only integration starts a Docker engine
    // when asked for one.
    projects: [
      tier('unit', ['**/*.test.ts'], [...integrationTests, ...endToEndTests], ['test/global-setup.ts']),
      tier('integration', integrationTests, [], ['test/global-setup.ts', 'test/global-setup-cudaprobe.ts', 'test/global-setup-docker.ts']),
      tier('e2e', endToEndTests, [], ['test/global-setup.ts', 'test/global-setup-cudaprobe.ts']),
    ],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores here and in CI: integration tests start real processes and services.
    maxWorkers: 2,
    // Each test file's temp folders removed when it ends (test/setup-temp.ts).
    setupFiles: ['test/setup-temp.ts'],
    // One cudaprobe build cache for the whole suite (see test/helpers.ts).
    // When the suite itself runs in a GitHub Actions job (ci.yml), the CLIs it starts must not
    // write into that job's summary, outputs and annotations: a test that wants the GitHub
    // reporter gives its children GITHUB_ACTIONS=true and files of its own.
    env: {
      CUDAMATRIX_CACHE: path.join(tmpdir(), 'cudamatrix-test-cache'),
      GITHUB_ACTIONS: '',
      GITHUB_OUTPUT: '',
      GITHUB_STEP_SUMMARY: '',
      GITHUB_ENV: '',
      GITHUB_PATH: '',
    },
    // @actions/workflow-parser imports its JSON schemas without import attributes, which Node's
    // own ES module loader refuses: run it (and the expressions package it imports) through Vite.
    server: { deps: { inline: ['@actions/workflow-parser', '@actions/expressions'] } },
  },
});
