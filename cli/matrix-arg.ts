import path from 'node:path';
import { packageRoot } from '../core/package-root.ts';
import { loadMatrixFile, type Matrix } from '../matrix/load.ts';

/** The matrix named by --matrix, or the embedded default one. */
export async function loadMatrixArg(file: string | undefined): Promise<Matrix> {
  if (file) return loadMatrixFile(file);
  const builtIn = path.join(packageRoot(), 'matrix', 'default.yaml');
  const m = await loadMatrixFile(builtIn);
  // Relative where that is short (in a checkout: matrix/default.yaml), else where it is installed.
  const relative = path.relative(process.cwd(), builtIn);
  return { ...m, file: relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : builtIn };
}
