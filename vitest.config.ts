import { tmpdir } from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', 'dist/**'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores here and in CI: integration tests start real processes and services.
    maxWorkers: 2,
    // The suite's own temp dir (checked for leftovers at the end), its own Docker engine when
    // asked for one, and the cudaprobe build (test/global-setup.ts); each test file's temp
    // folders removed when it ends (test/setup-temp.ts).
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup-temp.ts'],
    // One cudaprobe build cache for the whole suite (see test/helpers.ts).
    env: { CUDAMATRIX_CACHE: path.join(tmpdir(), 'cudamatrix-test-cache') },
  },
});
