#!/bin/bash
# bench/device_s34c.sh — session 34's third device call (the final tree):
# the gpu ctest, the GPU fuzzer's gather_tf32 and across variants (the
# pairs where a thread a point became 8), then suite parts for fast_1 while
# $LIMIT (default 400) seconds last.  Needs build/gpu.
LIMIT=${LIMIT:-400}
. bench/steps.sh
step 100 bench/device_run.sh gpu
FUZZ_VARIANTS=gather_tf32,across FUZZ_TIME=60 FUZZ_SEEDS=50001:60001 step 100 bench/device_run.sh fuzz
SUITE_PARTS="reduction,loss norm conv_fusion" SUITE_TIME=$((SECONDS + 150)) step 200 bench/device_run.sh suite
