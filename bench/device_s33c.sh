#!/bin/bash
# bench/device_s33c.sh — session 33's third device call: the suite's
# convolutions (conv, conv_fusion, conv_transpose) checked against PyTorch
# and timed against eager, with two more kbc columns: 3xTF32 for every
# contraction at fp32 (KBC_FP32_MMA=1: convolutions are FFMA by default
# since 2026-12-02's H200 measurement, gemm_plan.c) and the gathered
# operand read from a box wherever it fits (KBC_GEMM_WIN=2).
OUT=${OUT:-/tmp/out}
export KBC_LIB=$PWD/build/gpu/libkbc.so
for part in conv conv_fusion conv_transpose; do
  timeout 200 python3 bench/suite.py --problems $part --no-compile --quick --max-seconds 1 \
    --kbc-env KBC_FP32_MMA=1 --kbc-env KBC_GEMM_WIN=2 \
    --json $OUT/suite_$part.json --markdown $OUT/suite_$part.md >$OUT/suite_$part.txt 2>&1
  echo "== $part at $SECONDS s"; grep -E "^\| L" $OUT/suite_$part.md | cut -d'|' -f2,6,7,8,11,13,14,15,16
done
