#!/bin/bash
# bench/device_s46b.sh — the SAM-HQ shapes session 45's sixteen-shape run
# (docs/results/2026-12-07-session45-sam11.json, cut off by its limit)
# lacks, against PyTorch eager in one run; merge the two with
# `python3 bench/compare.py --merge A.json B.json`.  Needs build/gpu.
LIMIT=${LIMIT:-560}
. bench/steps.sh
step 520 bash -c "python3 bench/compare.py --quick --no-compile --sam-shapes 64x64x4,32x32x8,48x48x1,48x48x2,56x56x1 --workloads sam \
  --kbc-precisions fp32,tf32 --json $OUT/compare5.json >$OUT/compare5.txt 2>&1; grep -E '^== |kbc fp32|kbc tf32|autograd eager  ' $OUT/compare5.txt | tail -24"
