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

/**
 * A file of the cudamatrix folder, named for people: relative to the current folder when it is
 * below it (in a checkout: matrix/default.yaml), else by its full path (an installed package).
 */
export function packageFileForDisplay(...parts: string[]): string {
  const file = path.join(packageRoot(), ...parts);
  let relative = '';
  try {
    relative = path.relative(process.cwd(), file);
  } catch {
    // The current folder is gone: the full path it is.
  }
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
}
