/** Errors in a matrix file, each with the file, line and column, and the fix. */
import { CudamatrixError, type ErrorCode } from '../core/errors.ts';

export interface MatrixIssue {
  code: ErrorCode;
  /** What is wrong, e.g. 'unknown key "timout" in targets[0]'. */
  message: string;
  /** What to do about it. */
  fix: string;
  line: number;
  col: number;
  /** The place in the document the issue concerns (for tooling; not shown). */
  path?: (string | number)[];
  /** For an unknown key: the key it was probably meant to be. */
  suggestion?: string;
  /** For a missing key. */
  missing?: boolean;
}

export class MatrixError extends CudamatrixError {
  constructor(
    readonly file: string,
    readonly issues: MatrixIssue[],
  ) {
    super(issues[0]!.code, formatIssues(file, issues));
  }
}

function formatIssues(file: string, issues: MatrixIssue[]): string {
  const shown = issues.slice(0, 20).map((i) => `${file}:${i.line}:${i.col}: ${i.message}\n    fix: ${i.fix}`);
  const more = issues.length > 20 ? [`... and ${issues.length - 20} more`] : [];
  const head = issues.length === 1 ? 'the matrix file has an error' : `the matrix file has ${issues.length} errors`;
  return [head + ':', ...shown, ...more].join('\n');
}
