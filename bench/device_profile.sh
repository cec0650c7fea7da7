#!/bin/bash
# bench/device_profile.sh [BUILD] — on the GPU machine: per-kernel profiles
# (KBC_PROFILE=1 kbc bench) of the three workloads at their benchmark
# shapes, then the correctness check at those shapes; logs under $OUT.
set -u
BUILD=${1:-build/gpu}
B=$BUILD/kbc
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-cache}
OUT=${OUT:-/tmp}
S=specs/sam_hq_attn_relpos_bwd.kb
{
  KBC_PROFILE=1 $B bench specs/conv3d_min_softmax.kb --set batch_size=128 --set in_channels=3 --set d=24 --set h=32 --set w=32 --iters 50
  for sh in ${SAM_SHAPES:-"4 64 64" "2 32 32" "8 14 14" "64 7 7"}; do
    set -- $sh
    KBC_PROFILE=1 $B bench $S --set batch_size=$1 --set height=$2 --set width=$3 --iters 10
  done
  KBC_PROFILE=1 $B bench specs/cvit.kb --set batch_size=10 --set in_channels=3 --set image_size=32 --iters 50
} >$OUT/prof.txt 2>&1
timeout 400 tests/gpu/device_check.sh $BUILD tests/gpu/cases_bench.txt >$OUT/check_bench.txt 2>&1
tail -3 $OUT/check_bench.txt
grep -v "^kbc:   .*  0.0%" $OUT/prof.txt | grep -v "^kbc: .*cvit_k[0-9]*_l"
