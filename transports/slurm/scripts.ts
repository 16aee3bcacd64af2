/**
 * The sh scripts the Slurm transport runs on the node, each as `sh -c SCRIPT sh ARGS...` (the
 * session before quotes every word for its own shell). POSIX sh and coreutils only.
 */
import { agentStatements, joinStatements } from '../agent/script.ts';

/** One line: the statements joined with "; ". */
const script = (...statements: string[]) => statements.join('; ');

/** The lines the lifeline's agent prints after "cm-slurm-info-NONCE": the job id, the node, uname -m. */
export const LIFELINE_INFO_LINES = 3;

/**
 * The lifeline, step 0 of the job ($1: nonce, $2: the work directory's name under TMPDIR): the
 * command agent (../agent/script.ts) in the job's first step, so that the session's commands run
 * on the node for the cost of a fork instead of an srun each. It prints
 *
 *   cm-slurm-info-NONCE, then JOBID, NODE, MACHINE and WORKDIR, a line each
 *
 * (the work directory made under the job's TMPDIR when it is a writable folder, else /tmp),
 * then runs the commands it is sent on its stdin, which srun forwards from salloc's, which is
 * cudamatrix's (or the SSH channel's). When that ends (the session closed, cudamatrix killed,
 * the SSH hop lost) it kills what runs, removes the directory and exits; salloc, whose command
 * it is, then gives the allocation back, and Slurm ends every step still in it. Slurm's TERM
 * (scancel, the time limit, a node taken down) does the same. Its output reaches srun by whole
 * lines (slurmstepd buffers a step's output so), hence a newline after each command's output.
 */
export const LIFELINE = joinStatements(
  agentStatements({
    tag: 'slurm',
    lookAround: [`printf 'cm-slurm-info-%s\\n' "$1"`, `printf '%s\\n' "$SLURM_JOB_ID" "$SLURMD_NODENAME"`, 'uname -m'],
    pickTmp: ['t=${TMPDIR:-/tmp}', '{ [ -d "$t" ] && [ -w "$t" ]; } || t=/tmp'],
    trailer: true,
  }),
);

/**
 * Runs a command as a step ($1: nonce, $2: directory, then the argv) and puts its exit status on
 * stderr as "cm-slurm-exit-NONCE STATUS", then exits 0: srun adds lines of its own to stderr for
 * a task that exits non-zero, and a step without the marker did not run to its end (the job or
 * the node went away). A directory that is not there is exit status 125 (srun would run it in
 * /tmp instead).
 */
export const STEP = script(
  'n=$1',
  `cd "$2" || { printf 'cm-slurm-exit-%s 125\\n' "$n" >&2; exit 0; }`,
  'shift 2',
  '"$@"',
  'c=$?',
  `printf 'cm-slurm-exit-%s %s\\n' "$n" "$c" >&2`,
  'exit 0',
);

export const WRITE_FILE = script('base64 -d > "$1" && chmod $2 "$1"');
export const READ_FILE = 'base64 < "$1"';
