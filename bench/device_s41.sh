#!/bin/bash
# bench/device_s41.sh — session 41's call (sessions 39 and 40 had no device time): the cluster kernel
# (KBC_CLUSTER: CViT's batch points a thread-block cluster each) checked and timed against the
# queue (bench/device_s40.sh: the GPU fuzzer, KBC_GEMM_STAGE_N, the tails split over K, ...).
# Needs build/gpu.
LIMIT=${LIMIT:-560}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
CV="specs/cvit.kb --set in_channels=3 --set image_size=32"
step 80 bash -c "for b in 10 1; do KBC_CLUSTER=2 build/gpu/kbc verify $CV --set batch_size=\$b 2>&1 | tail -1 | sed \"s/^/b\$b /\"; done"
step 45 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 560001:600000 --jobs 16 \
  --features batched --variants fp32,cluster,cluster_tf32,cluster_gemm,cluster_slots --time-limit 35 --min-time 20 --json $OUT/fuzz_cluster.json >$OUT/fuzz_cluster.txt 2>&1; grep -v '^rejected' $OUT/fuzz_cluster.txt | tail -3"
AB_ITERS=200 step 60 bash -c "bench/ab.sh build/gpu build/gpu:KBC_CLUSTER=2 bench/ab_cases_cvit.txt 2>&1 | tee $OUT/ab_cluster.txt | tail -5"
AB_ITERS=200 step 45 bash -c "bench/ab.sh build/gpu:KBC_CLUSTER=2 build/gpu:KBC_CLUSTER=2,KBC_CLUSTER_SLOTS=3 bench/ab_cases_cvit.txt 2>&1 | tee $OUT/ab_cluster_slots.txt | tail -5"
step 50 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 500001:550000 --jobs 16 \
  --variants fp32,tf32,split,stage_n,stage_n_tf32,tail_split --time-limit 40 --min-time 25 --json $OUT/fuzz.json >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | tail -3"
step 35 bash -c 'nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/handoff bench/micro/handoff.cu && /tmp/handoff 45 >$OUT/handoff.txt 2>&1; cat $OUT/handoff.txt'
step 45 bash -c "for b in 10 1; do KBC_CLUSTER=2 KBC_PROFILE=1 build/gpu/kbc bench --iters 20 $CV --set batch_size=\$b 2>&1 | tail -4; done"
AB_ITERS=200 step 45 bash -c "bench/ab.sh build/gpu:KBC_CLUSTER=2 build/gpu:KBC_CLUSTER=2,KBC_CLUSTER_SIZE=16 bench/ab_cases_cvit.txt 2>&1 | tee $OUT/ab_cluster16.txt | tail -5"
AB_ITERS=200 step 45 bash -c "bench/ab.sh build/gpu:KBC_CLUSTER=2 build/gpu:KBC_CLUSTER=2,KBC_CLUSTER_SIZE=4 bench/ab_cases_cvit.txt 2>&1 | tee $OUT/ab_cluster4.txt | tail -5"
[ "$(left)" -gt 60 ] && S40_SKIP_FIRST=1 LIMIT=$(left) bash bench/device_s40.sh
