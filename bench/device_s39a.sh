#!/bin/bash
# bench/device_s39a.sh — what session 38 built after its device time ran
# out: the GEMM edge copies (KBC_GEMM_EDGE, on: checked by the emulator,
# untimed) against the per-chunk path, the split-K slice minimum
# (KBC_GEMM_SPLIT_MIN=4, 2) for the products of few rows, and the checks
# (gpu/python and gpu/verify with the time they need; the GPU fuzzer, whose
# GEMMs of ragged sizes take the edge copies); what a cluster barrier
# costs as a stage boundary (bench/micro/handoff.cu's cluster rows).  Needs build/gpu.
LIMIT=${LIMIT:-570}
. bench/steps.sh
step 170 bash -c 'cd build/gpu && ctest -R "gpu/python|gpu/smoke|gpu/verify" --output-on-failure >$OUT/ctest.txt 2>&1; grep -E "FAIL|tests passed" $OUT/ctest.txt | tail -8'
step 70 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 500001:550000 --jobs 16 \
  --variants fp32,tf32,split --time-limit 60 --min-time 40 --json $OUT/fuzz.json >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | tail -3"
step 45 bash -c 'nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/handoff bench/micro/handoff.cu && /tmp/handoff 45 >$OUT/handoff.txt 2>&1; cat $OUT/handoff.txt'
for sw in KBC_GEMM_EDGE=0 KBC_GEMM_SPLIT_MIN=4 KBC_GEMM_SPLIT_MIN=2; do
  AB_ITERS=100 step 90 bash -c "bench/ab.sh build/gpu build/gpu:$sw bench/ab_cases_s38c.txt 2>&1 | sed 's/^/$sw /' | tee -a $OUT/ab.txt | tail -7"
done
