#!/bin/bash
# bench/device_s39d.sh — device_s39c.sh cut to the device time left after
# the session's failed starts: conv3d verified with the window's splits,
# the GPU fuzzer (the edge copies' first GPU run), the B split's A/B, the
# split-K slice minimum's.  Needs build/gpu.
LIMIT=${LIMIT:-280}
. bench/steps.sh
step 30 bash -c 'for sw in KBC_GEMM_WIN_ASPLIT=0 KBC_GEMM_WIN_ASPLIT=1; do env $sw build/gpu/kbc verify specs/conv3d_min_softmax.kb --set batch_size=2 --set in_channels=3 --set d=24 --set h=32 --set w=32 2>&1 | tail -2 | sed "s/^/$sw /"; done'
step 60 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 500001:550000 --jobs 16 \
  --variants fp32,split --time-limit 45 --min-time 30 --json $OUT/fuzz.json >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | tail -3"
AB_ITERS=100 step 95 bash -c "bench/ab.sh build/gpu:KBC_GEMM_WIN_BSPLIT=0 build/gpu bench/ab_cases_bsplit.txt 2>&1 | tee $OUT/ab_bsplit.txt | tail -7"
AB_ITERS=100 step 90 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GEMM_SPLIT_MIN=4 bench/ab_cases_s38c.txt 2>&1 | tee $OUT/ab_split_min.txt | tail -7"
