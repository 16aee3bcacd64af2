/**
 * The shell scripts the WSL transport runs inside a distribution. Every one goes through
 * wsl.exe's --exec as `sh -c BOOT SCRIPT ARGS...`: BOOT is a fixed one-liner that decodes SCRIPT
 * (base64, so that no quote or line break of ours has to survive PowerShell, cmd or wsl.exe's
 * own Windows command-line parsing on the way) and runs it with ARGS as its arguments. They are
 * written for any POSIX sh with base64, setsid and /proc: dash and coreutils as in Ubuntu, and
 * busybox as in the tests' stand-in distributions.
 */
import { agentStatements, ALIVE, joinStatements } from '../agent/script.ts';

/**
 * Decodes $0 (base64) and evaluates it in this shell, so that "$1"… are the arguments. The
 * decoded text is split into words and joined with spaces by eval: the scripts below are one
 * line, their statements separated by ";", with no runs of spaces that matter.
 */
const BOOT = 'set -f; eval $(echo $0 | base64 -d)';

/** A script for BOOT: its statements joined into one line. */
function script(...statements: string[]): string {
  const line = joinStatements(statements);
  if (/[\r\n\t]| {2}/.test(line)) throw new Error('a WSL script must be one line without runs of spaces');
  return Buffer.from(line, 'utf8').toString('base64');
}

/** argv for wsl.exe's --exec: sh running `body` (one of the scripts here) with these arguments. */
export function shArgv(body: string, ...args: string[]): string[] {
  return ['sh', '-c', BOOT, body, ...args];
}

/** The look around at connect, printed after the line "cm-wsl-info-NONCE" ($1): see INFO_LINES. */
const LOOK_AROUND = [
  `printf 'cm-wsl-info-%s\\n' "$1"`,
  'uname -m',
  'if [ -e /dev/dxg ]; then echo 1; else echo 0; fi',
  'if [ -e /usr/lib/wsl/lib/libcuda.so.1 ]; then echo 1; else echo 0; fi',
  `printf '%s\\n' "\${TMPDIR:-/tmp}"`,
  `printf '%s\\n' "\${XDG_CACHE_HOME:-$HOME/.cache}"`,
];
/** The lines after the info marker: machine, /dev/dxg (1/0), libcuda.so.1 (1/0), TMPDIR, cache folder. */
export const INFO_LINES = 5;

/** The look around alone ($1: nonce): to say why the agent did not start. */
export const INFO = script(...LOOK_AROUND);

/**
 * The agent (../agent/script.ts; $1: nonce, $2: the work directory's name under TMPDIR): one
 * long-lived sh per session that runs the session's commands, so that a command costs a fork in
 * the distribution instead of a wsl.exe start (about 85 ms with the tests' stand-in; real
 * wsl.exe is not faster). Its stdin ends when the session is disposed, and also when the hop
 * before drops (wsl.exe passes the end of its own stdin on): then it kills what runs and removes
 * the work directory. When its wsl.exe is killed, a watcher that sees the agent reparented does
 * the same; killing wsl.exe does not end the Linux side by itself (microsoft/WSL#2496).
 */
export const AGENT = script(...agentStatements({ tag: 'wsl', lookAround: LOOK_AROUND, pickTmp: ['t=${TMPDIR:-/tmp}'], trailer: false }));

/**
 * The guard around a command that runs through a wsl.exe of its own (one with stdin, one while
 * the agent is busy, every command where no agent can run): $1 nonce, $2 directory, then the
 * argv. It marks the command's start on stderr, runs it in a session of its own with this stdin,
 * and a watcher kills its process group when the guard's parent (the relay of wsl.exe) is gone.
 */
export const GUARD = script(
  ALIVE,
  `printf 'cm-wsl-run-%s\\n' "$1" >&2`,
  'cd "$2" || exit 125',
  'shift 2',
  'exec 3<&0',
  'setsid "$@" <&3 3<&- &',
  'pid=$!',
  'exec 3<&-',
  '( while alive; do sleep 1; done; kill -TERM -$pid 2>/dev/null; sleep 2; kill -KILL -$pid 2>/dev/null ) </dev/null >/dev/null 2>&1 &',
  'w=$!',
  'wait $pid',
  'c=$?',
  // Ended while its wsl.exe is still there: the watcher goes. Else it still has a KILL to send.
  'if alive; then kill $w 2>/dev/null; fi',
  'exit $c',
);

/**
 * The guardian of the work directory when there is no agent ($1: the directory): makes it, and
 * removes it when it ends. It ends when its parent (the relay of its wsl.exe) is gone, on
 * TERM/HUP/INT, or when writing to wsl.exe fails. It writes a line every 2 s: a relay whose own
 * reader has gone (a hop's channel closed) finds that out when it writes, and ends.
 */
export const GUARDIAN = script(
  ALIVE,
  'd=$1',
  `trap 'rm -rf "$d"' EXIT`,
  `trap 'exit 143' TERM HUP INT`,
  `trap 'exit 141' PIPE`,
  'mkdir -m 700 "$d" || exit 1',
  `while alive; do printf '\\n' || exit 141; sleep 2; done`,
);

/** Waits until the guardian has made the directory ($1), for at most $2 tenths of a second. */
export const WAIT_DIR = script(
  'i=0',
  'while [ ! -d "$1" ]; do i=$((i+1)); [ $i -gt $2 ] && exit 1; sleep 0.1 2>/dev/null || sleep 1; done',
);

export const RM_DIR = script('rm -rf "$1"');
export const WRITE_FILE = script('base64 -d > "$1" && chmod $2 "$1"');
export const READ_FILE = script('base64 < "$1"');
export const SHA_OF = script('if [ -f "$1" ]; then sha256sum "$1"; else echo -; fi');
export const MAKE_DIRS = script('mkdir -p "$1"');
export const MOVE_AND_HASH = script('mv -f "$1" "$2" && sha256sum "$2"');
