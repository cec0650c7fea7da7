#!/usr/bin/env bash
# profile.sh KBC SRCDIR — KBC_PROFILE=1 on the GPU: `kbc bench` of a
# two-statement spec prints, when the program is released, one line per
# kernel with its mean time and share, and the total; without it, none;
# by default (KBC_IDX32) the header says the 32-bit index variant ran,
# under KBC_IDX32=0 not.
# Exit 0 pass, 1 fail, 77 without a GPU.
set -u
kbc=$1
src=$2
if ! "$kbc" info 2>/dev/null | grep -q "device 0"; then
  echo "SKIP: no GPU"
  exit 77
fi
spec=$src/specs/examples/layernorm.kb
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
KBC_IDX32=0 KBC_PROFILE=1 "$kbc" bench "$spec" --set rows=64 --set cols=256 --iters 5 >"$log" 2>&1 || { echo "FAIL: kbc bench"; status=1; }
# the kernels of the program that runs: the one specialized for the binding
kernels=$("$kbc" compile "$spec" --emit plan --target sm_90 --set rows=64 --set cols=256 | grep -cE "^ +[0-9]+ +layernorm_k[0-9]+_")
grep -q "^kbc: profile of layernorm, [0-9]* runs" "$log" || { echo "FAIL: no profile header"; status=1; }
lines=$(grep -cE "^kbc: +[0-9.]+ us +[0-9.]+%  layernorm_k[0-9]+_" "$log")
[ "$lines" -eq "$kernels" ] || { echo "FAIL: $lines kernel lines, want $kernels"; status=1; }
grep -qE "^kbc: +[0-9.]+ us total$" "$log" || { echo "FAIL: no total"; status=1; }
grep -q "32-bit indices" "$log" && { echo "FAIL: 32-bit indices under KBC_IDX32=0"; status=1; }
# by default the binding fits, so the 32-bit index variant runs
KBC_PROFILE=1 "$kbc" bench "$spec" --set rows=64 --set cols=256 --iters 5 >"$log" 2>&1 ||
  { echo "FAIL: kbc bench with 32-bit indices"; status=1; }
grep -q "^kbc: profile of layernorm, [0-9]* runs.*, 32-bit indices" "$log" ||
  { echo "FAIL: the 32-bit index variant did not run by default"; status=1; }
"$kbc" bench "$spec" --set rows=64 --set cols=256 --iters 5 >"$log" 2>&1 || { echo "FAIL: kbc bench without profiling"; status=1; }
grep -q "profile of" "$log" && { echo "FAIL: a profile without KBC_PROFILE"; status=1; }
[ $status -eq 0 ] && echo "PASS: KBC_PROFILE prints $kernels kernel lines and the total"
[ $status -ne 0 ] && cat "$log"
exit $status
