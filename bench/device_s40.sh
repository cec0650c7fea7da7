#!/bin/bash
# bench/device_s40.sh — session 40's call (sessions 39 and 40 had no device time until it): the GPU
# fuzzer on the defaults (the edge copies' first GPU run) and under KBC_GEMM_STAGE_N, the cluster
# barrier's cost as a stage boundary (bench/micro/handoff.cu), the A/Bs (KBC_GEMM_STAGE_N,
# KBC_GEMM_WIN_BSPLIT, KBC_GEMM_SPLIT_MIN=4, KBC_GEMM_LOW_STAGE=1, KBC_GEMM_WIN_ASPLIT,
# KBC_GEMM_EDGE=0), SAM-HQ 64x64 b4 kernel by kernel, ncu on its s and dp, on conv3d's 3xTF32
# window loop and on the 49-row product; most important first.  Needs build/gpu.
LIMIT=${LIMIT:-560}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab} # ab.sh's cache: the profiles reuse its compiles
. bench/steps.sh
if [ -z "${S40_SKIP_FIRST:-}" ]; then # (bench/device_s41.sh runs these two itself)
step 55 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 500001:550000 --jobs 16 \
  --variants fp32,tf32,split,stage_n,stage_n_tf32,tail_split --time-limit 45 --min-time 30 --json $OUT/fuzz.json >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | tail -3"
step 35 bash -c 'nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/handoff bench/micro/handoff.cu && /tmp/handoff 45 >$OUT/handoff.txt 2>&1; cat $OUT/handoff.txt'
fi
# CViT's linears with their layer norms as GEMM tails (33 kernels at b10, not 45), split over K down to
# one k-tile (8 and 32 blocks, not 2 and 4 as session 30 timed them: 1.07x slower)
step 20 bash -c "KBC_GEMM_TAIL=2 KBC_GEMM_SPLIT=2 build/gpu/kbc verify specs/cvit.kb --set batch_size=10 --set in_channels=3 --set image_size=32 2>&1 | tail -1"
AB_ITERS=200 step 60 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_TAIL=2,KBC_GEMM_SPLIT=2 bench/ab_cases_cvit.txt 2>&1 | tee $OUT/ab_cvit_tail.txt | tail -5"
step 30 bash -c 'KBC_GEMM_STAGE_N=1 build/gpu/kbc verify specs/sam_hq_attn_relpos_bwd.kb --set batch_size=1 --set height=14 --set width=14 2>&1 | tail -2'
AB_ITERS=100 step 120 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_STAGE_N=1 bench/ab_cases_stage_n.txt 2>&1 | tee $OUT/ab_stage_n.txt | tail -7"
step 30 bash -c 'for sw in KBC_GEMM_WIN_BSPLIT=1 KBC_GEMM_WIN_ASPLIT=1; do env KBC_GEMM_WIN_BSPLIT=1 $sw build/gpu/kbc verify specs/conv3d_min_softmax.kb --set batch_size=2 --set in_channels=3 --set d=24 --set h=32 --set w=32 2>&1 | tail -2 | sed "s/^/$sw /"; done'
# session 40: SAM-HQ 64x64 b4's per-kernel times, and ncu on its two scores-sized products (s: the
# same product as dp plus rel_h/rel_w in its epilogue, 4.7 against 2.1 ms in session 36)
S64="specs/sam_hq_attn_relpos_bwd.kb --set batch_size=4 --set height=64 --set width=64"
step 60 bash -c "for sw in KBC_GEMM_STAGE_N=0 KBC_GEMM_STAGE_N=1; do env \$sw KBC_PROFILE=1 build/gpu/kbc bench --iters 5 $S64 >$OUT/sam64_profile_\${sw#*=}.txt 2>&1; done; tail -45 $OUT/sam64_profile_0.txt; tail -45 $OUT/sam64_profile_1.txt"
AB_ITERS=100 step 100 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_WIN_BSPLIT=1 bench/ab_cases_bsplit.txt 2>&1 | tee $OUT/ab_bsplit.txt | tail -7"
ab38c() { AB_ITERS=100 step 90 bash -c "bench/ab.sh build/gpu build/gpu:$1 bench/ab_cases_s38c.txt 2>&1 | sed 's/^/$1 /' | tee -a $OUT/ab.txt | tail -7"; }
ab38c KBC_GEMM_SPLIT_MIN=4
ab38c KBC_GEMM_LOW_STAGE=1
AB_ITERS=100 step 100 bash -c "bench/ab.sh build/gpu:KBC_GEMM_WIN_BSPLIT=1 build/gpu:KBC_GEMM_WIN_BSPLIT=1,KBC_GEMM_WIN_ASPLIT=1 bench/ab_cases_bsplit.txt 2>&1 | tee $OUT/ab_asplit.txt | tail -7"
ab38c KBC_GEMM_EDGE=0
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
SECS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis_Tables"
MET="--metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"
summary() { # NCU-LOG: the lines worth reading
  grep -E 'Duration|Throughput|Ipc|Warp Cycles Per Issued|Active Warps|Registers Per|hmma|inst_executed|bank_conflicts|wavefronts|pipe_|Stall' "$1" | head -40
}
prof() { # NAME KBC-BENCH-ARGS...: one launch (the fourth, no graph) under ncu, into $OUT/ncu_NAME.txt
  local n=$1; shift
  KBC_NO_GRAPH=1 $NCU --launch-skip 3 --launch-count 1 $SECS $MET build/gpu/kbc bench --iters 3 "$@" >$OUT/ncu_$n.txt 2>&1
  summary $OUT/ncu_$n.txt
}
C3="specs/conv3d_min_softmax.kb --set batch_size=128 --set in_channels=3 --set d=24 --set h=32 --set w=32"
export -f prof summary; export NCU SECS MET OUT # (step runs a command under timeout: prof in a shell of its own)
step 70 bash -c "prof conv3d_fp32 $C3"
step 70 bash -c "prof mm49 specs/examples/matmul_bias_gelu.kb --set m=49 --set n=2304 --set k=768"
profk() { # NAME KERNEL-REGEX KBC-BENCH-ARGS...: that kernel's second launch under ncu
  local n=$1 k=$2; shift 2
  KBC_NO_GRAPH=1 $NCU -k regex:$k --launch-skip 1 --launch-count 1 $SECS $MET build/gpu/kbc bench --iters 2 "$@" >$OUT/ncu_$n.txt 2>&1
  summary $OUT/ncu_$n.txt
}
export -f profk
step 90 bash -c "profk sam64_s '_k3_s\$' $S64"
step 90 bash -c "profk sam64_dp '_k9_dp\$' $S64"
