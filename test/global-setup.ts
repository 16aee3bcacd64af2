// Builds cudaprobe once before the test files run in parallel, so that they share the cached
// binary instead of racing to compile it.
import { buildProbe } from '../probes/build.ts';
import { nodeArch } from '../runners/local.ts';
import { testCacheDir } from './helpers.ts';

export default async function setup(): Promise<void> {
  process.env.CUDAMATRIX_CACHE = testCacheDir;
  await buildProbe({ platform: 'linux', arch: nodeArch(), cacheDir: testCacheDir });
}
