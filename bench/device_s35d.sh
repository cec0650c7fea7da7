#!/bin/bash
# bench/device_s35d.sh — session 35's fourth device call: KBC_GEMM_SMALL=1
# (group.c small_rule) verified at its cases, then timed against the
# default (bench/ab_cases_small.txt).  Needs build/gpu (tools/gpu_build.sh).
LIMIT=${LIMIT:-400}
. bench/steps.sh
step 120 bash -c 'sed -e "s/#.*//" -e "/^[[:space:]]*$/d" bench/ab_cases_small.txt | while read -r spec args; do
  r=$(KBC_GEMM_SMALL=1 timeout 60 build/gpu/kbc verify "$spec" $args --precision fp32 2>&1 | tail -n 1)
  echo "fp32 $spec $args: $r"; done | tee $OUT/small_verify.txt'
step 250 bash -c 'bench/ab.sh build/gpu build/gpu:KBC_GEMM_SMALL=1 bench/ab_cases_small.txt 2>&1 | tee $OUT/small_ab.txt'
