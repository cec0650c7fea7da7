#!/bin/bash
# bench/device_s35b.sh — session 35's second device call: what a stage
# boundary costs (bench/micro/handoff.cu), the persistent kernel of several
# blocks a multiprocessor against the kernels in a graph at every case of
# bench/ab_cases_persist.txt (its verify passed in the first call), the
# suite's reductions beside eager, then gpu/verify alone (cut by the first
# call's 150 s step).  Needs build/gpu (tools/gpu_build.sh).
LIMIT=${LIMIT:-580}
. bench/steps.sh
step 60 bench/device_run.sh handoff
step 270 bash -c 'bench/ab.sh build/gpu build/gpu:KBC_PERSIST=2 bench/ab_cases_persist.txt 2>&1 | tee $OUT/persist_ab.txt'
SUITE_PARTS=reduction SUITE_TIME=$((SECONDS + 90)) step 100 bench/device_run.sh suite
step $(( $(left) - 5 )) bash -c 'src=$(sed -n "s/^CMAKE_HOME_DIRECTORY:INTERNAL=//p" build/gpu/CMakeCache.txt)
  [ "$src" = "$PWD" ] || { mkdir -p "$(dirname "$src")" && ln -sfn "$PWD" "$src"; }
  LD_LIBRARY_PATH=$PWD/build/gpu/lib ctest --test-dir "$src/build/gpu" -R gpu/verify --output-on-failure >$OUT/ctest_verify.txt 2>&1
  tail -5 $OUT/ctest_verify.txt'
