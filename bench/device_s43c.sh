#!/bin/bash
# bench/device_s43c.sh — session 43's queued call (its device time ran
# out): KBC_GEMM_EP_PERIODIC checked on the GPU (the fuzzer's
# gemm_periodic variant, kbc verify) and timed with KBC_GEMM_OCC as the
# plan combines them (cg_plan_gemm); the session's defaults against
# 7599dae; KBC_ROWS_CACHE and KBC_ROWS_ONLINE=2 checked and timed.
# Needs build/gpu and build/gpu-base (tools/gpu_build.sh 7599dae).
LIMIT=${LIMIT:-540}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
SAM="specs/sam_hq_attn_relpos_bwd.kb"
step 55 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 760001:800000 --jobs 16 \
  --variants fp32,spec,gemm_spec,gemm_periodic,occ,rows_cache --time-limit 40 --min-time 10 >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | grep -E '^FAIL|^\.\.\.' | tail -6"
step 60 bash -c "for e in KBC_GEMM_EP_PERIODIC=1 KBC_ROWS_CACHE=1; do env \$e build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=1 --set height=16 --set width=32 2>&1 | tail -1; \
  env \$e build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=1 --set height=8 --set width=14 2>&1 | tail -1; done; \
  KBC_GEMM_EP_PERIODIC=1 build/gpu/kbc verify tests/codegen/specs/gemm_lowrank.kb --set m=1000 --set a=7 --set b=32 --set k=64 2>&1 | tail -1; \
  KBC_ROWS_CACHE=1 build/gpu/kbc verify specs/examples/layernorm.kb --set rows=100 --set cols=1023 2>&1 | tail -1"
AB_ITERS=20 step 130 bash -c "bench/ab.sh build/gpu-base build/gpu bench/ab_cases_s43c.txt 2>&1 | tee $OUT/ab_s43c.txt | tail -12"
AB_ITERS=20 step 60 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_EP_PERIODIC=1 bench/ab_cases_occ2.txt 2>&1 | tee $OUT/ab_periodic.txt | tail -6"
AB_ITERS=20 step 90 bash -c "bench/ab.sh build/gpu build/gpu:KBC_ROWS_CACHE=1 bench/ab_cases_rows_cache.txt 2>&1 | tee $OUT/ab_rows_cache.txt | tail -9"
# KBC_ROWS_ONLINE=2: SAM-HQ's softmax rows in two passes, not three, now that they load float4
AB_ITERS=20 step 60 bash -c "bench/ab.sh build/gpu build/gpu:KBC_ROWS_ONLINE=2 bench/ab_cases_s42b.txt 2>&1 | tee $OUT/ab_online.txt | tail -4"
step 200 bash -c "python3 bench/compare.py --headline --quick --no-compile --kbc-precisions fp32,tf32 --json $OUT/compare.json --png $OUT/speedup.png >$OUT/compare.txt 2>&1; tail -30 $OUT/compare.txt"
