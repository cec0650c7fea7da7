#!/bin/bash
# bench/device_s46d.sh — session 46: an A computed from its load
# (KBC_GEMM_XFORM=1: the operands pass inlines SAM-HQ's and attention's
# probabilities into their readers; o and dv apply exp(s - mx) / l to
# their A fragments, codegen/gemm_xform.c) checked on the GPU (kbc verify,
# the fuzzer's xform variants and its defaults on specgen's new operands)
# and timed against off (AB_CASES=N: the first N - 2 cases only).  Needs
# build/gpu (tools/gpu_build.sh).  Queued: no device could be lent after
# session 46's third call.
LIMIT=${LIMIT:-560}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
SAM="specs/sam_hq_attn_relpos_bwd.kb"
step 80 bash -c "export KBC_GEMM_XFORM=1; \
  build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=1 --set height=16 --set width=32 2>&1 | tail -1; \
  build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=3 --set height=5 --set width=6 2>&1 | tail -1; \
  build/gpu/kbc verify $SAM --inputs -0.1:0.1 --precision tf32 --set batch_size=2 --set height=9 --set width=13 2>&1 | tail -1; \
  build/gpu/kbc verify $SAM --set batch_size=1 --set height=14 --set width=14 2>&1 | tail -1; \
  build/gpu/kbc verify specs/examples/attention_bwd.kb --set batch=2 --set heads=4 --set seq=700 2>&1 | tail -1; \
  build/gpu/kbc verify tests/codegen/specs/gemm_xform.kb --inputs 0.5:1 --set b=6 --set h=33 --set w=31 2>&1 | tail -1; \
  build/gpu/kbc verify tests/codegen/specs/gemm_xform_mask.kb --inputs 0.5:1 --set m=1000 --set n=1300 2>&1 | tail -1"
step 120 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 990001:999999 --jobs 6 \
  --variants xform,xform_spec,xform_tf32,fp32,tf32 --time-limit 105 --min-time 10 >$OUT/fuzz.txt 2>&1; \
  grep -c '^FAIL' $OUT/fuzz.txt; grep -v '^rejected' $OUT/fuzz.txt | grep -E 'passed|specs' | tail -3"
AB_ITERS=20 step 170 bash -c "head -${AB_CASES:-9} bench/ab_cases_xform.txt > /tmp/abx.txt; bench/ab.sh build/gpu build/gpu:KBC_GEMM_XFORM=1 /tmp/abx.txt 2>&1 | tee $OUT/ab_xform.txt | tail -8"
step 80 bash -c "for x in 0 1; do KBC_GEMM_XFORM=\$x KBC_PROFILE=1 build/gpu/kbc bench $SAM --set batch_size=4 --set height=64 --set width=64 2>&1 | tee $OUT/profile64_xform\$x.txt | grep -E 'median|k3_s|k4_mx|k5_o |k9_dp|k10_dv |k11_ds|total'; done"
