#!/bin/bash
# bench/device_s39c.sh — session 39's one call (the device time left after
# failed starts): the GPU fuzzer on the defaults (the edge copies' first GPU
# run), the A/Bs (KBC_GEMM_WIN_BSPLIT, KBC_GEMM_SPLIT_MIN=4, KBC_GEMM_LOW_STAGE=1,
# KBC_GEMM_WIN_ASPLIT, KBC_GEMM_EDGE=0), ncu on conv3d's 3xTF32 window
# loop and on the 49-row product, and the cluster barrier's cost as a stage boundary.  Needs build/gpu.
LIMIT=${LIMIT:-560}
. bench/steps.sh
step 70 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 500001:550000 --jobs 16 \
  --variants fp32,tf32,split --time-limit 60 --min-time 40 --json $OUT/fuzz.json >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | tail -3"
step 30 bash -c 'for sw in KBC_GEMM_WIN_BSPLIT=1 KBC_GEMM_WIN_ASPLIT=1; do env KBC_GEMM_WIN_BSPLIT=1 $sw build/gpu/kbc verify specs/conv3d_min_softmax.kb --set batch_size=2 --set in_channels=3 --set d=24 --set h=32 --set w=32 2>&1 | tail -2 | sed "s/^/$sw /"; done'
AB_ITERS=100 step 100 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_WIN_BSPLIT=1 bench/ab_cases_bsplit.txt 2>&1 | tee $OUT/ab_bsplit.txt | tail -7"
ab38c() { AB_ITERS=100 step 90 bash -c "bench/ab.sh build/gpu build/gpu:$1 bench/ab_cases_s38c.txt 2>&1 | sed 's/^/$1 /' | tee -a $OUT/ab.txt | tail -7"; }
ab38c KBC_GEMM_SPLIT_MIN=4
ab38c KBC_GEMM_LOW_STAGE=1
AB_ITERS=100 step 100 bash -c "bench/ab.sh build/gpu:KBC_GEMM_WIN_BSPLIT=1 build/gpu:KBC_GEMM_WIN_BSPLIT=1,KBC_GEMM_WIN_ASPLIT=1 bench/ab_cases_bsplit.txt 2>&1 | tee $OUT/ab_asplit.txt | tail -7"
ab38c KBC_GEMM_EDGE=0
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
SECS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis_Tables"
MET="--metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"
prof() { # NAME KBC-BENCH-ARGS...: one launch (the fourth, no graph) under ncu, into $OUT/ncu_NAME.txt
  local n=$1; shift
  KBC_NO_GRAPH=1 $NCU --launch-skip 3 --launch-count 1 $SECS $MET build/gpu/kbc bench --iters 3 "$@" >$OUT/ncu_$n.txt 2>&1
  grep -E 'Duration|Throughput|Ipc|Warp Cycles Per Issued|Active Warps|Registers Per|hmma|inst_executed|bank_conflicts|wavefronts|pipe_|Stall' $OUT/ncu_$n.txt | head -40
}
C3="specs/conv3d_min_softmax.kb --set batch_size=128 --set in_channels=3 --set d=24 --set h=32 --set w=32"
export -f prof; export NCU SECS MET OUT # (step runs a command under timeout: prof in a shell of its own)
step 70 bash -c "prof conv3d_fp32 $C3"
step 70 bash -c "prof mm49 specs/examples/matmul_bias_gelu.kb --set m=49 --set n=2304 --set k=768"
step 35 bash -c 'nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/handoff bench/micro/handoff.cu && /tmp/handoff 45 >$OUT/handoff.txt 2>&1; cat $OUT/handoff.txt'
