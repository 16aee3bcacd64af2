import path from 'node:path';
import { packageFileForDisplay, packageRoot } from '../core/package-root.ts';
import { loadMatrixFile, type LoadOptions, type Matrix } from '../matrix/load.ts';

/** The matrix named by --matrix, or the embedded default one. */
export async function loadMatrixArg(file: string | undefined, options: LoadOptions = {}): Promise<Matrix> {
  if (file) return loadMatrixFile(file, options);
  const builtIn = path.join(packageRoot(), 'matrix', 'default.yaml');
  const matrix = await loadMatrixFile(builtIn);
  return { ...matrix, file: packageFileForDisplay('matrix', 'default.yaml') };
}
