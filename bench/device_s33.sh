#!/bin/bash
# bench/device_s33.sh — session 33's first device call, most important first,
# each step only while $LIMIT seconds (default 540) are not spent: the gpu
# ctest (gpu/verify's pack cases, first GPU run), the column sums' kernel
# shapes (bench/micro/colsum.cu) against torch.sum, the A/B queue
# (bench/ab_queue_session33.txt: session 31-32 against f52ad44, the packs on
# the suite's other matmuls), cuBLAS at 4096^3 in the same call as the
# queue's matmul_bias_gelu (torch_mm.py), tools/demo.sh's table.
# Needs build/gpu and build/gpu-base (tools/gpu_build.sh f52ad44).
OUT=${OUT:-/tmp/out}
LIMIT=${LIMIT:-540}
export KBC_LIB=$PWD/build/gpu/libkbc.so
left() { echo $((LIMIT - SECONDS)); }
step() { # SECONDS_AT_MOST COMMAND...: runs it if that much time is left
  local t=$1; shift
  [ "$(left)" -ge "$t" ] || { echo "(skipped, $(left) s left: $*)"; return; }
  echo "== $* ($SECONDS s)"; timeout "$t" "$@"
}
step 100 bench/device_run.sh gpu
step 60 bench/device_run.sh colsum
AB_QUEUE=bench/ab_queue_session33.txt AB_TIME=200 AB_TIMEOUT=140 step 300 bench/device_run.sh abq
step 30 python3 bench/micro/torch_mm.py 2>&1 | tee $OUT/torch_mm.txt
step 90 bench/device_run.sh reach
