#!/usr/bin/env bash
# The foundation's GPU run, on the lent H200 machine (no Node.js there: the packed node from
# ../shared/gpu/pack-node.sh is carried as .gpu/, and the bundled CLI as dist/).
# Writes the run's events and JUnit, the doctor report, and nvidia-smi's own view of the same
# facts (a peer to check sysinfo against) under $OUT.
set -uo pipefail
xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && export PATH=/tmp:$PATH
export CUDAMATRIX_CACHE=/tmp/cmcache
node dist/cudamatrix.mjs run --results-dir "$OUT/runs" --junit "$OUT/junit.xml" 2>&1 | tee "$OUT/console.txt"
echo "exit: ${PIPESTATUS[0]}" >> "$OUT/console.txt"
node dist/cudamatrix.mjs doctor > "$OUT/doctor.txt" 2>&1
{
  nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,driver_model.current,compute_cap --format=csv
  nvidia-smi | head -5
  cat /proc/driver/nvidia/version 2>/dev/null
  ls -la /usr/local/cuda/lib64/libcudart* 2>/dev/null
  ldconfig -p | grep -E 'libcuda.so|libnvidia-ml|libcudart'
  uname -a; cat /proc/version
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
} > "$OUT/peer.txt" 2>&1
cat "$OUT/doctor.txt" "$OUT/peer.txt"
