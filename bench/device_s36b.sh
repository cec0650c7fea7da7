#!/bin/bash
# bench/device_s36b.sh — session 36's second call: gpu/python with the
# graph's update on by default; SAM-HQ's backward recomputed with its
# relative-position gradients summed in dq's kernel (KBC_ATTN_RECOMPUTE=1,
# recompute.c's PARTs) against the plain plan, both checked by
# bench/compare.py against PyTorch at four shapes, fp32 and tf32; the
# per-kernel profile at 64x64 b4 both ways.  Needs build/gpu.
LIMIT=${LIMIT:-570}
. bench/steps.sh
S=specs/sam_hq_attn_relpos_bwd.kb
step 100 bash -c 'cd build/gpu && ctest -R "gpu/python" --output-on-failure >$OUT/ctest_python.txt 2>&1; tail -3 $OUT/ctest_python.txt'
for r in 1 0; do
  KBC_ATTN_RECOMPUTE=$r step 150 bash -c "python3 bench/compare.py --no-compile --workloads sam --sam-shapes 7x7x1,32x32x2,48x48x2,64x64x4 \
    --kbc-precisions fp32,tf32 --max-seconds 2 --json $OUT/sam_rc$r.json >$OUT/sam_rc$r.txt 2>&1; grep -E 'kbc|eager  ' $OUT/sam_rc$r.txt"
done
for r in 1 0; do
  KBC_ATTN_RECOMPUTE=$r KBC_PROFILE=1 step 60 build/gpu/kbc bench $S --set batch_size=4 --set height=64 --set width=64 --iters 5 \
    >$OUT/prof_rc$r.txt 2>&1
  tail -40 $OUT/prof_rc$r.txt
done
