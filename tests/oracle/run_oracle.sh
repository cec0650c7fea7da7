#!/usr/bin/env bash
# run_oracle.sh KBC SPEC WORKLOAD [AXIS=N]... — one CPU-vs-PyTorch check.
#
# Builds fresh random inputs and float64 expected outputs with PyTorch's own
# modules (tools/oracle.py), runs `KBC run SPEC --backend cpu` on them, and
# requires every output within relative L2 error 1e-5 of PyTorch.
# Exit 0 pass, 1 fail, 77 skip (no python with torch).
set -u
kbc=$1 spec=$2 workload=$3
shift 3
root=$(cd "$(dirname "$0")/../.." && pwd)

py=${KBC_PYTHON:-}
if [ -z "$py" ]; then
  for cand in /usr/bin/python3 python3; do
    if "$cand" -c 'import torch, numpy' >/dev/null 2>&1; then py=$cand; break; fi
  done
fi
if [ -z "$py" ]; then
  echo "SKIP: no python with torch and numpy (set KBC_PYTHON)"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sets=()
for s in "$@"; do sets+=(--set "$s"); done

"$py" "$root/tools/oracle.py" gen "$workload" --inputs "$tmp/in.safetensors" --expected "$tmp/exp.safetensors" \
  "${sets[@]}" || exit 1
start=$(date +%s.%N)
"$kbc" run "$spec" --backend cpu --inputs "$tmp/in.safetensors" --outputs "$tmp/out.safetensors" || exit 1
end=$(date +%s.%N)
printf 'kbc run --backend cpu: %.2f s\n' "$(echo "$end - $start" | bc)"
"$py" "$root/tools/oracle.py" compare "$tmp/exp.safetensors" "$tmp/out.safetensors" --tol 1e-5
