import { defineConfig } from 'vitest/config';

// The player's own tests, run from this folder (pnpm --filter @cudamatrix/gha-player test);
// without this file vitest would take the cudamatrix suite's config from the folder above.
export default defineConfig({
  test: { include: ['*.test.ts'], testTimeout: 60_000 },
});
