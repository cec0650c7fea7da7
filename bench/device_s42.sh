#!/bin/bash
# bench/device_s42.sh — session 42's later calls: the GEMM
# epilogue's column groups (gemm_epilogue.c, group; KBC_GEMM_EP_VEC)
# checked, timed against the build before them (build/gpu-base) on
# SAM-HQ, products with column terms, CViT and conv3d, and SAM-HQ 64x64 b4
# kernel by kernel.  (The first call of session 42, at 3e82e89 with an
# earlier form of this script, profiled KBC_GEMM_SPLIT_MIN=4 at SAM-HQ 7x7
# and 14x14 b1 and checked KBC_GEMM_WIN_BSPLIT=1 on conv3d.)  Needs
# build/gpu and build/gpu-base (tools/gpu_build.sh BASE_REV).  Also KBC_ABSORB=1 timed.
LIMIT=${LIMIT:-560}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
SAM="specs/sam_hq_attn_relpos_bwd.kb"
# (SAM-HQ's scores reach the hundreds at [-1, 1): kbc verify --help)
step 90 bash -c "for hw in 'height=16 --set width=32' 'height=8 --set width=14'; do build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=1 --set \$hw 2>&1 | tail -1; \
  KBC_ABSORB=1 build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=1 --set \$hw 2>&1 | tail -1; done; \
  KBC_GEMM_EP_VEC=1 build/gpu/kbc verify tests/codegen/specs/gemm_lowrank.kb --set m=1000 --set a=7 --set b=64 --set k=100 2>&1 | tail -1"
AB_ITERS=50 step 220 bash -c "bench/ab.sh build/gpu-base build/gpu bench/ab_cases_s42.txt 2>&1 | tee $OUT/ab_s42.txt | tail -11"
AB_ITERS=30 step 100 bash -c "bench/ab.sh build/gpu build/gpu:KBC_ABSORB=1 bench/ab_cases_absorb.txt 2>&1 | tee $OUT/ab_absorb.txt | tail -5"
step 40 bash -c "KBC_ABSORB=1 KBC_PROFILE=1 build/gpu/kbc bench --iters 5 $SAM --set batch_size=4 --set height=64 --set width=64 >$OUT/sam64_profile_absorb.txt 2>&1; grep -E 'k[0-9]+_(s|dp|ds|grh|grw|ds_red|mx)\$|total' $OUT/sam64_profile_absorb.txt"
step 80 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 600001:640000 --jobs 16 \
  --variants gemm_spec,gemm_spec_tf32,fp32,spec --time-limit 60 --min-time 30 --json $OUT/fuzz.json >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | tail -4"
