/**
 * The command agent's sh script, shared by the transports that keep one long-lived shell per
 * session (WSL: a wsl.exe; Slurm: the job's lifeline step) and run the session's commands
 * through it, for the cost of a fork instead of a wsl.exe or an srun. POSIX sh with base64,
 * setsid and /proc (dash and coreutils; busybox). Each transport gives the lines it prints
 * first (its look around) and how it picks the folder of the work directory.
 */

/** One line: the statements joined with "; " ("a &" already ends its statement: "a &; b" is a syntax error). */
export function joinStatements(statements: string[]): string {
  return statements.map((st, i) => (i === statements.length - 1 ? st : st.endsWith('&') ? `${st} ` : `${st}; `)).join('');
}

/**
 * Whether this shell's parent (the relay of a wsl.exe, a Slurm step's slurmstepd) is still
 * there: it is, while this shell has not been reparented (its PPid in /proc is still the one it
 * started with). `kill -0` would not do: the parent may run as root, and a command run as
 * another user may not signal it. Without /proc, `kill -0` is the fallback. In a subshell $$
 * and $PPID are still the script's own.
 */
export const ALIVE =
  'alive() { if [ -r /proc/$$/stat ]; then read -r x x x p x < /proc/$$/stat; [ "$p" = "$PPID" ]; else kill -0 $PPID 2>/dev/null; fi; }';

export interface AgentScriptSpec {
  /** Names its answers: "cm-TAG-start", "cm-TAG-done". */
  tag: string;
  /** Statements that each print one line; the first prints the hello marker (agent.ts reads the rest). */
  lookAround: string[];
  /** Statements that set t to the folder the work directory is made in. */
  pickTmp: string[];
  /**
   * A newline after each command's output: where the stream is line-buffered on its way (a
   * Slurm step's output, which slurmstepd sends on by whole lines), output that does not end in
   * one would wait there for the next command's.
   */
  trailer: boolean;
}

/**
 * The agent ($1: nonce, $2: the work directory's name under t): it prints the look around, then
 * the work directory it made (mode 700), then reads requests from stdin, one per line:
 *
 *   run NONCE SCRIPT    SCRIPT: base64 of a sh script (the controller writes `cd DIR && exec ARGV`)
 *   text NONCE SCRIPT   SCRIPT as it is: one line, without blanks at either end
 *   stop NONCE          TERM to that command's process group, KILL 2 s later
 *
 * It runs each command in the background (the controller sends one at a time: the answers of
 * two would mix), with stdin from /dev/null, stdout and stderr into files, in a session and
 * process group of its own, and answers
 *
 *   cm-TAG-start NONCE PID
 *   cm-TAG-done NONCE STATUS OUTLEN ERRLEN
 *   then OUTLEN bytes of stdout and ERRLEN bytes of stderr (and a newline with `trailer`)
 *
 * When its stdin ends (the session disposed, the hop before dropped), on TERM/HUP/INT, and when
 * a watcher sees the agent reparented (its parent killed), it kills what runs and removes the
 * work directory.
 */
export function agentStatements(spec: AgentScriptSpec): string[] {
  const { tag } = spec;
  return [
    ALIVE,
    ...spec.lookAround,
    ...spec.pickTmp,
    'd=${t%/}/$2',
    'a=$d/.cm-agent',
    // With "$1": TERM, else KILL, to every running command's process group.
    'signalall() { set +f; for f in "$a"/*.pid; do if [ -s "$f" ]; then kill -${1:-KILL} -$(cat "$f") 2>/dev/null; fi; done; }',
    'stopall() { signalall; rm -rf "$d"; }',
    `trap 'exit 143' TERM HUP INT`,
    'mkdir -m 700 "$d" || exit 1',
    'mkdir "$a" || exit 1',
    `printf '%s\\n' "$d"`,
    '( while alive; do sleep 1; done; signalall TERM; sleep 2; stopall ) </dev/null >/dev/null 2>&1 &',
    'w=$!',
    `trap 'kill $w 2>/dev/null; stopall' EXIT`,
    [
      'while read -r o n s; do case $o in',
      'run|text)',
      // Few processes per command (each fork and exec costs milliseconds on a busy node): a
      // script of one line as it is (text), the output files reused (one command at a time),
      // both lengths from one wc, in $a.
      `( cd "$a" || exit; if [ "$o" = run ]; then printf '%s' "$s" | base64 -d > cmd.sh; else printf '%s\\n' "$s" > cmd.sh; fi;`,
      'setsid sh cmd.sh </dev/null >out 2>err &',
      'p=$!;',
      `printf '%s\\n' "$p" > "$n.pid";`,
      `printf 'cm-${tag}-start %s %s\\n' "$n" "$p";`,
      'wait $p;',
      'c=$?;',
      // Removed, not emptied: a file made here while the EXIT trap's rm -rf walks $a would leave
      // the work directory behind (and a stale pid must not be signalled: its group may be reused).
      'rm -f "$n.pid";',
      'set -- $(wc -c out err);',
      `printf 'cm-${tag}-done %s %s %s %s\\n' "$n" "$c" "$1" "$3";`,
      spec.trailer ? `cat out err; printf '\\n' ) & ;;` : 'cat out err ) & ;;',
      'stop)',
      'if [ -s "$a/$n.pid" ]; then p=$(cat "$a/$n.pid"); ( kill -TERM -$p 2>/dev/null; sleep 2; kill -KILL -$p 2>/dev/null ) </dev/null >/dev/null 2>&1 & fi ;;',
      'esac; done',
    ].join(' '),
  ];
}
