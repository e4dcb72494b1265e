#!/usr/bin/env bash
# Every GPU check of the course in one call, for a session that is lent an H200.
#
# On the device machine (CuPy 14 for CUDA 13 and NumPy are already installed there;
# no Jupyter), from the repository root:
#
#     bash benchmarks/gpu_all.sh "$OUT"
#
# It runs, each with its own time limit so one failure cannot eat the lease:
#   1. benchmarks/run.py --skip-notebooks : backend, measured ceilings, the batch-sweep
#      kernel's correctness and its measured / predicted time per batch at H200 sizes
#      (issue 2; chapter 1 and chapter 8's prefill-vs-decode use the same kernel);
#   2. benchmarks/gpu_attention.py : the decode-attention kernel, dense and block-sparse,
#      against context, as a fraction of the measured copy bandwidth (issue 3, chapter 2);
#   3. benchmarks/gpu_moe.py : the grouped expert matmul against batch (issue 3, chapter 3).
# Results land in $OUT (copy them to benchmarks/results/ and commit them).
set -uo pipefail
out="${1:-benchmarks/results}"
mkdir -p "$out"
export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 LLMMATH_DEVICE=gpu
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$out/gpu-info.txt"
status=0
run() {  # name, limit in seconds, command...
  local name=$1 limit=$2; shift 2
  echo "=== $name (limit ${limit}s)"
  if ! timeout "$limit" "$@" 2>&1 | tee "$out/$name.log"; then status=1; echo "=== $name FAILED"; fi
}
run gpu-h200 150 python3 benchmarks/run.py --skip-notebooks --out "$out/gpu-h200.txt"
run gpu-attention-h200 150 python3 benchmarks/gpu_attention.py --out "$out/gpu-attention-h200.txt"
run gpu-moe-h200 150 python3 benchmarks/gpu_moe.py --out "$out/gpu-moe-h200.txt"
exit $status
