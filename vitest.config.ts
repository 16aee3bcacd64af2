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
    globalSetup: ['test/global-setup.ts'],
    // One cudaprobe build cache for the whole suite (see test/helpers.ts).
    env: { CUDAMATRIX_CACHE: path.join(tmpdir(), 'cudamatrix-test-cache') },
  },
});
