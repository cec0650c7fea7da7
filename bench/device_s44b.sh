#!/bin/bash
# bench/device_s44b.sh — session 44's second call: the final build's
# checks (the GPU fuzzer under the wgmma variants, trv among them; kbc
# verify of a batched product transposed in the stages), the pack model's
# change timed (the batched product now copied 16 bytes at a time rather
# than packed), and the SAM-HQ headline against PyTorch.  Needs build/gpu
# (tools/gpu_build.sh).
LIMIT=${LIMIT:-540}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
step 80 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 840001:880000 --jobs 16 \
  --variants trv,wgmma_t,wgmma,occ,pack,fp32,gemm_periodic,rows_cache --time-limit 65 --min-time 10 >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | grep -E '^FAIL|passed' | tail -6"
step 40 bash -c "build/gpu/kbc verify bench/suite/1_3_batched_matmul.kb --set batch=4 --set m=100 --set k=300 --set n=260 2>&1 | tail -1; \
  KBC_SPECIALIZE=1 build/gpu/kbc verify bench/suite/1_3_batched_matmul.kb --set batch=8 --set m=512 --set k=256 --set n=1024 2>&1 | tail -1"
AB_ITERS=20 step 50 bash -c "bench/ab.sh build/gpu:KBC_GEMM_TR_VEC=0 build/gpu bench/ab_cases_trv_pack.txt 2>&1 | tee $OUT/ab_trv_pack.txt | tail -5"
step 360 bash -c "python3 bench/compare.py --quick --no-compile --sam-shapes all --kbc-precisions fp32,tf32 --json $OUT/compare.json >$OUT/compare.txt 2>&1; tail -40 $OUT/compare.txt"
