#!/bin/bash
# bench/device_s37e.sh — what session 37 built and could not run (no device
# time left): the next session's first call.  gpu/python (graphs in
# branches, KBC_GRAPH_BRANCHES=1, replayed and updated against the CPU
# interpreter; argument layouts; new x with the same weights), gpu/verify
# and the GPU fuzzer without and with branches (kbc verify now checks a
# third launch: the graph replayed with the outputs moved, its nodes
# updated where they write them and kept where not), the A/B of
# bench/ab_cases_branches.txt, SAM-HQ's small shapes beside eager with
# branches, and bench/act_probe.py (why Swish and GELU took 6 us more a
# call than ReLU).  Needs build/gpu.
LIMIT=${LIMIT:-570}
. bench/steps.sh
step 200 bash -c 'cd build/gpu && ctest -R "gpu/python|gpu/smoke|gpu/verify" --output-on-failure >$OUT/ctest_python.txt 2>&1; grep -E "branches|layouts, new|FAIL|tests passed|Error" $OUT/ctest_python.txt | tail -14'
for br in 0 1; do
  KBC_GRAPH_BRANCHES=$br step 70 bash -c "PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc \
    --seeds $((400001 + 50000 * br)):$((450000 + 50000 * br)) --jobs 16 --variants fp32,tf32,attn --time-limit 60 --min-time 40 \
    --keep /tmp/fuzz_keep$br --json $OUT/fuzz$br.json >$OUT/fuzz$br.txt 2>&1; grep -v '^rejected' $OUT/fuzz$br.txt | tail -4; \
    [ -d /tmp/fuzz_keep$br ] && tar -czf $OUT/fuzz_keep$br.tgz -C /tmp fuzz_keep$br"
done
AB_ITERS=100 step 150 bash -c "bench/ab.sh build/gpu build/gpu:KBC_GRAPH_BRANCHES=1 bench/ab_cases_branches.txt 2>&1 | tee $OUT/ab_branches.txt | tail -12"
KBC_GRAPH_BRANCHES=1 step 90 bash -c "python3 bench/compare.py --no-compile --workloads sam --sam-shapes 7x7x1,14x14x1 \
  --kbc-precisions fp32 --max-seconds 2 --json $OUT/sam_small.json >$OUT/sam_small.txt 2>&1; grep -E 'kbc|eager' $OUT/sam_small.txt | head"
step 30 bash -c "python3 bench/act_probe.py 2>&1 | tee $OUT/act_probe.txt"
