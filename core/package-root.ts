import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The cudamatrix folder (the one with package.json and matrix/default.yaml), found from this
 * module whether it runs from source or from the bundle in dist/.
 */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(path.join(dir, 'matrix', 'default.yaml')) && existsSync(path.join(dir, 'package.json'))) return dir;
    dir = path.dirname(dir);
  }
  throw new Error('cannot find the cudamatrix folder (matrix/default.yaml) above this module');
}
