#!/bin/bash
# bench/device_s43a.sh — session 43's first call.  build/gpu (this tree)
# against build/gpu-base (7599dae): rows loops over several flattened
# indices as float4 (vec_loop.c) and the GEMM stages' ring cut to K's
# k-tiles (gemm_plan.c, ring); then KBC_GEMM_OCC=1 (output-bound wgmma
# products on tiles of two blocks a multiprocessor) and session 42's
# queued KBC_GEMM_EP_PERIODIC, each against the default.  Needs build/gpu
# and build/gpu-base (tools/gpu_build.sh 7599dae).
LIMIT=${LIMIT:-540}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
SAM="specs/sam_hq_attn_relpos_bwd.kb"
step 90 bash -c "build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=1 --set height=16 --set width=32 2>&1 | tail -1; \
  KBC_GEMM_OCC=1 build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=1 --set height=16 --set width=32 2>&1 | tail -1; \
  KBC_GEMM_OCC=1 build/gpu/kbc verify tests/codegen/specs/gemm_lowrank.kb --set m=1000 --set a=7 --set b=64 --set k=64 2>&1 | tail -1; \
  KBC_GEMM_OCC=1 build/gpu/kbc verify specs/examples/attention_bwd.kb --set batch=2 --set heads=3 --set seq=300 2>&1 | tail -1; \
  build/gpu/kbc verify bench/suite/1_40_layernorm.kb --set batch_size=4 --set features=16 --set dim1=33 --set dim2=31 2>&1 | tail -1; \
  build/gpu/kbc verify bench/suite/1_34_instancenorm.kb --set batch_size=3 --set features=8 --set dim1=65 --set dim2=63 2>&1 | tail -1"
AB_ITERS=30 step 150 bash -c "bench/ab.sh build/gpu-base build/gpu bench/ab_cases_s43.txt 2>&1 | tee $OUT/ab_s43.txt | tail -12"
AB_ITERS=30 step 100 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_OCC=1 bench/ab_cases_occ.txt 2>&1 | tee $OUT/ab_occ.txt | tail -8"
step 50 bash -c "for o in 0 1; do KBC_GEMM_OCC=\$o KBC_PROFILE=1 build/gpu/kbc bench --iters 5 $SAM --set batch_size=4 --set height=64 --set width=64 >$OUT/sam64_profile_occ\$o.txt 2>&1; grep -E 'k1_rel|k3_s|k4_mx|k9_dp|k11_ds|total' $OUT/sam64_profile_occ\$o.txt; done"
AB_ITERS=30 step 70 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_EP_PERIODIC=1 bench/ab_cases_s42b.txt 2>&1 | tee $OUT/ab_s42b.txt | tail -4"
step 60 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 640001:700000 --jobs 16 \
  --variants fp32,spec,occ,occ_tf32,online,welford --time-limit 45 --min-time 10 --json $OUT/fuzz.json >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | tail -3"
step 150 bash -c "python3 bench/suite.py --problems '1_33_*,1_34_*,1_40_*,2_17_*,2_52_*,2_67_*,2_73_*,2_35_*,1_23_*,1_35_*' --no-compile --quick \
  --json $OUT/suite_norms.json --markdown $OUT/suite_norms.md >$OUT/suite_norms.txt 2>&1; tail -16 $OUT/suite_norms.md"
