#!/bin/bash
# bench/device_s38b.sh — session 38's third call: SAM-HQ 7x7 b1's GEMMs of
# 49 rows (qkv, go, grad_hidden_states, grad_qkv_weight: 60% of its
# kernel time at ~10 TFLOP/s, H200) under the other K loops: wgmma for
# small products (KBC_GEMM_WGMMA=2) and FFMA (KBC_FP32_MMA=0), A/B.
LIMIT=${LIMIT:-250}
. bench/steps.sh
for sw in KBC_FP32_MMA=0 KBC_GEMM_WGMMA=2; do
  AB_ITERS=50 step 120 bash -c "bench/ab.sh build/gpu build/gpu:$sw bench/ab_cases_s38c.txt 2>&1 | sed 's/^/$sw /' | tee -a $OUT/ab.txt | tail -7"
done
