#!/usr/bin/env bash
# Shakedown on the GPU machine: build cudaprobe there and run every probe directly, timing
# each; the raw JSON lines and stderr go to $OUT/raw.tar.gz.
set -uo pipefail
mkdir -p /tmp/raw
g++ -std=c++17 -O2 -static-libstdc++ -static-libgcc -pthread -o /tmp/cudaprobe probes/cudaprobe/*.cpp -ldl || exit 1
for p in $(/tmp/cudaprobe list | sed 's/.*"probe":"\([^"]*\)".*/\1/'); do
  t0=$(date +%s.%N)
  timeout 300 /tmp/cudaprobe run "$p" "$@" > /tmp/raw/$p.jsonl 2> /tmp/raw/$p.err
  rc=$?
  t1=$(date +%s.%N)
  printf '%-22s rc=%s %6.1fs facts: %s\n' "$p" "$rc" "$(echo "$t1 - $t0" | bc)" "$(grep -o '"type":"fact".*"name":"[^"]*","value":[^,}]*' /tmp/raw/$p.jsonl | sed 's/.*"name":"\([^"]*\)","value":\(.*\)/\1=\2/' | tr '\n' ' ')"
  grep -h '"type":"error"' /tmp/raw/$p.jsonl | head -3
  head -c 600 /tmp/raw/$p.err
done | tee /tmp/raw/summary.txt
tar czf "$OUT/raw.tar.gz" -C /tmp raw
