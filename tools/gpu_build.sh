#!/usr/bin/env bash
# gpu_build.sh [BASE_REV] — the build carried to the GPU machine, made here
# (that machine has no flex, bison or cmocka).
#
# Builds every target of HEAD's working tree in build/gpu (Release), writes
# the commit beside it (build/gpu/kbc_commit, read by bench/device_run.sh:
# the device copy's .git may lag) and bundles libcmocka.so.0 into
# build/gpu/lib for the unit tests.  With BASE_REV, also builds that commit
# in build/gpu-base for A/B profiles (KBC_BUILD=build/gpu-base).  Then carry
# ["build/gpu"] (and "build/gpu-base") and run bench/device_run.sh there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build() { # SRC DIR
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$2" >/dev/null
}
build . build/gpu
git rev-parse HEAD >build/gpu/kbc_commit
git diff --quiet HEAD || echo "gpu_build.sh: note: the working tree differs from HEAD" >&2
mkdir -p build/gpu/lib
cmocka=$(ldd build/gpu/tests/test_api | awk '/libcmocka/ {print $3}')
[ -n "$cmocka" ] && cp -L "$cmocka" build/gpu/lib/
if [ $# -ge 1 ]; then
  tree=$(mktemp -d)/base
  git worktree add -f "$tree" "$1" >/dev/null 2>&1
  trap 'git worktree remove --force "$tree"' EXIT
  rm -rf build/gpu-base # its cache names the last worktree, a temporary folder
  build "$tree" build/gpu-base
  git -C "$tree" rev-parse HEAD >build/gpu-base/kbc_commit
fi
du -sh build/gpu ${1:+build/gpu-base}
