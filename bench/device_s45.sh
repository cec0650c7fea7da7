#!/bin/bash
# bench/device_s45.sh — queued by session 44 (its device time ran out):
# SAM-HQ 16x16 b32 with the relative-position gradient parts as GEMMs
# (group.c's rows rule; 5,642 us before, 2.7 ms of it in those two rows
# kernels), its profile, and the sixteen-shape table against PyTorch eager
# (session 44's run was cut off after 32x32 b1).  Needs build/gpu
# (tools/gpu_build.sh).
LIMIT=${LIMIT:-560}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
SAM="specs/sam_hq_attn_relpos_bwd.kb"
step 60 bash -c "build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=3 --set height=5 --set width=6 2>&1 | tail -1; \
  KBC_PROFILE=1 build/gpu/kbc bench $SAM --set batch_size=32 --set height=16 --set width=16 2>&1 | tee $OUT/profile16b32.txt | grep -E 'median|part|total'"
step 480 bash -c "python3 bench/compare.py --quick --no-compile --sam-shapes all --workloads sam --kbc-precisions fp32,tf32 \
  --json $OUT/compare.json >$OUT/compare.txt 2>&1; grep -E '^== |kbc fp32|kbc tf32|autograd eager  ' $OUT/compare.txt | tail -64"
