#!/bin/bash
# bench/device_s42b.sh — session 42's unrun call (its device time ran out):
# the epilogue's periodic column groups (KBC_GEMM_EP_PERIODIC=1,
# gemm_epilogue.c hoist_periodic) checked and timed against the column
# groups without them.  Needs build/gpu (tools/gpu_build.sh).
LIMIT=${LIMIT:-200}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
SAM="specs/sam_hq_attn_relpos_bwd.kb"
step 40 bash -c "KBC_GEMM_EP_PERIODIC=1 build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=1 --set height=16 --set width=32 2>&1 | tail -1; \
  KBC_GEMM_EP_PERIODIC=1 build/gpu/kbc verify tests/codegen/specs/gemm_lowrank.kb --set m=1000 --set a=7 --set b=32 --set k=100 2>&1 | tail -1"
AB_ITERS=30 step 100 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_EP_PERIODIC=1 bench/ab_cases_s42b.txt 2>&1 | tee $OUT/ab_s42b.txt | tail -4"
step 30 bash -c "KBC_GEMM_EP_PERIODIC=1 KBC_PROFILE=1 build/gpu/kbc bench --iters 5 $SAM --set batch_size=4 --set height=64 --set width=64 >$OUT/sam64_profile.txt 2>&1; grep -E 'k3_s|k9_dp|total' $OUT/sam64_profile.txt"
