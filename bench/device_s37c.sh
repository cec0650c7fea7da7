#!/bin/bash
# bench/device_s37c.sh — session 37's fourth call: graphs captured in
# branches.  gpu/python (its branches check: an attention backward and a
# spec of three outputs, replayed and updated against the CPU
# interpreter), the GPU fuzzer (kbc verify now launches three times: the
# last launch a graph replay, in branches where the order allows), then the
# A/B (bench/ab_cases_branches.txt) and SAM-HQ small shapes beside eager;
# bench/act_probe.py: why swish and GELU took 6 us more than ReLU a call.
LIMIT=${LIMIT:-570}
. bench/steps.sh
step 150 bash -c 'cd build/gpu && ctest -R "gpu/python|gpu/smoke" --output-on-failure >$OUT/ctest_python.txt 2>&1; grep -E "branches|FAIL|tests passed|Error" $OUT/ctest_python.txt | tail -12'
step 100 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds 400001:500000 --jobs 16 \
  --variants fp32,tf32,attn --time-limit 75 --min-time 60 --keep /tmp/fuzz_keep --json $OUT/fuzz.json \
  >$OUT/fuzz.txt 2>&1; grep -v '^rejected' $OUT/fuzz.txt | tail -6; [ -d /tmp/fuzz_keep ] && tar -czf $OUT/fuzz_keep.tgz -C /tmp fuzz_keep"
AB_ITERS=200 step 200 bash -c "bench/ab.sh build/gpu:KBC_GRAPH_BRANCHES=0 build/gpu bench/ab_cases_branches.txt 2>&1 | tee $OUT/ab_branches.txt | tail -12"
step 100 bash -c "python3 bench/compare.py --no-compile --workloads sam --sam-shapes 7x7x1,14x14x1 --kbc-precisions fp32 \
  --max-seconds 2 --json $OUT/sam_small.json >$OUT/sam_small.txt 2>&1; grep -E 'kbc|eager' $OUT/sam_small.txt | head"
step 60 bash -c "python3 bench/act_probe.py 2>&1 | tee $OUT/act_probe.txt"
step 40 bash -c "KBC_DEBUG=1 python3 bench/act_probe.py 2>&1 | grep -vE '^launch' | sed -E 's/[0-9]+/N/g' | sort | uniq -c | sort -rn | head -20"
