/**
 * Errors with stable codes. Every expected failure is a CudamatrixError whose message says
 * what failed, where, and what to do next; the CLI maps the code to an exit status and never
 * prints a stack trace for one of these.
 */

/** Exit statuses of the `cudamatrix` CLI (documented in the README). */
export const ExitCode = {
  ok: 0,
  expectationFailed: 1,
  configuration: 2,
  infrastructure: 3,
  nothingMeasured: 4,
  interrupted: 130,
} as const;

export type ErrorCode =
  // the matrix file
  | 'MATRIX_NOT_FOUND'
  | 'MATRIX_SYNTAX'
  | 'MATRIX_TOO_COMPLEX'
  | 'MATRIX_UNKNOWN_KEY'
  | 'MATRIX_TYPE'
  | 'MATRIX_INVALID'
  | 'MATRIX_VERSION'
  | 'MATRIX_DUPLICATE_TARGET'
  | 'MATRIX_UNKNOWN_PROBE'
  | 'MATRIX_UNKNOWN_TRANSPORT'
  | 'MATRIX_UNKNOWN_FACT'
  | 'MATRIX_UNKNOWN_PARAM'
  | 'MATRIX_SECRET'
  // the command line and the plan
  | 'USAGE'
  | 'NO_CELLS'
  | 'ENVIRONMENT_MISMATCH'
  // reaching targets and running probes
  | 'TARGET_UNREACHABLE'
  | 'HOST_KEY_MISMATCH'
  | 'HOST_KEY_UNKNOWN'
  | 'AUTH_FAILED'
  | 'NVIDIA_RUNTIME_MISSING'
  | 'TRANSPORT_FAILED'
  | 'PROBE_BUILD_FAILED'
  | 'PROBE_CRASHED'
  | 'PROBE_TIMEOUT'
  | 'PROBE_PROTOCOL'
  // results
  | 'EVENTS_INVALID'
  | 'EVENTS_TOO_NEW'
  | 'INTERRUPTED';

const configurationCodes = new Set<ErrorCode>([
  'MATRIX_NOT_FOUND',
  'MATRIX_SYNTAX',
  'MATRIX_TOO_COMPLEX',
  'MATRIX_UNKNOWN_KEY',
  'MATRIX_TYPE',
  'MATRIX_INVALID',
  'MATRIX_VERSION',
  'MATRIX_DUPLICATE_TARGET',
  'MATRIX_UNKNOWN_PROBE',
  'MATRIX_UNKNOWN_TRANSPORT',
  'MATRIX_UNKNOWN_FACT',
  'MATRIX_UNKNOWN_PARAM',
  'MATRIX_SECRET',
  'USAGE',
  'NO_CELLS',
  'ENVIRONMENT_MISMATCH',
  'EVENTS_INVALID',
  'EVENTS_TOO_NEW',
]);

export class CudamatrixError extends Error {
  override readonly name = 'CudamatrixError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** Whether this is the user's configuration (exit 2) rather than the infrastructure (exit 3). */
  get isConfiguration(): boolean {
    return configurationCodes.has(this.code);
  }
}

export function exitCodeFor(error: unknown): number {
  if (error instanceof CudamatrixError) {
    if (error.code === 'INTERRUPTED') return ExitCode.interrupted;
    return error.isConfiguration ? ExitCode.configuration : ExitCode.infrastructure;
  }
  return ExitCode.infrastructure;
}

/** The message of any thrown value, with the chain of causes (and their codes), for logs and reports. */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    if (current instanceof Error) {
      const prefix = current instanceof CudamatrixError && depth > 0 ? `${current.code}: ` : '';
      parts.push(prefix + current.message);
      current = current.cause;
    } else {
      parts.push(String(current));
      break;
    }
  }
  return parts.join(' (cause: ') + ')'.repeat(Math.max(0, parts.length - 1));
}
