#!/usr/bin/env bash
# test_nogpu.sh KBC SRCDIR — without a GPU, `run --backend cuda`, `bench`
# and `verify` fail at once with a clear message, exit 1, and write
# nothing; `run` without --backend falls back to the CPU; `compile --emit
# cuda|plan` needs an explicit target.  Skips (77) where a GPU exists.
set -u
kbc=$1 src=$2
if "$kbc" info | grep -q "device 0"; then echo "SKIP: a GPU is present"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spec=$src/specs/examples/softmax_middle.kb
fail=0
check() { # check WANT_RC PHRASE CMD...
  local want=$1 phrase=$2; shift 2
  "$@" >"$tmp/log" 2>&1
  local rc=$?
  if [ $rc -ne "$want" ] || ! grep -q "$phrase" "$tmp/log"; then
    echo "FAIL: rc $rc (want $want), '$phrase' expected: $*"; cat "$tmp/log"; fail=1
  fi
}
# The device is opened before the inputs are read: no inputs file is needed.
check 1 "no GPU available" "$kbc" run "$spec" --backend cuda --inputs "$tmp/none" --outputs "$tmp/out.safetensors"
[ -e "$tmp/out.safetensors" ] && { echo "FAIL: run wrote $tmp/out.safetensors"; fail=1; }
check 1 "no GPU available" "$kbc" bench "$spec" --set a=2 --set b=3 --set c=4
check 2 "needs every var axis" "$kbc" bench "$spec" --set a=2
# kbc verify: a clear message, exit 1, nothing on standard output (not even with --json)
mm=$src/specs/examples/matmul_bias_gelu.kb
check 1 "kbc verify: no GPU available: " "$kbc" verify "$mm" --set m=64 --set k=32 --set n=48
"$kbc" verify "$mm" --set m=64 --set k=32 --set n=48 --json >"$tmp/stdout" 2>/dev/null
[ -s "$tmp/stdout" ] && { echo "FAIL: verify --json printed to stdout without a GPU"; cat "$tmp/stdout"; fail=1; }
check 1 "kbc verify: no GPU available: " "$kbc" verify "$spec" --set a=1 --set b=1 --set c=1 --precision tf32 --seed 3
check 1 "kbc verify: no GPU available: " "$kbc" verify --batch
check 1 "kbc bench: no GPU available: " "$kbc" bench --batch
check 2 "missing: b, c" "$kbc" verify "$spec" --set a=2
# --emit plan needs no GPU with an explicit target, and says why without one
check 2 "missing: a, b, c" "$kbc" compile "$spec" --emit plan
check 1 "target auto" "$kbc" compile "$spec" --emit plan --set a=2 --set b=3 --set c=4
check 1 "target auto" "$kbc" compile "$spec" --emit cuda
check 0 "" "$kbc" compile "$spec" --emit cuda --target sm_90
[ $fail -eq 0 ] && echo "no-GPU behaviour: ok"
exit $fail
