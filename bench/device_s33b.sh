#!/bin/bash
# bench/device_s33b.sh — session 33's second device call, most important
# first, each step only while $LIMIT seconds (default 560) are not spent:
# the gpu ctest (verify did not finish in the first call's 90 s), the
# suite's problems whose code KBC_ROWS_ACROSS's rule changes (checked
# against PyTorch, timed against eager and against KBC_ROWS_ACROSS=0), the
# rule's A/B on bench/ab_cases_across.txt, a thread a point against the
# team apart (bench/ab_cases_across2.txt), the GPU fuzzer's `across`
# variant, tools/demo.sh's table.  Needs build/gpu (tools/gpu_build.sh).
LIMIT=${LIMIT:-560}
. bench/steps.sh
step 180 bench/device_run.sh gpu
step 110 python3 bench/suite.py --problems L1/47,L1/48,L1/49,L1/53,L2/14,L2/18,L2/33,L2/41,L2/84,L2/23 \
  --no-compile --quick --max-seconds 1.5 --kbc-env KBC_ROWS_ACROSS=0 \
  --json $OUT/suite_across.json --markdown $OUT/suite_across.md >$OUT/suite_across.txt 2>&1
tail -13 $OUT/suite_across.md
step 90 bench/ab.sh build/gpu:KBC_ROWS_ACROSS=0 build/gpu bench/ab_cases_across.txt 2>&1 | tail -n +2 | cut -c1-50,70- | tee $OUT/ab_across.txt
step 40 bench/ab.sh build/gpu build/gpu:KBC_ROWS_ACROSS=2 bench/ab_cases_across2.txt 2>&1 | tail -n +2 | cut -c1-50,70- | tee $OUT/ab_across2.txt
step 40 bench/ab.sh build/gpu build/gpu:KBC_ROWS_ACROSS=2,KBC_UNROLL=8 bench/ab_cases_across2.txt 2>&1 | tail -n +2 | cut -c1-50,70- | tee $OUT/ab_across2u8.txt
FUZZ_TIME=80 FUZZ_SEEDS=11001:100001 FUZZ_VARIANTS=across step 110 bench/device_run.sh fuzz | tail -3
step 60 bench/device_run.sh reach
