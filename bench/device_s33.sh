#!/bin/bash
# bench/device_s33.sh — session 33's first device call, most important first,
# each step only while $LIMIT seconds (default 560) are not spent: the gpu
# ctest (gpu/verify's pack cases, first GPU run), the column sums' kernel
# shapes (bench/micro/colsum.cu) against torch.sum, the suite's problems
# whose code KBC_ROWS_ACROSS changes (checked against PyTorch, timed against
# eager, at the rule, never and everywhere), the A/B queue
# (bench/ab_queue_session33.txt), cuBLAS at 4096^3 in the same call as the
# queue's matmul_bias_gelu (torch_mm.py), tools/demo.sh's table.
# Needs build/gpu and build/gpu-base (tools/gpu_build.sh f52ad44).
LIMIT=${LIMIT:-560}
. bench/steps.sh
step 90 bench/device_run.sh gpu
step 60 bench/device_run.sh colsum
step 120 python3 bench/suite.py --problems L1/47,L1/48,L1/49,L1/53,L2/14,L2/18,L2/33,L2/41,L2/84,L2/23 \
  --no-compile --quick --max-seconds 1.5 --kbc-env KBC_ROWS_ACROSS=0 --kbc-env KBC_ROWS_ACROSS=2 \
  --json $OUT/suite_across.json --markdown $OUT/suite_across.md >$OUT/suite_across.txt 2>&1
tail -25 $OUT/suite_across.md
AB_QUEUE=bench/ab_queue_session33.txt AB_TIME=250 AB_TIMEOUT=110 step 330 bench/device_run.sh abq
step 30 python3 bench/micro/torch_mm.py 2>&1 | tee $OUT/torch_mm.txt
step 60 bench/device_run.sh reach
