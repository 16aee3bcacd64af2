import { createRequire } from 'node:module';

/** cudamatrix's version, from package.json (bundled builds inline it). */
export const TOOL_VERSION: string = (() => {
  try {
    return (createRequire(import.meta.url)('../package.json') as { version: string }).version;
  } catch {
    return process.env.CUDAMATRIX_VERSION ?? '0.0.0';
  }
})();
