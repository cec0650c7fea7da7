#!/bin/bash
# bench/device_s37d.sh — session 37's fourth call, cut to the device time
# left: graphs in branches checked (gpu/python: an attention backward and a
# spec of three outputs replayed and updated against the CPU interpreter;
# the GPU fuzzer, whose kbc verify now checks a replayed graph), timed
# (bench/ab_cases_branches.txt, its small cases), and bench/act_probe.py.
LIMIT=${LIMIT:-300}
. bench/steps.sh
step 80 bash -c 'cd build/gpu && ctest -R "gpu/python|gpu/smoke" --output-on-failure >$OUT/ctest_python.txt 2>&1; grep -E "branches|layouts, new|FAIL|tests passed|Error" $OUT/ctest_python.txt | tail -14'
step 70 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 400001:500000 --jobs 16 \
  --variants fp32,tf32,attn --time-limit 50 --min-time 40 --keep /tmp/fuzz_keep --json $OUT/fuzz.json \
  >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | tail -4; [ -d /tmp/fuzz_keep ] && tar -czf $OUT/fuzz_keep.tgz -C /tmp fuzz_keep"
head -9 bench/ab_cases_branches.txt | grep -v "64x64\|64 --set width=64" > /tmp/ab_small.txt
AB_ITERS=100 step 110 bash -c "bench/ab.sh build/gpu:KBC_GRAPH_BRANCHES=0 build/gpu /tmp/ab_small.txt 2>&1 | tee $OUT/ab_branches.txt | tail -9"
step 30 bash -c "python3 bench/act_probe.py 2>&1 | tee $OUT/act_probe.txt"
