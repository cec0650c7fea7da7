#!/usr/bin/env bash
# device_check.sh BIN_DIR [LIST] — every spec on the GPU vs PyTorch.
#
# For each case of LIST (default tests/gpu/cases.txt: "spec workload
# AXIS=N ..." per line), builds fresh random inputs and float64 expected
# outputs with tools/oracle.py, runs `kbc run --backend cuda`, and compares
# (relative L2 error <= 1e-5, fp32).  Prints one line per case and a
# summary; exit 0 when all pass, 1 otherwise, 77 without a GPU.
# Python: $KBC_PYTHON, else the first python3 that imports torch.
set -u
bin=$1
list=${2:-$(dirname "$0")/cases.txt}
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${KBC_PYTHON:-}
for cand in python3 /usr/bin/python3; do
  [ -n "$py" ] && break
  "$cand" -c 'import torch' >/dev/null 2>&1 && py=$cand
done
[ -n "$py" ] || { echo "SKIP: no python with torch"; exit 77; }
"$bin/kbc" info | grep -q "sm_" || true
if ! "$bin/kbc" info | grep -q "device 0"; then
  echo "SKIP: no GPU"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
while read -r spec workload rest; do
  case "$spec" in ''|'#'*) continue ;; esac
  sets=()
  for s in $rest; do sets+=(--set "$s"); done
  name="$workload $rest"
  if ! "$py" "$root/tools/oracle.py" gen "$workload" --inputs "$tmp/in" --expected "$tmp/exp" "${sets[@]}" >"$tmp/log" 2>&1; then
    echo "FAIL  $name: oracle gen"; cat "$tmp/log"; fail=$((fail + 1)); continue
  fi
  start=$(date +%s%N)
  if ! "$bin/kbc" run "$root/specs/$spec" --backend cuda --inputs "$tmp/in" --outputs "$tmp/out.safetensors" >"$tmp/log" 2>&1; then
    echo "FAIL  $name: kbc run"; head -30 "$tmp/log"; fail=$((fail + 1)); continue
  fi
  end=$(date +%s%N)
  if "$py" "$root/tools/oracle.py" compare "$tmp/exp" "$tmp/out.safetensors" --tol 1e-5 >"$tmp/log" 2>&1; then
    worst=$(awk 'NR>1 && $NF=="ok" {print $(NF-2)}' "$tmp/log" | sort -g | tail -1)
    printf 'ok    %-60s worst rel_l2 %s  (%d ms)\n' "$name" "$worst" $(((end - start) / 1000000))
    pass=$((pass + 1))
  else
    echo "FAIL  $name: compare"; cat "$tmp/log"; fail=$((fail + 1))
  fi
done <"$list"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
