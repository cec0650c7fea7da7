#!/bin/bash
# bench/device_s37.sh — session 37's first call: the few-row contractions
# beside PyTorch (bench/small_vs_torch.py, never timed before); the suite at
# its small bindings against eager (the regime of specs users write to try
# a compiler: launch-bound, where a cliff shows as a ratio under 1); the
# GPU fuzzer on fresh seeds (defaults, then the recompute variant with the
# PART code); CViT b10's per-kernel profile.  Needs build/gpu.
LIMIT=${LIMIT:-570}
. bench/steps.sh
step 170 bash -c "python3 bench/small_vs_torch.py --max-seconds 2 2>&1 | tee $OUT/small_vs_torch.txt"
step 170 bash -c "python3 bench/suite.py --scale small --no-compile --quick --max-seconds 0.4 --row-timeout 20 \
  --json $OUT/suite_small.json --markdown $OUT/suite_small.md >$OUT/suite_small.txt 2>&1; head -8 $OUT/suite_small.md; \
  grep -E '\| 0\.[0-9]+ \|' $OUT/suite_small.md | head -40"
step 130 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 300001:400000 --jobs 16 \
  --variants fp32,tf32,attn,recompute --time-limit 100 --min-time 60 --keep /tmp/fuzz_keep --json $OUT/fuzz.json \
  >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | tail -15; [ -d /tmp/fuzz_keep ] && tar -czf $OUT/fuzz_keep.tgz -C /tmp fuzz_keep"
KBC_PROFILE=1 step 40 build/gpu/kbc bench specs/cvit.kb --set batch_size=10 --set in_channels=3 --set image_size=32 \
  --iters 20 >$OUT/prof_cvit.txt 2>&1
step 30 build/gpu/kbc bench specs/cvit.kb --set batch_size=10 --set in_channels=3 --set image_size=32 >>$OUT/prof_cvit.txt 2>&1
tail -52 $OUT/prof_cvit.txt | cut -c1-90
