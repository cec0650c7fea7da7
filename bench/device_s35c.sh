#!/bin/bash
# bench/device_s35c.sh — session 35's third device call: the GPU fuzzer's
# persistent variants on the kernel of several blocks a multiprocessor and
# no fence in its hand-off, then bench/ab_queue_session35b.txt.
# Needs build/gpu (tools/gpu_build.sh).
LIMIT=${LIMIT:-500}
. bench/steps.sh
FUZZ_VARIANTS=persist,persist_tf32,persist_gemm FUZZ_TIME=70 FUZZ_SEEDS=3001:100001 step 110 bench/device_run.sh fuzz
AB_QUEUE=bench/ab_queue_session35b.txt AB_TIME=$((SECONDS + 330)) AB_TIMEOUT=200 step 360 bench/device_run.sh abq
