#!/bin/bash
# bench/device_s34b.sh — session 34's second device call, most important
# first, each step only while $LIMIT seconds (default 540) are not spent:
# the suite's 21 problems whose code changes at KernelBench's sizes (the
# gathered convolutions on wgmma by default, the long column sums 8
# threads apart with two partial sums) checked against PyTorch and timed
# against eager, with a KBC_GEMM_GATHER=0 column; the rows cases A/B
# against the session's base (build/gpu-base, 3a8dbfb); the GPU fuzzer on
# the new defaults.  Needs build/gpu and build/gpu-base
# (tools/gpu_build.sh 3a8dbfb).
LIMIT=${LIMIT:-540}
. bench/steps.sh
step 260 python3 bench/suite.py \
  --problems L1/47,L1/48,L1/49,L1/53,L2/14,L2/18,L2/33,L2/41,L2/84,L1/55,L1/56,L1/63,L1/67,L1/76,L1/80,L2/1,L2/4,L2/17,L2/35,L2/46,L2/52 \
  --no-compile --quick --max-seconds 1 --kbc-env KBC_GEMM_GATHER=0 \
  --json $OUT/suite_s34.json --markdown $OUT/suite_s34.md >$OUT/suite_s34.txt 2>&1
grep -E "^\| L" $OUT/suite_s34.md | cut -d'|' -f2,6,7,8,11,13,14,15,16
step 120 bench/ab.sh build/gpu-base build/gpu bench/ab_cases_across3.txt 2>&1 | tail -n +2 | cut -c1-50,70- | tee $OUT/ab_across3.txt
FUZZ_VARIANTS=fp32,across,gather FUZZ_TIME=60 FUZZ_SEEDS=40001:50001 step 100 bench/device_run.sh fuzz
