#!/usr/bin/env bash
# Issue 32's runs on the lent H200 (no Node.js there: .gpu/ from `pnpm gpu:prepare` is carried):
# the installed package's full default suite RUNS times, then, with --neighbour, once more beside
# bench/gpu_neighbour.py (another process allocating and freeing 1-3 GiB every ~0.2 s).
# Each run's folder is packed into $OUT/runs-<tag>.tgz with the console log beside it.
#
#   scripts/gpu-verdict-runs.sh TAG RUNS [--neighbour]
set -euo pipefail
tag=$1
runs=$2
neighbour=${3:-}
work=/tmp/cudamatrix-verdict
rm -rf "$work" && mkdir -p "$work/bin" "$work/runs"
xz -dc .gpu/node.xz > "$work/bin/node" && chmod +x "$work/bin/node"
tar -C "$work" -xJf .gpu/npm.tar.xz
"$work/bin/node" "$work/npm/bin/npm-cli.js" install --global --prefix "$work/prefix" --offline --no-audit --no-fund \
  --cache "$work/npm-cache" .gpu/cudamatrix.tgz > "$work/install.txt" 2>&1
export PATH="$work/bin:$PATH" HOME="$work" CUDAMATRIX_CACHE="$work/cache" NO_COLOR=1
cm="$work/prefix/bin/cudamatrix"
log="$OUT/verdict-$tag.log"
: > "$log"
for i in $(seq 1 "$runs"); do
  t0=$(date +%s)
  "$cm" run --results-dir "$work/runs" >> "$log" 2>&1 || echo "run $i: exit $?" >> "$log"
  echo "run $i: $(( $(date +%s) - t0 )) s" | tee -a "$log"
done
if [ "$neighbour" = "--neighbour" ]; then
  python3 bench/gpu_neighbour.py --seconds 600 > "$work/neighbour.txt" 2>&1 &
  pid=$!
  sleep 3
  t0=$(date +%s)
  "$cm" run --results-dir "$work/runs" >> "$log" 2>&1 || echo "neighbour run: exit $?" >> "$log"
  echo "neighbour run: $(( $(date +%s) - t0 )) s" | tee -a "$log"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  cat "$work/neighbour.txt" >> "$log"
fi
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv >> "$log" 2>&1 || true
uname -r >> "$log"
tar -C "$work" -czf "$OUT/runs-$tag.tgz" runs
