#!/bin/bash
# Issue 22.1 on the H200: cudamatrix (bundled CLI, before and after the fix) SIGKILLed 5 s into
# `run -p pinned-vram,pinned-release,pinned-ceiling,transfer-bandwidth`; nvidia-smi's compute
# apps and the cudaprobe processes just before the kill, 1 s and 5 s after, then until clear.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/out}; mkdir -p "$out"
log=$out/readings.txt
: > "$log"
smi() {
  echo "== $1 (at $(date +%T.%N | cut -c1-12))" >> "$log"
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv >> "$log" 2>&1
  echo "-- cudaprobe processes (pid pgid ppid elapsed-s args):" >> "$log"
  ps -eo pid=,pgid=,ppid=,etimes=,args= | grep -E '[c]udaprobe (run|subject)|[s]h -c trap' >> "$log"
}
# Whatever an earlier try of this script left on this machine, by PID (all started by it).
for p in $(ps -eo pid=,args= | awk 'index($0, "/tmp/cm-") && !index($0, "awk") {print $1}'); do kill -9 "$p" 2>/dev/null; done
sleep 1
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; uname -r; /tmp/node --version; } >> "$log" 2>&1
for v in before after; do
  w=/tmp/cm-$v; rm -rf "$w"; mkdir -p "$w"; cp -r "$here/$v" "$w/pkg"
  echo "########## $v" >> "$log"
  smi "$v: before the start"
  cli() { ( cd "$w" && exec env CUDAMATRIX_CACHE="$w/pkg/cache" TMPDIR="$w" NO_COLOR=1 /tmp/node "$w/pkg/bin/cudamatrix.cjs" "$@" ); }
  # cudaprobe compiled first (this machine has g++), as the installed package has it prebuilt.
  cli doctor > "$w/doctor.txt" 2>&1
  ( cd "$w" && exec env CUDAMATRIX_CACHE="$w/pkg/cache" TMPDIR="$w" NO_COLOR=1 /tmp/node "$w/pkg/bin/cudamatrix.cjs" run -p pinned-vram,pinned-release,pinned-ceiling,transfer-bandwidth --results-dir "$w/runs" ) > "$w/console.txt" 2>&1 &
  pid=$!
  sleep 5
  smi "$v: 5 s in, just before SIGKILL of the CLI (pid $pid: $(ps -o args= -p $pid | cut -c1-60))"
  kill -9 "$pid"
  sleep 0.2; echo "CLI $pid after SIGKILL: $(ps -o stat=,args= -p $pid | cut -c1-40 || true) (nothing: gone)" >> "$log"
  sleep 1; smi "$v: 1 s after SIGKILL"
  sleep 4; smi "$v: 5 s after SIGKILL"
  for i in $(seq 1 40); do
    sleep 1
    nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . || break
  done
  smi "$v: clear, or 45 s after SIGKILL ($((5 + i)) s after)"
  echo "work folders left in $w: $(ls -d "$w"/cudamatrix-* 2>/dev/null | wc -l)" >> "$log"
  echo "-- console:" >> "$log"; cat "$w/console.txt" >> "$log"
  # What this run left, by PID (started here), so that the next run starts on a clear GPU.
  for p in $(ps -eo pid=,args= | awk -v w="$w" 'index($0, w) && !index($0, "awk") {print $1}'); do kill -9 "$p" 2>/dev/null; done
  sleep 1
done
tar -C /tmp -czf "$out/runs.tgz" cm-before/console.txt cm-before/doctor.txt cm-before/runs cm-after/console.txt cm-after/doctor.txt cm-after/runs 2>>"$log"
cat "$log"
