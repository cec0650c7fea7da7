#!/bin/bash
# bench/device_s34.sh — session 34's first device call, most important first,
# each step only while $LIMIT seconds (default 570) are not spent: the GPU
# fuzzer's gather variants (convolutions on wgmma, KBC_GEMM_GATHER=1, never
# run on a GPU before), the A/B queue bench/ab_queue_session34.txt (SAM-HQ's
# table gradients on 3xTF32, the short-K window at tf32, the teams apart
# against session 32, the gather's default) and the column-sum micro kernels.
# Needs build/gpu and build/gpu-base (tools/gpu_build.sh 9c12072).
LIMIT=${LIMIT:-570}
. bench/steps.sh
FUZZ_VARIANTS=gather,gather_tf32 FUZZ_TIME=90 FUZZ_SEEDS=20001:30001 step 140 bench/device_run.sh fuzz
cp $OUT/fuzz.txt $OUT/fuzz_gather.txt 2>/dev/null
verify_gather() {
  sed -e 's/#.*//' -e '/^[[:space:]]*$/d' bench/gather_verify.txt | while read -r spec args; do
    for prec in fp32 tf32; do
      echo "$prec $spec $args: $(KBC_GEMM_GATHER=1 KBC_SPECIALIZE=1 timeout 40 build/gpu/kbc verify $spec $args --precision $prec 2>&1 | tail -n 2 | tr '\n' ' ')"
    done
  done | tee $OUT/gather_verify.txt
}
export -f verify_gather; export OUT; step 90 bash -c verify_gather
AB_QUEUE=bench/ab_queue_session34.txt AB_TIME=$((SECONDS + 270)) AB_TIMEOUT=120 step 380 bench/device_run.sh abq
step 50 bench/device_run.sh colsum
# the GPU fuzzer over session 33's new defaults (3xTF32 convolutions, the
# short-K window, teams apart), never fuzzed on a GPU as defaults
FUZZ_VARIANTS=fp32,spec,win_pipe FUZZ_TIME=60 FUZZ_SEEDS=30001:40001 step 100 bench/device_run.sh fuzz
