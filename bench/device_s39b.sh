#!/bin/bash
# bench/device_s39b.sh — Nsight Compute on the kernels whose next change
# needs to know what bounds them: conv3d -> min -> softmax b128 (the
# window loop, 3xTF32 and TF32: issue 14's 180 / 80 us) and the 49-row
# product on SAM-HQ 7x7 b1's critical path (49 x 2304 x 768).  Per kernel:
# the speed-of-light, the pipes, the instruction mix, the warp stalls and
# the shared-memory wavefronts.  Needs build/gpu.
LIMIT=${LIMIT:-570}
. bench/steps.sh
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
SECS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis_Tables"
MET="--metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active"
prof() { # NAME KBC-BENCH-ARGS...
  local n=$1; shift
  KBC_NO_GRAPH=1 timeout 120 $NCU --launch-skip 3 --launch-count 1 $SECS $MET build/gpu/kbc bench --iters 3 "$@" >$OUT/ncu_$n.txt 2>&1
  grep -E "Duration|Throughput|Issued Ipc|Executed Ipc|Warp Cycles Per Issued|Achieved Active Warps|Registers Per|hmma|inst_executed|bank_conflicts|wavefronts|pipe_lsu|pipe_fma|pipe_alu|Stall|No Eligible|One or More" $OUT/ncu_$n.txt | head -40
}
C3="specs/conv3d_min_softmax.kb --set batch_size=128 --set in_channels=3 --set d=24 --set h=32 --set w=32"
step 100 prof conv3d_fp32 $C3
step 100 prof conv3d_tf32 $C3 --precision tf32
step 100 prof mm49 specs/examples/matmul_bias_gelu.kb --set m=49 --set n=2304 --set k=768
AB_ITERS=100 step 100 bash -c "bench/ab.sh build/gpu:KBC_GEMM_WIN_BSPLIT=0 build/gpu bench/ab_cases_bsplit.txt 2>&1 | tee $OUT/ab_bsplit.txt | tail -7"
step 60 bash -c 'KBC_GEMM_WIN_BSPLIT=1 build/gpu/kbc verify specs/conv3d_min_softmax.kb --set batch_size=16 --set in_channels=3 --set d=24 --set h=32 --set w=32 2>&1 | tail -3'
