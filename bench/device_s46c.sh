#!/bin/bash
# bench/device_s46c.sh — session 46: A from registers on by default
# (KBC_GEMM_AREG=1) checked on the GPU: kbc verify of SAM-HQ and the
# products whose tiles it changes, then the GPU fuzzer's default and areg
# variants (fewer jobs: session 46's first run at 16 jobs found the GPU's
# memory taken, every context failing with CUDA_ERROR_OUT_OF_MEMORY).
# Needs build/gpu (tools/gpu_build.sh).
LIMIT=${LIMIT:-230}
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
. bench/steps.sh
SAM="specs/sam_hq_attn_relpos_bwd.kb"
step 10 bash -c "nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv; nvidia-smi --query-compute-apps=pid,used_memory --format=csv"
step 60 bash -c "build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=1 --set height=16 --set width=32 2>&1 | tail -1; \
  build/gpu/kbc verify $SAM --inputs -0.1:0.1 --set batch_size=2 --set height=9 --set width=13 2>&1 | tail -1; \
  build/gpu/kbc verify $SAM --inputs -0.1:0.1 --precision tf32 --set batch_size=1 --set height=16 --set width=16 2>&1 | tail -1; \
  build/gpu/kbc verify specs/examples/attention_bwd.kb --set batch=2 --set heads=4 --set seq=700 2>&1 | tail -1; \
  build/gpu/kbc verify tests/codegen/specs/gemm_trv_flat.kb --set batch=3 --set height=16 --set width=16 --set rows=7 --set cols=9 --set dim=40 2>&1 | tail -1"
step 140 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 960001:990000 --jobs 6 \
  --variants fp32,tf32,areg,areg_tf32,gemm_spec,wgmma_t,trv --time-limit 120 --min-time 10 >$OUT/fuzz.txt 2>&1; \
  grep -c '^FAIL' $OUT/fuzz.txt; grep -v '^rejected' $OUT/fuzz.txt | grep -E 'passed|specs' | tail -4; nvidia-smi --query-gpu=memory.used --format=csv"
