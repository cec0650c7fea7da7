#!/bin/bash
# bench/device_s36.sh — the next session's first device call, most important
# first: the gpu ctest (gpu/python now rotates three input sets through the
# runtime's graph, its kernel nodes' arguments changed under
# KBC_GRAPH_UPDATE=1, off by default until this passes); kbc bench --rotate 4
# with the graph's update on and off (KBC_GRAPH_UPDATE); the GPU fuzzer on
# the defaults (session 35's KBC_GEMM_SMALL rule: the fuzzer's shapes are
# small); bench/compare.py on CViT and SAM-HQ's headline shapes with the
# update on and off (compare.py rotates its input sets, so without it every
# call launched its kernels one by one: CViT b10 475 us through compare.py
# against 126 us in kbc bench, session 35); then split-K to one k-tile on
# the few-row GEMMs.  Needs build/gpu (tools/gpu_build.sh).
LIMIT=${LIMIT:-570}
. bench/steps.sh
step 200 bench/device_run.sh gpu
step 60 bash -c 'for c in "specs/cvit.kb --set batch_size=10 --set in_channels=3 --set image_size=32" \
    "specs/sam_hq_attn_relpos_bwd.kb --set batch_size=1 --set height=7 --set width=7" \
    "specs/examples/mlp_relu.kb --set batch=8 --set d_in=1024 --set d_hidden=4096 --set d_out=1024"; do
  for u in 1 0; do echo "KBC_GRAPH_UPDATE=$u $c: $(KBC_GRAPH_UPDATE=$u build/gpu/kbc bench $c --rotate 4 --json | tail -1)"; done
done | tee $OUT/rotate.txt'
FUZZ_VARIANTS=fp32,tf32 FUZZ_TIME=80 FUZZ_SEEDS=7001:100001 step 110 bench/device_run.sh fuzz
for u in 1 0; do
  KBC_GRAPH_UPDATE=$u step 120 bash -c "python3 bench/compare.py --quick --no-compile --workloads cvit,sam \
    --kbc-precisions fp32 --max-seconds 3 --json $OUT/cmp_update$u.json >$OUT/cmp_update$u.txt 2>&1
    tail -8 $OUT/cmp_update$u.txt"
done
# split-K down to one k-tile a slice (KBC_GEMM_SPLIT=2) on the few-row GEMMs
# session 35's rule made (the MLP at batch 8: 32 output tiles of 16 x 128,
# 4 slices of 8 k-tiles = 128 blocks, under one a multiprocessor)
step 90 bash -c 'bench/ab.sh build/gpu build/gpu:KBC_GEMM_SPLIT=2 bench/ab_cases_small.txt 2>&1 | tee $OUT/split_small.txt'
