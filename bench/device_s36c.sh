#!/bin/bash
# bench/device_s36c.sh — session 36's third call: the few-row contractions
# (KBC_GEMM_SMALL) beside PyTorch (bench/small_vs_torch.py); SAM-HQ
# recomputed at 64x64 b4 with the PARTs' run sums (profile); compare.py's
# CViT with the graph's update now the default.  Needs build/gpu.
LIMIT=${LIMIT:-560}
. bench/steps.sh
step 200 bash -c "python3 bench/small_vs_torch.py --max-seconds 3 2>&1 | tee $OUT/small_vs_torch.txt"
KBC_ATTN_RECOMPUTE=1 KBC_PROFILE=1 step 60 build/gpu/kbc bench specs/sam_hq_attn_relpos_bwd.kb --set batch_size=4 \
  --set height=64 --set width=64 --iters 5 >$OUT/prof_rc1.txt 2>&1
grep -E "median|s_dq|s_dk|s_dv|k3_s" $OUT/prof_rc1.txt
step 120 bash -c "python3 bench/compare.py --quick --no-compile --workloads cvit --kbc-precisions fp32 --max-seconds 3 \
  --json $OUT/cmp_cvit.json >$OUT/cmp_cvit.txt 2>&1; grep -E '^cvit' $OUT/cmp_cvit.txt"
