#!/bin/bash
# bench/device_prep.sh — session 31's device call (issue 14: TF32 operands
# rounded before the launch, KBC_GEMM_PREP), most important first: the gpu
# ctest (verify.sh has the copies' and the NaN cases), the A/B of the
# copies (bench/ab_cases_prep.txt), the commit before against the head
# (cvt.rna in the stages, GELU's erfc), SAM-HQ at tf32 with the copies
# against float64 (compare.py), the GPU fuzzer's prep variant, cuBLAS.
# Needs build/gpu and build/gpu-base (tools/gpu_build.sh f52ad44).
OUT=${OUT:-/tmp/out}
export KBC_LIB=$PWD/build/gpu/libkbc.so
timeout 150 bench/device_run.sh gpu
timeout 170 bench/ab.sh build/gpu build/gpu:KBC_GEMM_PREP=1 bench/ab_cases_prep.txt 2>&1 | tail -n +2 | cut -c1-50,70- | tee $OUT/ab_prep.txt
cat bench/ab_cases_prep.txt bench/ab_cases_gelu.txt >/tmp/ab_base.txt
timeout 170 bench/ab.sh build/gpu-base build/gpu /tmp/ab_base.txt 2>&1 | tail -n +2 | cut -c1-50,70- | tee $OUT/ab_base.txt
KBC_GEMM_PREP=1 timeout 90 python3 bench/compare.py --workloads sam --sam-shapes 32x32x2,64x64x4 --kbc-precisions tf32 \
  --no-compile --max-seconds 1 --max-sets 4 >$OUT/sam_tf32_prep.txt 2>&1; grep -E "kbc|eager" $OUT/sam_tf32_prep.txt | tail -6
FUZZ_TIME=${FUZZ_TIME:-40} FUZZ_SEEDS=9001:100001 FUZZ_VARIANTS=prep timeout 80 bench/device_run.sh fuzz | tail -3
timeout 30 python3 bench/micro/torch_mm.py 2>&1 | tee $OUT/torch_mm.txt
