#!/bin/bash
# bench/device_s35e.sh — session 35's last device call: the GPU fuzzer on
# the defaults with KBC_GEMM_SMALL=1, the rule's final form timed against
# KBC_GEMM_SMALL=0 (bench/ab_cases_small.txt) and from 2 rows
# (bench/ab_cases_small2.txt), then tools/demo.sh (the three workloads
# beside eager) in what time is left.  Needs build/gpu.
LIMIT=${LIMIT:-330}
. bench/steps.sh
FUZZ_VARIANTS=fp32,tf32,sm90a FUZZ_TIME=60 FUZZ_SEEDS=5001:100001 step 90 bench/device_run.sh fuzz
step 90 bash -c 'bench/ab.sh build/gpu:KBC_GEMM_SMALL=0 build/gpu bench/ab_cases_small.txt 2>&1 | tee $OUT/small_ab.txt'
step 60 bash -c 'bench/ab.sh build/gpu build/gpu:KBC_GEMM_SMALL=2 bench/ab_cases_small2.txt 2>&1 | tee $OUT/small2_ab.txt'
step $(( $(left) - 5 )) bash -c 'KBC_BUILD=build/gpu tools/demo.sh >$OUT/demo.txt 2>&1; tail -14 $OUT/demo.txt'
