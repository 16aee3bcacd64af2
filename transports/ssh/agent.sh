#!/bin/sh
# The POSIX agent of an SSH session (transports/ssh/posix-host.ts speaks to it): the one
# long-lived channel of a session. On a busy host every channel costs an sshd fork (about 110 ms
# of CPU each on the 2-core development machine), so it does everything a session needs.
# Started as `sh -c SCRIPT cudamatrix-helper TAG NONCE`, less the lines that begin with #.
#   - At start it makes the run directory and prints "cm-setup-NONCE OS ARCH DIR" (and
#     "cm-setup-NONCE" on stderr): whatever the login shell's rc files printed comes before.
#   - "check KEY NAME": the SHA-256 and directory of a cached file ("cm-cache SHA DIR").
#   - "run NONCE ARGS...": ARGS is shell-quoted (cwd first, then argv). The command runs in a
#     session and process group of its own; its stdout and stderr go straight to the channel,
#     and then the agent marks their ends with "\ncm-exit-NONCE CODE" and "cm-err-end-NONCE".
#     While it runs, a watcher reads stdin: "stop" (a timeout, a cancellation, an output flood)
#     kills the group; end of input (the connection dropped) kills it and removes the directory.
#   - End of input when idle (the session is disposed, or the connection dropped) removes the
#     run directory; so does a write to a connection that went away (SIGPIPE).
d="${TMPDIR:-/tmp}/cudamatrix-$1-$$"
mkdir -m 700 "$d" || exit 1
# Whether the agent ends at the end of its input or by writing to a connection that went away
# (SIGPIPE, e.g. its setup line after cudamatrix gave up on it), the directory goes. No trap
# for TERM: a child (the watcher) killed with TERM right after its fork would inherit the trap
# for a moment and could lose the signal.
# shellcheck disable=SC2154 # $d is set above; the trap runs later
trap 'rm -rf -- "$d"' EXIT; trap 'exit 141' PIPE
os=unknown; [ -r /proc/sys/kernel/ostype ] && read -r os </proc/sys/kernel/ostype
# The setup lines carry the session's nonce ($2), written so that the command line itself does
# not contain "cm-setup-NONCE": what a login script prints before them is told apart.
printf "cm-setup-%s\n" "$2" >&2
printf "cm-setup-%s %s %s %s\n" "$2" "$os" "$(uname -m)" "$d"
# A newline, for the one-line "run" requests ("$nl" in an argument: quoteForLine).
# shellcheck disable=SC2034 # used by the eval of a request
nl='
'
exec 3<&0 </dev/null
while IFS= read -r line <&3; do
  case "$line" in
  check\ *)
    # shellcheck disable=SC2086 # "check KEY NAME": split into words on purpose
    set -- $line
    c="${XDG_CACHE_HOME:-$HOME/.cache}/cudamatrix/deployed/$2"
    h=-; [ -f "$c/$3" ] && h=$(sha256sum "$c/$3") && h=${h%% *}
    printf "cm-cache %s %s\n" "$h" "$c" ;;
  run\ *)
    rest=${line#run }; nonce=${rest%% *}; rest=${rest#* }
    eval "set -- $rest"
    # shellcheck disable=SC2016 # $$ and $@ are the inner sh's
    ( cd "$1" || exit 125; shift; exec setsid sh -c 'printf "cm-started %s\n" "$$"; exec "$@"' cm "$@" ) 3<&- &
    pid=$!
    ( while IFS= read -r l; do [ "$l" = stop ] && { kill -TERM -"$pid" "$pid"; sleep 2; kill -KILL -"$pid" "$pid"; }; done
      kill -TERM -"$pid" "$pid"; rm -rf -- "$d"; sleep 2; kill -KILL -"$pid" "$pid" ) <&3 >/dev/null 2>&1 &
    watch=$!
    wait "$pid"; code=$?
    kill "$watch" 2>/dev/null; wait "$watch" 2>/dev/null
    printf "cm-err-end-%s\n" "$nonce" >&2
    printf "\ncm-exit-%s %s\n" "$nonce" "$code" ;;
  esac
done
