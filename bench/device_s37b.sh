#!/bin/bash
# bench/device_s37b.sh — session 37's second call: the host's share of a
# call (bench/host_overhead.py) with the package's kept argument layouts
# and the library's kept binding (build/gpu) against HEAD's (build/gpu-base,
# its python package beside it); gpu/python with the layout checks; the
# few-row contractions and the small suite beside PyTorch again; CViT with
# rows joins allowed to lose more per launch saved (KBC_JOIN_LOSS).
LIMIT=${LIMIT:-570}
. bench/steps.sh
step 120 bash -c 'cd build/gpu && ctest -R "gpu/python|gpu/smoke" --output-on-failure >$OUT/ctest_python.txt 2>&1; tail -4 $OUT/ctest_python.txt'
for b in gpu-base gpu; do
  KBC_LIB=$PWD/build/$b/libkbc.so step 60 bash -c "python3 bench/host_overhead.py --calls 1500 --python build/$b/python \
    >$OUT/host_$b.txt 2>&1; head -30 $OUT/host_$b.txt; grep -A14 'ncalls' $OUT/host_$b.txt | head -16"
done
step 100 bash -c "python3 bench/small_vs_torch.py --max-seconds 2 2>&1 | tee $OUT/small_vs_torch.txt"
step 110 bash -c "python3 bench/suite.py --scale small --problems activation,norm,matmul,softmax,pooling --no-compile --quick \
  --max-seconds 0.4 --row-timeout 20 --json $OUT/suite_small.json --markdown $OUT/suite_small.md >$OUT/suite_small.txt 2>&1; \
  head -8 $OUT/suite_small.md"
for j in 6 20 100; do
  for bsz in 1 10 64; do
    KBC_JOIN_LOSS=$j step 20 build/gpu/kbc bench specs/cvit.kb --set batch_size=$bsz --set in_channels=3 --set image_size=32 \
      2>&1 | grep -E "median" | sed "s/^/join_loss $j b$bsz: /"
  done
done
