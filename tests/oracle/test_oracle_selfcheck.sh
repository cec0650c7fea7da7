#!/usr/bin/env bash
# Self-check of tools/oracle.py: for every workload, gen at the default shapes
# (a fresh random seed each run), then compare must pass against the expected
# file itself and against its float32 rounding, and must fail against a copy
# perturbed by 1e-3.  Also: a fixed seed is deterministic, compare's failure
# modes (missing output, wrong shape, NaN) are caught, and usage errors exit 2
# without writing anything.
#
# Python: $KBC_PYTHON, else the first of /usr/bin/python3, python3 that has
# torch and numpy.  Checks run $KBC_ORACLE_JOBS at a time (default: the number
# of CPUs), since each gen spends most of its time importing torch.
# Exit 0 pass, 1 fail, 77 skip (no such python).
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
oracle_py=$root/tools/oracle.py

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
max_jobs=${KBC_ORACLE_JOBS:-$(nproc)}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

oracle() { "$py" "$oracle_py" "$@"; }

# expect RC CMD...: run CMD (its output in $log); record a failure unless it exits with RC.
expect() {
  local want=$1; shift
  "$@" >"$log" 2>&1
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL: exit $rc (want $want): $*"
    sed 's/^/    /' "$log"
    touch "$tmp/FAILED"
  fi
}

# fail MESSAGE: record a failure.
fail() { echo "FAIL: $*"; touch "$tmp/FAILED"; }

check_workload() {
  local w=$1 start ms
  local in=$tmp/$w.in.safetensors exp=$tmp/$w.exp.safetensors log=$tmp/$w.log
  start=$(date +%s%N)
  expect 0 oracle gen "$w" --inputs "$in" --expected "$exp"
  head -n 1 "$log"
  expect 0 oracle compare "$exp" "$exp"
  expect 0 oracle perturb "$exp" "$tmp/$w.f32" --eps 0 --dtype F32
  expect 0 oracle compare "$exp" "$tmp/$w.f32"
  expect 0 oracle perturb "$exp" "$tmp/$w.bad" --eps 1e-3
  expect 1 oracle compare "$exp" "$tmp/$w.bad"
  expect 1 oracle compare "$exp" "$tmp/$w.bad" --json
  ms=$((($(date +%s%N) - start) / 1000000))
  printf '  %s: %d.%03d s\n' "$w" $((ms / 1000)) $((ms % 1000))
}

check_determinism() {
  local log=$tmp/determinism.log f
  expect 0 oracle gen mlp_relu --inputs "$tmp/s1.in" --expected "$tmp/s1.exp" --seed 42 --set d_hidden=9
  expect 0 oracle gen mlp_relu --inputs "$tmp/s2.in" --expected "$tmp/s2.exp" --seed 42 --set d_hidden=9
  for f in in exp; do
    cmp -s "$tmp/s1.$f" "$tmp/s2.$f" || fail "--seed 42 is not deterministic ($f)"
  done
}

check_usage_errors() {
  local log=$tmp/usage.log
  expect 2 oracle gen no_such_workload --inputs "$tmp/u.in" --expected "$tmp/u.exp"
  expect 2 oracle gen layernorm --inputs "$tmp/u.in" --expected "$tmp/u.exp" --set no_such_axis=3
  expect 2 oracle gen cvit --inputs "$tmp/u.in" --expected "$tmp/u.exp" --set image_size=30
  expect 2 oracle gen layernorm --inputs "$tmp/u.in"
  expect 2 oracle compare "$tmp/no_such_file" "$tmp/no_such_file"
  if [ -e "$tmp/u.in" ] || [ -e "$tmp/u.exp" ]; then
    fail "a failed gen wrote a file"
  fi
}

# compare's failure modes, on files the workload checks wrote.
check_compare_failures() {
  local log=$tmp/compare.log exp=$tmp/sam_hq_attn_relpos_bwd.exp.safetensors
  expect 0 oracle perturb "$exp" "$tmp/drop" --eps 0 --drop grad_rel_pos_w
  expect 1 oracle compare "$exp" "$tmp/drop"
  grep -q "missing" "$log" || fail "missing output not reported"
  expect 0 oracle perturb "$exp" "$tmp/nan" --eps 0 --nan grad_qkv_bias
  expect 1 oracle compare "$exp" "$tmp/nan"
  grep -q "NaN/Inf" "$log" || fail "NaN not reported"
  exp=$tmp/layernorm.exp.safetensors
  expect 0 "$py" -c "import sys; sys.path.insert(0, sys.argv[1]); import st
st.write(sys.argv[3], {k: v.reshape(-1) for k, v in st.read(sys.argv[2]).items()})" "$root/tools" "$exp" "$tmp/flat"
  expect 1 oracle compare "$exp" "$tmp/flat"
  grep -q "shape" "$log" || fail "wrong shape not reported"
  expect 0 oracle compare "$exp" "$tmp/layernorm.bad" --tol 1
  expect 2 oracle compare "$exp" "$exp" --tol -1
}

workloads=$(oracle list | awk '/^[a-z]/ { print $1 }')
if [ -z "$workloads" ]; then
  echo "FAIL: oracle.py list printed no workloads"
  exit 1
fi

jobs_run=()
for job in $workloads determinism usage_errors; do
  while [ "$(jobs -rp | wc -l)" -ge "$max_jobs" ]; do wait -n; done
  case $job in
    determinism | usage_errors) ( "check_$job" ) >"$tmp/$job.report" 2>&1 & ;;
    *) ( check_workload "$job" ) >"$tmp/$job.report" 2>&1 & ;;
  esac
  jobs_run+=("$job")
done
wait
check_compare_failures >"$tmp/compare_failures.report" 2>&1
jobs_run+=(compare_failures)
for job in "${jobs_run[@]}"; do cat "$tmp/$job.report"; done

if [ -e "$tmp/FAILED" ]; then
  echo "oracle self-check: FAIL"
  exit 1
fi
echo "oracle self-check: PASS ($(echo "$workloads" | wc -w) workloads)"
