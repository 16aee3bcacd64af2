/**
 * Errors with stable codes. Every expected failure is a CudamatrixError whose message says
 * what failed, where, and what to do next; the CLI maps the code to an exit status and never
 * prints a stack trace for one of these.
 */

/** Exit statuses of the `cudamatrix` CLI (the exit table in README.md and docs/cli.md). */
export const ExitCode = {
  ok: 0,
  expectationFailed: 1,
  configuration: 2,
  infrastructure: 3,
  nothingMeasured: 4,
  /** gha merge --fail-on-change: a record of the run differs from the committed one (behaviour-changed). */
  behaviourChanged: 5,
  /** An output the user asked for (or the run folder's record) could not be written: a full disk, no permission. */
  outputFailed: 6,
  /** gate (and the nhc reporter): the driver is in the known-bad registry for a behaviour the run checked. */
  knownBad: 7,
  /** gate: no record to judge against, or what moved did so while the GPU was shared. */
  inconclusive: 8,
  interrupted: 130,
} as const;

/**
 * Every error code, with its class: the one table that exit statuses, verdicts and JUnit use.
 * What each class means and which exit status it gives: docs/development.md, "Errors".
 */
export const errorCodes = {
  // the matrix file
  MATRIX_NOT_FOUND: 'configuration',
  MATRIX_SYNTAX: 'configuration',
  MATRIX_TOO_COMPLEX: 'configuration',
  MATRIX_UNKNOWN_KEY: 'configuration',
  MATRIX_TYPE: 'configuration',
  MATRIX_INVALID: 'configuration',
  MATRIX_VERSION: 'configuration',
  MATRIX_DUPLICATE_TARGET: 'configuration',
  MATRIX_UNKNOWN_PROBE: 'configuration',
  MATRIX_UNKNOWN_TRANSPORT: 'configuration',
  MATRIX_UNKNOWN_FACT: 'configuration',
  MATRIX_UNKNOWN_PARAM: 'configuration',
  MATRIX_SECRET: 'configuration',
  /** A file the matrix names (identityFile, knownHosts, sshConfig) is not there. */
  MATRIX_FILE_MISSING: 'configuration',
  // the command line and the plan
  USAGE: 'configuration',
  NO_CELLS: 'configuration',
  ENVIRONMENT_MISMATCH: 'configuration',
  // reaching targets
  TARGET_UNREACHABLE: 'infrastructure',
  HOST_KEY_MISMATCH: 'infrastructure',
  HOST_KEY_UNKNOWN: 'infrastructure',
  AUTH_FAILED: 'infrastructure',
  NVIDIA_RUNTIME_MISSING: 'infrastructure',
  /** Docker targets: the engine was reached but has not the image (or the base of docker/Dockerfile), and pull is off. */
  DOCKER_IMAGE_MISSING: 'infrastructure',
  /** WSL targets: wsl.exe is not on PATH (of this machine, or of the hop before). */
  WSL_NOT_FOUND: 'infrastructure',
  /** WSL targets: wsl.exe is there but WSL is not installed, too old, or has no distribution. */
  WSL_NOT_INSTALLED: 'infrastructure',
  /** WSL targets: no distribution of that name (or no default one). */
  WSL_DISTRO_NOT_FOUND: 'infrastructure',
  /** WSL targets: the distribution runs under WSL 1, which has no GPU: its cells are skipped. */
  WSL_VERSION_1: 'not-applicable',
  /** WSL targets: no /dev/dxg in the distribution (GPU paravirtualisation is off). */
  WSL_NO_GPU: 'infrastructure',
  /** WSL targets: no libcuda.so.1 under /usr/lib/wsl/lib (no NVIDIA driver on the Windows host). */
  WSL_NO_LIBCUDA: 'infrastructure',
  /** Slurm targets: salloc is not on PATH (of this machine, or of the hop before): not a login node. */
  SLURM_NOT_FOUND: 'infrastructure',
  /** Slurm targets: salloc refused the job (a partition, account, QOS, GRES or node that is not there, or not allowed). */
  SLURM_JOB_REFUSED: 'configuration',
  /** Slurm targets: salloc's request could not be signed or was not accepted: munged down on the login node, or a key not the cluster's. */
  SLURM_AUTH_FAILED: 'infrastructure',
  /** Slurm targets: salloc could not reach the cluster's controller (slurmctld down, or out of reach of the login node). */
  SLURM_CONTROLLER_UNREACHABLE: 'infrastructure',
  /** Slurm targets: the job waited in the queue longer than queueWait (the message has Slurm's reason); it was cancelled. */
  SLURM_QUEUE_TIMEOUT: 'infrastructure',
  /** Slurm targets: the job's node went down or was drained while a probe ran there. */
  SLURM_NODE_DOWN: 'infrastructure',
  /** Slurm targets: the job ended under a probe (cancelled from outside, past its time limit), or was cancelled while it waited. */
  SLURM_JOB_ENDED: 'infrastructure',
  TRANSPORT_FAILED: 'infrastructure',
  /** gha merge: a job of the fanned-out run left no event log, or one that stops short (runner lost, job killed). */
  JOB_LOST: 'infrastructure',
  PROBE_BUILD_FAILED: 'infrastructure',
  PROBE_MISSING: 'infrastructure',
  /** A bug in cudamatrix, caught so that it ends one target and not the run. */
  INTERNAL: 'infrastructure',
  // running probes
  PROBE_CRASHED: 'probe',
  PROBE_TIMEOUT: 'probe',
  PROBE_PROTOCOL: 'probe',
  // results
  EVENTS_INVALID: 'configuration',
  EVENTS_TOO_NEW: 'configuration',
  /** A behaviour record (records/driver-<v>/*.json) that cannot be read, or is of a newer schema. */
  RECORD_INVALID: 'configuration',
  /**
   * cudamatrix record: a record holds a value that cannot be true (behaviour/plausibility.ts: faster than its
   * PCIe link, more memory than the device or host has, a clock step of zero); nothing is written.
   */
  RECORD_IMPLAUSIBLE: 'configuration',
  /** cudamatrix diff: a side holds no GPU observation, or no record of one side pairs with one of the other (exit 2, not "same"). */
  NOTHING_TO_COMPARE: 'configuration',
  /** cudamatrix merge: the same event log twice, or two logs of one run id and shard. */
  MERGE_DUPLICATE: 'configuration',
  /** cudamatrix merge: two logs planned the same cell (target/probe). */
  MERGE_OVERLAP: 'configuration',
  /** cudamatrix merge: logs of different cudamatrix versions, or of matrices that disagree. */
  MERGE_MISMATCH: 'configuration',
  /** cudamatrix export: two inputs hold a target of the same name (one folder per target). */
  EXPORT_DUPLICATE_TARGET: 'configuration',
  /** A file the command writes (an event log, JUnit, JSON, a record, the report) could not be written: a full disk, no permission. */
  OUTPUT_FAILED: 'output',
  INTERRUPTED: 'interrupted',
} as const satisfies Record<string, ErrorClass>;

export type ErrorClass = 'configuration' | 'infrastructure' | 'probe' | 'interrupted' | 'output' | 'not-applicable';
export type ErrorCode = keyof typeof errorCodes;

/** The class of a code; codes not in the table (from a newer event log) count as infrastructure. */
export function errorClassOf(code: string): ErrorClass {
  return (errorCodes as Record<string, ErrorClass>)[code] ?? 'infrastructure';
}

/**
 * Whether a target that fails with this code is skipped rather than failed: it cannot run
 * these probes by its nature (class not-applicable), so the run engine ends its cells as
 * skipped with the error's message as the reason, and the run does not fail because of it.
 */
export function isNotApplicable(code: string): boolean {
  return errorClassOf(code) === 'not-applicable';
}

/**
 * The exit status for an error of this code that ends a command. A not-applicable code only
 * gets here from a command about that one target (doctor --target): exit 3, it cannot be used;
 * in a run the engine turns it into skipped cells and never throws it.
 */
export function exitCodeForCode(code: string): number {
  const cls = errorClassOf(code);
  if (cls === 'interrupted') return ExitCode.interrupted;
  if (cls === 'output') return ExitCode.outputFailed;
  return cls === 'configuration' ? ExitCode.configuration : ExitCode.infrastructure;
}

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
    return errorClassOf(this.code) === 'configuration';
  }
}

export function exitCodeFor(error: unknown): number {
  return error instanceof CudamatrixError ? exitCodeForCode(error.code) : ExitCode.infrastructure;
}

/** The message of any thrown value, with the chain of causes (and their codes), for logs and reports. */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    if (current instanceof Error) {
      const prefix = current instanceof CudamatrixError && depth > 0 ? `${current.code}: ` : '';
      const message = current.message;
      // A cause the message already quotes ("cannot reach h: connect ECONNREFUSED ...") is not said twice.
      if (depth === 0 || !parts.some((part) => part.includes(message))) parts.push(prefix + message);
      current = current.cause;
    } else {
      parts.push(String(current));
      break;
    }
  }
  return parts.join(' (cause: ') + ')'.repeat(Math.max(0, parts.length - 1));
}
