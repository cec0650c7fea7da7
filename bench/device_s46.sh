#!/bin/bash
# bench/device_s46.sh — queued by session 45 (no device could be lent after
# its first call): the wgmma copies ahead across tiles (KBC_GEMM_XPREFETCH,
# off in session 45's tree) and A from registers (KBC_GEMM_AREG, off)
# checked on the GPU (kbc verify at shapes whose blocks take several tiles,
# the fuzzer's areg and wgmma variants) and timed against off; the SAM-HQ
# 64x64 b4 profile.  Needs build/gpu (tools/gpu_build.sh).  Then
# bench/device_s46b.sh: the five SAM-HQ shapes session 45's table lacks.
LIMIT=${LIMIT:-560}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
SAM="specs/sam_hq_attn_relpos_bwd.kb"
step 90 bash -c "for e in KBC_GEMM_XPREFETCH=3 KBC_GEMM_AREG=2; do echo \$e; \
  env \$e build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=1 --set height=16 --set width=32 2>&1 | tail -1; \
  env \$e build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=3 --set height=5 --set width=6 2>&1 | tail -1; \
  env \$e build/gpu/kbc verify tests/codegen/specs/gemm_lowrank.kb --set m=4000 --set a=64 --set b=64 --set k=100 2>&1 | tail -1; \
  env \$e build/gpu/kbc verify specs/examples/attention_bwd.kb --set batch=2 --set heads=4 --set seq=700 2>&1 | tail -1; \
  env \$e KBC_GEMM_WGMMA_T=1 KBC_GEMM_PACK=0 build/gpu/kbc verify tests/codegen/specs/gemm_trv_flat.kb --set batch=3 --set height=16 --set width=16 --set rows=7 --set cols=9 --set dim=40 2>&1 | tail -1; \
  env \$e build/gpu/kbc verify bench/suite/1_3_batched_matmul.kb --set batch=40 --set m=300 --set k=200 --set n=500 2>&1 | tail -1; done"
step 70 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 920001:960000 --jobs 16 \
  --variants areg,areg_tf32,xprefetch,occ,gemm_spec,wgmma_t,trv,gemm_periodic --time-limit 55 --min-time 10 >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | grep -E '^FAIL|passed' | tail -6"
AB_ITERS=20 step 110 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_XPREFETCH=3 bench/ab_cases_xprefetch.txt 2>&1 | tee $OUT/ab_xp.txt | tail -12"
AB_ITERS=20 step 100 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_AREG=1 bench/ab_cases_areg.txt 2>&1 | tee $OUT/ab_areg1.txt | tail -12"
AB_ITERS=20 step 60 bash -c "grep -E 'square|batched|gelu|64 --set width=64' bench/ab_cases_areg.txt > /tmp/areg2.txt; bench/ab.sh build/gpu build/gpu:KBC_GEMM_AREG=2 /tmp/areg2.txt 2>&1 | tee $OUT/ab_areg2.txt | tail -6"
step 50 bash -c "for e in KBC_GEMM_AREG=0 KBC_GEMM_AREG=1; do env \$e KBC_PROFILE=1 build/gpu/kbc bench $SAM --set batch_size=4 --set height=64 --set width=64 2>&1 | tee $OUT/profile64_\$e.txt | grep -E 'median|k3_s|k9_dp|k5_o|k10_dv|k14_dq|k15_dk|total'; done"
