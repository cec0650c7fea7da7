#!/bin/bash
# bench/device_prep.sh — session 31's device call (issue 14: TF32 operands
# rounded before the launch, KBC_GEMM_PREP), most important first, each
# step only while $LIMIT seconds (default 360) are not spent: the gpu ctest
# (verify.sh has the copies' and the NaN cases), the A/B of the copies
# (bench/ab_cases_prep.txt), the commit before against the head (cvt.rna in
# the stages, GELU's erfc), the GPU fuzzer's prep variant, SAM-HQ at tf32
# with the copies against float64 (compare.py), cuBLAS.
# Needs build/gpu and build/gpu-base (tools/gpu_build.sh f52ad44).
LIMIT=${LIMIT:-360}
. bench/steps.sh
step 100 bench/device_run.sh gpu
step 110 bench/ab.sh build/gpu build/gpu:KBC_GEMM_PREP=1 bench/ab_cases_prep.txt 2>&1 | tail -n +2 | cut -c1-50,70- | tee $OUT/ab_prep.txt
cat bench/ab_cases_prep.txt bench/ab_cases_gelu.txt >/tmp/ab_base.txt
step 100 bench/ab.sh build/gpu-base build/gpu /tmp/ab_base.txt 2>&1 | tail -n +2 | cut -c1-50,70- | tee $OUT/ab_base.txt
FUZZ_TIME=30 FUZZ_SEEDS=9001:100001 FUZZ_VARIANTS=prep step 60 bench/device_run.sh fuzz | tail -3
KBC_GEMM_PREP=1 step 80 python3 bench/compare.py --workloads sam --sam-shapes 32x32x2,64x64x4 --kbc-precisions tf32 \
  --no-compile --max-seconds 1 --max-sets 4 >$OUT/sam_tf32_prep.txt 2>&1; grep -E "kbc|eager" $OUT/sam_tf32_prep.txt | tail -6
step 30 python3 bench/micro/torch_mm.py 2>&1 | tee $OUT/torch_mm.txt
