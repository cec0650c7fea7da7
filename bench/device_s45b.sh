#!/bin/bash
# bench/device_s45b.sh — session 45: the wgmma K loop's copies ahead
# (KBC_GEMM_XPREFETCH, default 3) checked on the GPU (kbc verify at shapes
# whose blocks take several tiles, the fuzzer's wgmma variants) and timed
# against 0 and each bit alone; the SAM-HQ 64x64 b4 profile.  Needs build/gpu.
LIMIT=${LIMIT:-400}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
SAM="specs/sam_hq_attn_relpos_bwd.kb"
step 60 bash -c "build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=1 --set height=16 --set width=32 2>&1 | tail -1; \
  build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=3 --set height=5 --set width=6 2>&1 | tail -1; \
  build/gpu/kbc verify tests/codegen/specs/gemm_lowrank.kb --set m=1000 --set a=7 --set b=32 --set k=64 2>&1 | tail -1; \
  build/gpu/kbc verify tests/codegen/specs/gemm_lowrank.kb --set m=4000 --set a=64 --set b=64 --set k=100 2>&1 | tail -1; \
  build/gpu/kbc verify specs/examples/attention_bwd.kb --set batch=2 --set heads=4 --set seq=700 2>&1 | tail -1; \
  build/gpu/kbc verify bench/suite/1_3_batched_matmul.kb --set batch=40 --set m=300 --set k=200 --set n=500 2>&1 | tail -1"
step 60 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 880001:920000 --jobs 16 \
  --variants occ,gemm_spec,wgmma_t,trv,gemm_periodic --time-limit 45 --min-time 10 >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | grep -E '^FAIL|passed' | tail -6"
AB_ITERS=20 step 110 bash -c "bench/ab.sh build/gpu:KBC_GEMM_XPREFETCH=0 build/gpu bench/ab_cases_xprefetch.txt 2>&1 | tee $OUT/ab_xp.txt | tail -12"
AB_ITERS=20 step 60 bash -c "grep -v lowrank bench/ab_cases_xprefetch.txt | head -5 > /tmp/xp1.txt; bench/ab.sh build/gpu:KBC_GEMM_XPREFETCH=1 build/gpu:KBC_GEMM_XPREFETCH=2 /tmp/xp1.txt 2>&1 | tee $OUT/ab_xp12.txt | tail -6"
step 40 bash -c "KBC_PROFILE=1 build/gpu/kbc bench $SAM --set batch_size=4 --set height=64 --set width=64 2>&1 | tee $OUT/profile64.txt | grep -E 'median|k3_s|k9_dp|k5_o|k10_dv|k14_dq|k15_dk|total'"
