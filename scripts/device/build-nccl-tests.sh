#!/usr/bin/env bash
# Builds nccl-tests from vendor-src/nccl-tests (a git archive of
# NVIDIA/nccl-tests) for this machine's GPU architecture only (a minute
# instead of several), unless it is built already. Log in $OUT.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
[ -x vendor-src/nccl-tests/build/all_reduce_perf ] && exit 0
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
gencode=()
[ -n "$cc" ] && gencode=(NVCC_GENCODE="-gencode=arch=compute_$cc,code=sm_$cc")
(cd vendor-src/nccl-tests && make -j"$(nproc)" MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=/usr "${gencode[@]}") > "$OUT/nccl-tests-build.log" 2>&1 || {
  echo "nccl-tests build failed:"; tail "$OUT/nccl-tests-build.log"; exit 2; }
