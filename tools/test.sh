#!/usr/bin/env bash
# test.sh — sets up, builds and runs every test of kbc.
#
#   1. installs the Debian packages it needs (tools/setup.sh);
#   2. a Release build in build/release: every test (unit, golden
#      diagnostics, CLI, fuzz corpus replay, CPU interpreter vs PyTorch);
#      GPU tests skip visibly where there is no GPU;
#   3. an ASan+UBSan build in build/asan: the same tests but the oracle
#      ones (the interpreter is exercised by the unit tests there), the
#      differential fuzzer (its time is the emulated kernels'), and the
#      NVRTC/nvcc compilations of generated code (their time is NVRTC's;
#      the Release run has them), and the python binding (an instrumented
#      libkbc.so cannot be loaded into an uninstrumented python, nor into
#      the installed-package test's uninstrumented examples), and the
#      KernelBench suite's checks (CPU interpreter against PyTorch, and
#      every spec compiled: both in the Release run); the kernel
#      emulation cases (codegen/emu) run with KBC_EMU_CODEGEN_ONLY=1:
#      every case compiled (specialized, narrowed, each env variant) by
#      the instrumented compiler, leak checks included, but neither
#      interpreted nor emulated (the emulated kernels are never
#      instrumented; the Release run emulates them, and the unit tests
#      run the interpreter under the sanitizers).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tools/setup.sh
jobs=$(nproc)

# KBC_TEST_LONG=1 adds the label `long` (the workloads' emulations that
# repeat another's paths, minutes each; left out to keep CI's 90 minutes).
long=(-LE long)
[ "${KBC_TEST_LONG:-0}" = 1 ] && long=()

cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release
ctest --test-dir build/release --output-on-failure -j"$jobs" ${long[@]+"${long[@]}"}

cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKBC_SANITIZE=ON >/dev/null
cmake --build build/asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 KBC_EMU_CODEGEN_ONLY=1 \
  ctest --test-dir build/asan --output-on-failure -j"$jobs" -LE "oracle|nvrtc|python|differential|package|suite" -E "^codegen/nvcc/"
