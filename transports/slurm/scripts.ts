/**
 * The sh scripts the Slurm transport runs on the node, each as `sh -c SCRIPT sh ARGS...` (the
 * session before quotes every word for its own shell). POSIX sh and coreutils only.
 */

/** One line: the statements joined with "; ". */
const script = (...statements: string[]) => statements.join('; ');

/**
 * The lifeline, step 0 of the job ($1: the work directory's name under TMPDIR, $2: nonce): makes
 * the work directory (mode 700), prints
 *
 *   cm-slurm-ready NONCE JOBID NODE MACHINE WORKDIR
 *
 * then reads its stdin, which srun forwards from salloc's, which is cudamatrix's (or the SSH
 * channel's). When that ends (the session closed, cudamatrix killed, the SSH hop lost) the script
 * removes the directory and exits; salloc, whose command it is, then gives the allocation back,
 * and Slurm ends every step still in it. Slurm's TERM (scancel, the time limit, a node taken
 * down) removes the directory too.
 */
export const LIFELINE = script(
  't=${TMPDIR:-/tmp}',
  '{ [ -d "$t" ] && [ -w "$t" ]; } || t=/tmp',
  'd=${t%/}/$1',
  `trap 'rm -rf "$d"' EXIT`,
  `trap 'exit 143' TERM HUP INT`,
  'mkdir -m 700 "$d" || exit 1',
  `printf 'cm-slurm-ready %s %s %s %s %s\\n' "$2" "$SLURM_JOB_ID" "$SLURMD_NODENAME" "$(uname -m)" "$d"`,
  'cat >/dev/null',
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
