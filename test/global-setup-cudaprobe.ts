/**
 * Once per tier (vitest.config.ts; every tier runs cudaprobe), before its test files run in
 * parallel: builds it into the suite's cache, so that they share the binary instead of racing to
 * compile it (a cache hit for the second tier of a run).
 */
import type { TestProject } from 'vitest/node';
import { buildProbe } from '../probes/build.ts';
import { nodeArch } from '../transports/local.ts';
import { testCacheDir } from './helpers.ts';

export default async function setup(project: TestProject): Promise<void> {
  const cacheDir = project.config.env?.CUDAMATRIX_CACHE ?? testCacheDir;
  process.env.CUDAMATRIX_CACHE = cacheDir;
  await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir });
}
