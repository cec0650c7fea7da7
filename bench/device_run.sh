#!/bin/bash
# bench/device_run.sh PART — the device-side runs behind docs/BENCHMARKS.md
# (on the GPU machine, from the repository root, build in build/gpu made here
# by tools/gpu_build.sh and carried):
#   ctest: the whole ctest suite of build/gpu on the GPU (gpu tests included);
#   check: every spec vs PyTorch at the small/odd and the benchmark shapes
#          (into $OUT/check_*${TAG}.txt; e.g. KBC_IDX32=1 TAG=_idx32);
#   profile: per-kernel times of the three workloads (KBC_PROFILE=1), of the
#            build in $KBC_BUILD (default build/gpu), into $OUT/prof${TAG}.txt;
#            variants by environment, e.g. KBC_IDX32=1 TAG=_idx32, or
#            KBC_IDX32=1 KBC_GEMM_MIN_BLOCKS=2 TAG=_idx32mb2 (the kernel
#            cache keys on the generated text: variants never collide);
#   sam:   bench/compare.py for all 16 SAM-HQ shapes (eager peers, kbc);
#   rest:  bench/compare.py for CViT and conv3d, with torch.compile
#          ($COMPILE_MODES, default: default);
#   check+rest: both;
#   sam-compile-1..4: torch.compile (default) for SAM-HQ, four shapes a call;
#   autotune: max-autotune at the headline shapes of $AUTOTUNE_WORKLOADS
#            (default cvit,conv3d; sam: 7x7 b1, 32x32 b2, 64x64 b4);
#   attention: bench/suite.py --problems attention (attention as users write
#          it, against F.scaled_dot_product_attention and torch.compile) at
#          kbc fp32, then kbc-only at tf32 and at fp32 with KBC_FP32_MMA=1;
#   session: one call's worth (under 10 minutes): gpu, attention, the small
#          checks and the fuzzer for $FUZZ_TIME (default 120) s, each under a
#          time limit, every log in $OUT/logs.tgz (a call returns only a few
#          files);
#   suite: bench/suite.py category by category ($SUITE_PARTS, default every
#          category; $SUITE_ARGS, default --no-compile --quick
#          --max-seconds 1.5), each into $OUT/suite_<part>.{json,md,txt}, no
#          part started past $SUITE_TIME (default 500) seconds; merge them
#          with bench/suite.py --merge;
#   suite-compile: `warm` for the problems of $SUITE_PARTS (default every
#          category), then `suite` of those parts with the torch.compile
#          column ($SUITE_ARGS default --quick --max-seconds 1.5), in one
#          call (about 5 s a problem on the H200: two calls for the whole
#          suite, the second within the machine's idle time so that
#          Inductor's caches in /tmp are still there);
#   warm:  torch.compile every suite problem ($SUITE_PROBLEMS, default all) once,
#          $WARM_JOBS (default 12) processes at a time, into Inductor's
#          on-disk caches: then `suite` with SUITE_ARGS without --no-compile
#          times the compile column within a call (the caches live in /tmp
#          while the machine stays warm);
#   nocliff: bench/nocliff.py, the chosen plans against the plain ones
#          (KBC_NO_FUSE=1): the suite ($NOCLIFF_SUITE, default all, at
#          --scale $NOCLIFF_SCALE, default kernelbench; timing for at most
#          $NOCLIFF_SUITE_TIME, default 300 s), then the fuzzer's specs of
#          seeds $NOCLIFF_FUZZ (default 1:1001; $NOCLIFF_FUZZ_TIME, default
#          200 s), into $OUT/nocliff_{suite,fuzz}.{txt,json};
#   abq:   bench/ab.sh for each line "A B CASES" of $AB_QUEUE (default
#          bench/ab_queue.txt), each under $AB_TIMEOUT (default 150) s,
#          no line started past $AB_TIME (default 500) s, into $OUT/abq.txt;
#   gpu:   the ctest tests labelled gpu (into $OUT/ctest_gpu.txt);
#   colsum: bench/micro/colsum.cu (a sum over a middle dimension in several
#          kernel shapes, KernelBench L1/47's 128 x 4096 x 4095) and
#          torch.sum over the same shape, then a column sum of 1048576 x 64
#          (bench/micro/colsum0.kb) the same ways, kbc bench beside both,
#          into $OUT/colsum.txt;
#   handoff: what a stage boundary costs, graph kernels against persistent
#          hand-off protocols (bench/micro/handoff.cu; $OUT/handoff.txt);
#   persist: the persistent kernel (KBC_PERSIST=2) verified and timed
#          against the kernels one by one at bench/ab_cases_persist.txt's
#          cases ($OUT/persist_{verify,ab}.txt);
#   reach: tools/demo.sh's GPU table ($OUT/demo.txt), the python package on
#          CUDA and the installed package's examples ($OUT/ctest_reach.txt);
#   fuzz:  the differential spec fuzzer on the GPU (tests/fuzz/difftest.py
#          gpu: kbc verify of random specs, $FUZZ_JOBS at a time) over
#          $FUZZ_SEEDS in $FUZZ_VARIANTS for at most $FUZZ_TIME seconds;
#          the log, the per-seed JSON and the minimized failures (a tarball)
#          under $OUT.
# Then: python3 bench/compare.py --merge A.json B.json ... --json ... --png ...
# Logs and JSON under $OUT.  The commit measured is the one tools/gpu_build.sh
# wrote beside the build (build/gpu/kbc_commit): the device copy's .git may lag.
set -u
[ -f build/gpu/kbc_commit ] && export KBC_COMMIT=$(cat build/gpu/kbc_commit)
OUT=${OUT:-/tmp}
PRECISIONS=${KBC_PRECISIONS:-fp32,tf32} # kbc rows; add fp32mma for the 3xTF32 variant
# The first python3 whose torch sees a CUDA device (else python3), for the
# python tests: the GPU machine's torch need not be /usr/bin/python3's.
torch_python() {
  local p
  for p in python3 /usr/bin/python3 /usr/local/bin/python3 /opt/conda/bin/python3; do
    command -v "$p" >/dev/null && "$p" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null &&
      { command -v "$p"; return; }
  done
  echo "device_run.sh: no python3 here has torch with CUDA" >&2
  command -v python3
}
export KBC_LIB=$PWD/build/gpu/libkbc.so KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-cache}
case "${1:-}" in
  ctest)
    # ctest's files name the source folder of the build made here: link it
    src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/gpu/CMakeCache.txt)
    [ "$src" = "$PWD" ] || { mkdir -p "$(dirname "$src")" && ln -sfn "$PWD" "$src"; }
    py=$(torch_python)
    LD_LIBRARY_PATH=$PWD/build/gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} KBC_PYTHON=$(command -v $py) \
      ctest --test-dir "$src/build/gpu" -j"$(nproc)" --output-on-failure >$OUT/ctest.txt 2>&1
    grep -E "tests passed|Skipped|Failed" $OUT/ctest.txt ;;
  check)
    tests/gpu/device_check.sh build/gpu tests/gpu/cases.txt >$OUT/check_small${TAG:-}.txt 2>&1
    tests/gpu/device_check.sh build/gpu tests/gpu/cases_bench.txt >$OUT/check_bench${TAG:-}.txt 2>&1
    tail -n 1 $OUT/check_small${TAG:-}.txt; tail -n 1 $OUT/check_bench${TAG:-}.txt ;;
  profile)
    # per-kernel times (KBC_PROFILE=1 kbc bench) at the benchmark shapes
    B=${KBC_BUILD:-build/gpu}/kbc S=specs/sam_hq_attn_relpos_bwd.kb
    {
      KBC_PROFILE=1 $B bench specs/conv3d_min_softmax.kb --set batch_size=128 --set in_channels=3 --set d=24 \
        --set h=32 --set w=32 --iters 50
      for sh in ${SAM_SHAPES:-"4 64 64" "2 32 32" "8 14 14" "64 7 7"}; do
        set -- $sh
        KBC_PROFILE=1 $B bench $S --set batch_size=$1 --set height=$2 --set width=$3 --iters 10
      done
      KBC_PROFILE=1 $B bench specs/cvit.kb --set batch_size=10 --set in_channels=3 --set image_size=32 --iters 50
    } >$OUT/prof${TAG:-}.txt 2>&1
    grep -v "^kbc:   .*  0.0%" $OUT/prof${TAG:-}.txt ;;
  sam)
    python3 bench/compare.py --workloads sam --no-compile --kbc-precisions $PRECISIONS --json $OUT/sam.json --png $OUT/sam.png \
      >$OUT/sam.txt 2>&1; tail -40 $OUT/sam.txt ;;
  rest)
    python3 bench/compare.py --workloads cvit,conv3d --compile-modes ${COMPILE_MODES:-default} --kbc-precisions $PRECISIONS \
      --compile-timeout 150 --json $OUT/rest.json --png $OUT/rest.png >$OUT/rest.txt 2>&1
    tail -40 $OUT/rest.txt ;;
  check+rest)
    $0 check; $0 rest ;;
  sam-compile-1|sam-compile-2|sam-compile-3|sam-compile-4)
    # torch.compile (default) for SAM-HQ, a quarter of the shapes per call
    case "$1" in
      *1) shapes=7x7x1,7x7x64,14x14x1,14x14x2 ;;
      *2) shapes=14x14x8,16x16x1,16x16x32,28x28x4 ;;
      *3) shapes=32x32x1,32x32x2,32x32x4,32x32x8 ;;
      *4) shapes=48x48x1,48x48x2,56x56x1,64x64x4 ;;
    esac
    python3 bench/compare.py --workloads sam --sam-shapes $shapes --compile-modes default \
      --compile-timeout 120 --json $OUT/$1.json --png $OUT/$1.png >$OUT/$1.txt 2>&1
    tail -30 $OUT/$1.txt ;;
  autotune)
    # max-autotune at the headline shapes (full repetitions)
    python3 bench/compare.py --workloads ${AUTOTUNE_WORKLOADS:-cvit,conv3d} --headline --compile-modes max-autotune \
      --compile-timeout ${AUTOTUNE_TIMEOUT:-240} \
      --json $OUT/autotune.json --png $OUT/autotune.png >$OUT/autotune.txt 2>&1
    tail -30 $OUT/autotune.txt ;;
  attention)
    python3 bench/suite.py --problems attention --json $OUT/attn_fp32.json --markdown $OUT/attn_fp32.md \
      --compile-timeout 120 >$OUT/attn_fp32.txt 2>&1
    python3 bench/suite.py --problems attention --kbc-only --kbc-precision tf32 --json $OUT/attn_tf32.json \
      --markdown $OUT/attn_tf32.md >$OUT/attn_tf32.txt 2>&1
    KBC_FP32_MMA=1 python3 bench/suite.py --problems attention --kbc-only --json $OUT/attn_fp32mma.json \
      --markdown $OUT/attn_fp32mma.md >$OUT/attn_fp32mma.txt 2>&1
    grep -h "^|" $OUT/attn_fp32.md $OUT/attn_tf32.md $OUT/attn_fp32mma.md ;;
  session)
    final=$OUT
    export OUT=$(mktemp -d)/logs
    mkdir -p "$OUT"
    timeout 110 "$0" gpu
    timeout 200 "$0" attention
    timeout 150 tests/gpu/device_check.sh build/gpu tests/gpu/cases.txt >$OUT/check_small.txt 2>&1
    grep -c "^ok" $OUT/check_small.txt; grep -v "^ok" $OUT/check_small.txt | tail -5
    FUZZ_TIME=${FUZZ_TIME:-120} timeout $((${FUZZ_TIME:-120} + 40)) "$0" fuzz | tail -4
    tar -czf "$final/logs.tgz" -C "$(dirname "$OUT")" logs ;;
  suite)
    for part in ${SUITE_PARTS:-matmul activation,softmax norm pooling reduction,loss gemm_fusion conv_fusion conv conv_transpose}; do
      [ "$SECONDS" -ge "${SUITE_TIME:-500}" ] && { echo "suite: no time left for $part"; continue; }
      n=$(echo "$part" | tr ',/*' '__x')
      python3 bench/suite.py --problems "$part" ${SUITE_ARGS:---no-compile --quick --max-seconds 1.5} \
        --json "$OUT/suite_$n.json" --markdown "$OUT/suite_$n.md" >"$OUT/suite_$n.txt" 2>&1
      echo "== $part at $SECONDS s"; grep -E "fast_1|geomean" "$OUT/suite_$n.md"
    done ;;
  suite-compile)
    parts=${SUITE_PARTS:-matmul activation,softmax norm pooling reduction,loss gemm_fusion conv_fusion conv conv_transpose}
    SUITE_PROBLEMS=$(echo $parts | tr ' ' ',') "$0" warm
    SUITE_PARTS=$parts SUITE_ARGS=${SUITE_ARGS:---quick --max-seconds 1.5} "$0" suite ;;
  warm)
    python3 bench/suite.py ${SUITE_PROBLEMS:+--problems "$SUITE_PROBLEMS"} --warm-compile ${WARM_JOBS:-12} \
      >$OUT/warm.txt 2>&1
    grep -E "FAIL|^warm-compile" $OUT/warm.txt ;;
  nocliff)
    PYTHONUNBUFFERED=1 python3 bench/nocliff.py --kbc build/gpu/kbc --suite "${NOCLIFF_SUITE:-}" \
      --scale ${NOCLIFF_SCALE:-kernelbench} --max-seconds ${NOCLIFF_SUITE_TIME:-300} \
      --json $OUT/nocliff_suite.json >$OUT/nocliff_suite.txt 2>&1
    PYTHONUNBUFFERED=1 python3 bench/nocliff.py --kbc build/gpu/kbc --fuzz ${NOCLIFF_FUZZ:-1:1001} \
      --max-seconds ${NOCLIFF_FUZZ_TIME:-200} --json $OUT/nocliff_fuzz.json >$OUT/nocliff_fuzz.txt 2>&1
    grep -hE "^nocliff|CLIFF|did not" $OUT/nocliff_suite.txt $OUT/nocliff_fuzz.txt | tail -60 ;;
  abq)
    sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "${AB_QUEUE:-bench/ab_queue.txt}" | while read -r a b cases; do
      [ "$SECONDS" -ge "${AB_TIME:-500}" ] && { echo "abq: no time left for $a $b $cases"; continue; }
      echo "== A=$a B=$b ($cases, at $SECONDS s)"
      timeout "${AB_TIMEOUT:-150}" bench/ab.sh "$a" "$b" "$cases" 2>&1 | tail -n +2 | cut -c1-50,70-
    done | tee $OUT/abq.txt ;;
  persist)
    # issue 15: the persistent kernel (KBC_PERSIST=2) checked against the
    # interpreter by kbc verify at every case of bench/ab_cases_persist.txt,
    # fp32 and tf32, then timed against the kernels launched one by one.
    # Inputs in [-0.1, 0.1) ($PERSIST_INPUTS): at verify's default [-1, 1)
    # SAM-HQ's scores reach the hundreds and its gradients lose 1e-4 in fp32
    # whatever the plan (the kernel emulator: the same errors, bit for bit,
    # with the kernels launched one by one)
    sed -e 's/#.*//' -e '/^[[:space:]]*$/d' bench/ab_cases_persist.txt | while read -r spec args; do
      for prec in fp32 tf32; do
        r=$(KBC_PERSIST=2 timeout 120 build/gpu/kbc verify "$spec" $args --precision $prec --inputs ${PERSIST_INPUTS:--0.1:0.1} 2>&1 |
          tail -n 2 | tr '\n' ' ')
        echo "$prec $spec $args: $r"
      done
    done | tee $OUT/persist_verify.txt
    timeout "${AB_TIMEOUT:-300}" bench/ab.sh build/gpu build/gpu:KBC_PERSIST=2 bench/ab_cases_persist.txt 2>&1 |
      tee $OUT/persist_ab.txt ;;
  handoff)
    # issue 15: what a stage boundary costs (bench/micro/handoff.cu: a chain
    # of 45 stages as graph kernels, with PDL, and as persistent kernels
    # of several hand-off protocols)
    { nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/handoff bench/micro/handoff.cu && /tmp/handoff 45; } 2>&1 |
      tee $OUT/handoff.txt ;;
  colsum)
    { nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/colsum bench/micro/colsum.cu && /tmp/colsum
      $(torch_python) -c '
import torch
x = torch.randn(128, 4096, 4095, device="cuda")
for _ in range(3): torch.sum(x, dim=1, keepdim=True)
ts = []
for _ in range(15):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(); torch.sum(x, dim=1, keepdim=True); b.record(); torch.cuda.synchronize()
    ts.append(a.elapsed_time(b) * 1000)
print("torch.sum(dim=1): %.1f us" % sorted(ts)[7])
y = torch.randn(1048576, 64, device="cuda")
for _ in range(3): torch.sum(y, dim=0)
ts = []
for _ in range(15):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(); torch.sum(y, dim=0); b.record(); torch.cuda.synchronize()
    ts.append(a.elapsed_time(b) * 1000)
print("torch.sum(dim=0) 1048576 x 64: %.1f us" % sorted(ts)[7])'
      /tmp/colsum 1 1048576 64
      for s in "bench/suite/1_47_sum_dim.kb --set batch_size=128 --set dim1=4096 --set dim2=4095" \
               "bench/micro/colsum0.kb --set n=1048576 --set m=64"; do
        echo "kbc $s: $(build/gpu/kbc bench $s --iters 30 2>&1 | head -1)"
      done; } 2>&1 | tee $OUT/colsum.txt ;;
  gpu)
    src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/gpu/CMakeCache.txt)
    [ "$src" = "$PWD" ] || { mkdir -p "$(dirname "$src")" && ln -sfn "$PWD" "$src"; }
    py=$(torch_python)
    LD_LIBRARY_PATH=$PWD/build/gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} KBC_PYTHON=$(command -v $py) \
      ctest --test-dir "$src/build/gpu" -L gpu -j4 --output-on-failure >$OUT/ctest_gpu.txt 2>&1
    # a skipped test's reason (its SKIP: line) is only in ctest's log
    grep -h "^SKIP:" "$src/build/gpu/Testing/Temporary/LastTest.log" >>$OUT/ctest_gpu.txt 2>/dev/null
    grep -E "tests passed|Skipped|Failed|\*\*\*|^SKIP:" $OUT/ctest_gpu.txt ;;
  reach)
    # issue 16 on the GPU: tools/demo.sh's GPU table, the python package on
    # CUDA (gpu/python) and the installed package's embed_gpu (package/)
    KBC_BUILD=build/gpu tools/demo.sh >$OUT/demo.txt 2>&1; echo "demo.sh: exit $?"; tail -12 $OUT/demo.txt
    src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/gpu/CMakeCache.txt)
    [ "$src" = "$PWD" ] || { mkdir -p "$(dirname "$src")" && ln -sfn "$PWD" "$src"; }
    py=$(torch_python)
    LD_LIBRARY_PATH=$PWD/build/gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} KBC_PYTHON=$(command -v $py) \
      ctest --test-dir "$src/build/gpu" -R "gpu/python|package/" -V >$OUT/ctest_reach.txt 2>&1
    grep -E "^ok|FAIL|SKIP|skipped|tests passed|Failed|\*\*\*" $OUT/ctest_reach.txt | tail -40 ;;
  fuzz)
    PYTHONUNBUFFERED=1 python3 tests/fuzz/difftest.py gpu --kbc build/gpu/kbc --seeds ${FUZZ_SEEDS:-1:100001} \
      --jobs ${FUZZ_JOBS:-16} --variants ${FUZZ_VARIANTS:-fp32,tf32,attn} --time-limit ${FUZZ_TIME:-400} --min-time 90 \
      --keep /tmp/fuzz_keep --json $OUT/fuzz.json >$OUT/fuzz.txt 2>&1
    [ -d /tmp/fuzz_keep ] && tar -czf $OUT/fuzz_keep.tgz -C /tmp fuzz_keep
    grep -v "^rejected" $OUT/fuzz.txt | tail -60 ;;
  *) echo "usage: bench/device_run.sh ctest|check|profile|sam|rest|check+rest|sam-compile-N|autotune|attention|session|suite|suite-compile|warm|nocliff|abq|gpu|colsum|reach|fuzz" >&2; exit 2 ;;
esac
