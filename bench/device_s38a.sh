#!/bin/bash
# bench/device_s38a.sh — session 38's second call: where SAM-HQ 7x7 b1 and
# CViT b10 spend their time now that graphs run in branches (per-kernel
# profile), and which switches shorten them (A/B, same build); split-K
# GEMMs side by side (their own scratch regions) checked.
LIMIT=${LIMIT:-560}
. bench/steps.sh
SAM7="specs/sam_hq_attn_relpos_bwd.kb --set batch_size=1 --set height=7 --set width=7"
SAM14="specs/sam_hq_attn_relpos_bwd.kb --set batch_size=1 --set height=14 --set width=14"
CVIT="specs/cvit.kb --set batch_size=10 --set in_channels=3 --set image_size=32"
# split-K GEMMs side by side, each its own scratch region (deps.c): checked, fp32 and tf32
sed -n '/^kernel lin5/,/^y5/p' tests/cli/test_plan.sh >/tmp/lin5.kb
for prec in fp32 tf32; do for sz in "m=32 --set k=8192 --set n=256" "m=8 --set k=16384 --set n=512"; do
  step 30 bash -c "build/gpu/kbc verify /tmp/lin5.kb --precision $prec --set $sz 2>&1 | tail -2 | tee -a $OUT/lin5.txt"
done; done
step 60 bash -c "cd build/gpu && ctest -R 'gpu/python|gpu/verify' >$OUT/ctest.txt 2>&1; tail -3 $OUT/ctest.txt"
for c in "$SAM7" "$SAM14" "$CVIT"; do
  step 40 bash -c "KBC_PROFILE=1 build/gpu/kbc bench $c --iters 20 2>&1 | tee -a $OUT/profile.txt | grep -E 'kernels, median|total'"
done
for sw in KBC_GEMM_TAIL=2 KBC_GEMM_SPLIT=2 KBC_JOIN_LOSS=12 KBC_PDL=1; do
  AB_ITERS=100 step 100 bash -c "bench/ab.sh build/gpu build/gpu:$sw bench/ab_cases_s38.txt 2>&1 | tee $OUT/ab_$sw.txt | tail -6"
done
