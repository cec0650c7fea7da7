#!/bin/bash
# bench/device_run.sh PART — the device-side runs behind docs/BENCHMARKS.md
# (on the GPU machine, from the repository root, build in build/gpu):
#   check: every spec vs PyTorch at the small/odd and the benchmark shapes;
#   sam:   bench/compare.py for all 16 SAM-HQ shapes (eager peers, kbc);
#   rest:  bench/compare.py for CViT and conv3d, with torch.compile
#          ($COMPILE_MODES, default: default);
#   check+rest: both.
# Logs and JSON under $OUT.  The commit measured: write it beside the build
# before the build folder is carried (git rev-parse HEAD >build/gpu/kbc_commit),
# since the device copy's .git may lag.
set -u
[ -f build/gpu/kbc_commit ] && export KBC_COMMIT=$(cat build/gpu/kbc_commit)
OUT=${OUT:-/tmp}
export KBC_LIB=$PWD/build/gpu/libkbc.so KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-cache}
case "${1:-}" in
  check)
    tests/gpu/device_check.sh build/gpu tests/gpu/cases.txt >$OUT/check_small.txt 2>&1
    tests/gpu/device_check.sh build/gpu tests/gpu/cases_bench.txt >$OUT/check_bench.txt 2>&1
    tail -1 $OUT/check_small.txt $OUT/check_bench.txt ;;
  sam)
    python3 bench/compare.py --workloads sam --no-compile --json $OUT/sam.json --png $OUT/sam.png \
      >$OUT/sam.txt 2>&1; tail -40 $OUT/sam.txt ;;
  rest)
    python3 bench/compare.py --workloads cvit,conv3d --compile-modes ${COMPILE_MODES:-default} \
      --compile-timeout 150 --json $OUT/rest.json --png $OUT/rest.png >$OUT/rest.txt 2>&1
    tail -40 $OUT/rest.txt ;;
  check+rest)
    $0 check; $0 rest ;;
  *) echo "usage: bench/device_run.sh check|sam|rest|check+rest" >&2; exit 2 ;;
esac
