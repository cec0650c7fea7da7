#!/bin/bash
# bench/device_s38b.sh — session 38's third call: SAM-HQ 7x7 b1's GEMMs of
# 49 rows (qkv, go, grad_hidden_states, grad_qkv_weight: 60% of its
# kernel time at ~10 TFLOP/s) under the other K loops, A/B and profiled.
LIMIT=${LIMIT:-540}
. bench/steps.sh
SAM7="specs/sam_hq_attn_relpos_bwd.kb --set batch_size=1 --set height=7 --set width=7"
for sw in KBC_GEMM_WGMMA=2 KBC_FP32_MMA=0 KBC_GEMM_MIN_BLOCKS=1; do
  AB_ITERS=100 step 120 bash -c "bench/ab.sh build/gpu build/gpu:$sw bench/ab_cases_s38b.txt 2>&1 | sed 's/^/$sw /' | tee -a $OUT/ab.txt | tail -9"
  step 30 bash -c "env $sw KBC_PROFILE=1 build/gpu/kbc bench $SAM7 --iters 20 2>&1 | grep -E 'qkv|_go|grad_hidden|grad_proj_w|total' | sed 's/^/$sw /' | tee -a $OUT/profile.txt"
done
step 100 bash -c "cd build/gpu && ctest -R 'gpu/verify' >$OUT/ctest.txt 2>&1; tail -3 $OUT/ctest.txt"
