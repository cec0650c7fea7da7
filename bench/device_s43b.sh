#!/bin/bash
# bench/device_s43b.sh — session 43's second call: the GPU fuzzer on the
# wgmma variants (the stages' ring, default on, and KBC_GEMM_OCC after the
# parked accumulators' room was fixed), the ring's A/B against 7599dae on
# every suite problem it changes, and KBC_GEMM_OCC=1 with
# KBC_GEMM_EP_PERIODIC=1 against the default.  Needs build/gpu and
# build/gpu-base (tools/gpu_build.sh 7599dae).
LIMIT=${LIMIT:-540}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
SAM="specs/sam_hq_attn_relpos_bwd.kb"
step 100 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 700001:760000 --jobs 16 \
  --variants occ,occ_tf32,wgmma,wgmma_tf32,spec --time-limit 80 --min-time 10 >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | grep -E '^FAIL|^\.\.\.' | tail -8"
AB_ITERS=30 step 120 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_OCC=1,KBC_GEMM_EP_PERIODIC=1 bench/ab_cases_occ2.txt 2>&1 | tee $OUT/ab_occ2.txt | tail -6; \
  bench/ab.sh build/gpu build/gpu:KBC_GEMM_OCC=1 bench/ab_cases_occ_suite.txt 2>&1 | tee $OUT/ab_occ_suite.txt | tail -3"
step 40 bash -c "KBC_GEMM_OCC=1 KBC_GEMM_EP_PERIODIC=1 KBC_PROFILE=1 build/gpu/kbc bench --iters 5 $SAM --set batch_size=4 --set height=64 --set width=64 >$OUT/sam64_profile.txt 2>&1; grep -E 'k3_s|k4_mx|k9_dp|k11_ds|total' $OUT/sam64_profile.txt"
AB_ITERS=20 step 260 bash -c "bench/ab.sh build/gpu-base build/gpu bench/ab_cases_ring.txt 2>&1 | tee $OUT/ab_ring.txt | tail -60"
