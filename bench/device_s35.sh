#!/bin/bash
# bench/device_s35.sh — the next session's first device call, most important
# first, each step only while $LIMIT seconds (default 560) are not spent: the
# gpu ctest (its verify needs about 110 s), the persistent kernel of
# several blocks a multiprocessor (verified, then timed against the kernels
# in a graph: bench/ab_cases_persist.txt), the A/B queue
# bench/ab_queue_session35.txt (session 34's column sums as built, the
# shorter sums under KBC_ROWS_ACROSS=2, the padded convolution on wgmma at
# fp32), then the suite's parts for fast_1 and its geomean.
# Needs build/gpu and build/gpu-base (tools/gpu_build.sh 3a8dbfb).
LIMIT=${LIMIT:-560}
. bench/steps.sh
step 150 bench/device_run.sh gpu
AB_TIMEOUT=150 step 240 bench/device_run.sh persist
AB_QUEUE=bench/ab_queue_session35.txt AB_TIME=$((SECONDS + 160)) AB_TIMEOUT=100 step 170 bench/device_run.sh abq
SUITE_TIME=$((SECONDS + 150)) step 200 bench/device_run.sh suite
