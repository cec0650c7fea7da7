#!/bin/bash
# bench/device_s44.sh — session 44: the transposed wgmma operands 16 bytes
# at a time (KBC_GEMM_TR_VEC) checked on the GPU (the fuzzer's trv and
# wgmma_t variants, kbc verify) and timed against a float at a time and
# against packing; the session's defaults (KBC_GEMM_EP_PERIODIC and
# KBC_ROWS_CACHE now on) against a5ac6b9; KBC_ABSORB retimed on them; the
# SAM-HQ 64x64 b4 profile.  Needs build/gpu and build/gpu-base
# (tools/gpu_build.sh a5ac6b9).
LIMIT=${LIMIT:-540}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
SAM="specs/sam_hq_attn_relpos_bwd.kb"
step 60 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 800001:840000 --jobs 16 \
  --variants trv,wgmma_t,fp32,spec,gemm_spec --time-limit 45 --min-time 10 >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | grep -E '^FAIL|passed' | tail -6"
step 70 bash -c "build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=1 --set height=16 --set width=32 2>&1 | tail -1; \
  build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=2 --set height=8 --set width=14 2>&1 | tail -1; \
  for s in 'batch=2 height=9 width=13 rows=8 cols=16 dim=64' 'batch=3 height=16 width=16 rows=7 cols=9 dim=40' 'batch=4 height=32 width=32 rows=32 cols=32 dim=64'; do \
    KBC_GEMM_WGMMA_T=1 KBC_GEMM_PACK=0 build/gpu/kbc verify tests/codegen/specs/gemm_trv_flat.kb \$(for a in \$s; do echo --set \$a; done) 2>&1 | tail -1; done; \
  build/gpu/kbc verify specs/examples/attention_bwd.kb --set batch=2 --set heads=2 --set seq=300 2>&1 | tail -1"
AB_ITERS=20 step 100 bash -c "bench/ab.sh build/gpu:KBC_GEMM_TR_VEC=0 build/gpu bench/ab_cases_trv.txt 2>&1 | tee $OUT/ab_trv.txt | tail -6"
AB_ITERS=20 step 110 bash -c "bench/ab.sh build/gpu-base build/gpu bench/ab_cases_s44.txt 2>&1 | tee $OUT/ab_s44.txt | tail -10"
AB_ITERS=20 step 70 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_PACK=0 bench/ab_cases_trv_pack.txt 2>&1 | tee $OUT/ab_trv_pack.txt | tail -5"
AB_ITERS=20 step 60 bash -c "bench/ab.sh build/gpu build/gpu:KBC_ABSORB=1 bench/ab_cases_s42b.txt 2>&1 | tee $OUT/ab_absorb.txt | tail -4"
step 40 bash -c "KBC_PROFILE=1 build/gpu/kbc bench $SAM --set batch_size=4 --set height=64 --set width=64 2>&1 | tee $OUT/profile64.txt | tail -40"
