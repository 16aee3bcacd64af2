#!/usr/bin/env bash
# The probe suite's GPU run, on the lent H200 machine: the whole default matrix through
# `cudamatrix run` (timed), then bench/probe-accuracy (cudaprobe against PyTorch in the same
# run). Carry .gpu (the packed node) and dist (pnpm build). Everything lands under $OUT.
set -uo pipefail
xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && export PATH=/tmp:$PATH
export CUDAMATRIX_CACHE=/tmp/cmcache
start=$(date +%s%N)
node dist/cudamatrix.mjs run --results-dir "$OUT/runs" --junit "$OUT/junit.xml" "$@" 2>&1 | tee "$OUT/console.txt"
code=${PIPESTATUS[0]}
echo "exit: $code; wall: $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$OUT/console.txt"
node dist/probe-accuracy.mjs --out "$OUT/probe-accuracy.json" 2>&1 | tee "$OUT/probe-accuracy.txt"
