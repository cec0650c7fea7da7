#!/bin/bash
# bench/ab.sh A B [CASES] — two kbc builds timed side by side in one run (on
# the GPU machine; e.g. build/gpu and build/gpu-base from tools/gpu_build.sh
# BASE_REV): only ratios measured in the same run count.  A side is a build
# folder, optionally with switches: `build/gpu:KBC_IDX32=1,KBC_NO_VEC=1`
# times the same build with and without them.
#
# CASES (default bench/ab_cases.txt) holds a case a line, `SPEC --set
# AXIS=N ...` ('#' starts a comment).  Every case is first compiled by both
# builds, 16 at a time (kbc compile --emit cubin --specialize into the
# kernel cache, $KBC_CACHE_DIR, default /tmp/kbc-ab), so that no timing
# waits for NVRTC; then each is timed by `kbc bench --json` (median of
# $AB_ITERS launches, default 100) in the order A B B A, and the table
# printed: case, A's two medians, B's two, and B / A of their means (above
# 1: A is faster).  A case that does not run says why.
set -u
[ $# -ge 2 ] || { echo "usage: bench/ab.sh BUILD_A BUILD_B [CASES]" >&2; exit 2; }
A=$1 B=$2 CASES=${3:-$(dirname "$0")/ab_cases.txt}
kbc_of() { # SIDE: the command that runs its kbc: env SWITCHES... DIR/kbc
  local dir=${1%%:*} sw=""
  [ "$dir" != "$1" ] && sw=$(echo "${1#*:}" | tr ',' ' ')
  echo "env $sw $dir/kbc"
}
for b in "$A" "$B"; do [ -x "${b%%:*}/kbc" ] || { echo "ab.sh: no kbc in ${b%%:*}" >&2; exit 2; }; done
[ -r "$CASES" ] || { echo "ab.sh: cannot read $CASES" >&2; exit 2; }
export KBC_CACHE_DIR=${KBC_CACHE_DIR:-/tmp/kbc-ab}
mkdir -p "$KBC_CACHE_DIR"
mapfile -t cases < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$CASES")
for c in "${cases[@]}"; do
  for b in "$A" "$B"; do
    # shellcheck disable=SC2086
    echo "$(kbc_of "$b") compile $c --emit cubin --specialize --target ${AB_TARGET:-sm_90a} -o /dev/null"
  done
done | xargs -P 16 -I{} sh -c '{} >/dev/null 2>&1'
median() { # SIDE CASE: the median in µs, or the reason it did not run
  # shellcheck disable=SC2086
  local out; out=$($(kbc_of "$1") bench $2 --iters "${AB_ITERS:-100}" --json 2>&1)
  python3 -c 'import json,sys
try: print(json.loads(sys.argv[1].strip().splitlines()[-1])["median_us"])
except Exception: print("failed:", sys.argv[1].strip().splitlines()[-1][:120] if sys.argv[1].strip() else "no output")' "$out"
}
printf "%-70s %10s %10s %10s %10s %7s\n" case "A µs" "A µs" "B µs" "B µs" "B/A"
for c in "${cases[@]}"; do
  a1=$(median "$A" "$c"); b1=$(median "$B" "$c"); b2=$(median "$B" "$c"); a2=$(median "$A" "$c")
  python3 -c 'import sys
c, v = sys.argv[1], sys.argv[2:]
try:
    a1, b1, b2, a2 = map(float, v)
    print(f"{c[:70]:70s} {a1:10.1f} {a2:10.1f} {b1:10.1f} {b2:10.1f} {(b1 + b2) / (a1 + a2):7.3f}")
except ValueError:
    print(f"{c[:70]:70s} " + " | ".join(x for x in v if x.startswith("failed"))[:200])' "$c" "$a1" "$b1" "$b2" "$a2"
done
