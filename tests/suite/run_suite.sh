#!/usr/bin/env bash
# run_suite.sh cpu KBC_LIB PATTERNS — the KernelBench suite's specs through kbc's
#   CPU interpreter at their small bindings, against PyTorch (bench/suite.py
#   --device cpu): every output within relative L2 error 1e-5 of float64.
#   Exit 0 pass, 1 fail, 77 skip (no python with torch).
# run_suite.sh emit KBC KBC_LIB — every spec in bench/suite compiles to CUDA C for sm_90
#   (kbc compile --emit cuda --target sm_90, no GPU needed); with a python
#   that has torch, also the launch plan at KernelBench's shapes
#   (bench/suite.py --emit-check), and --prewarm of two problems into an
#   empty kernel cache: it must succeed and leave an entry for each; and
#   bench/nocliff.py --dry-run, which compiles the chosen and the plain plan
#   of two problems; suite.py --kbc-env on the CPU (a variant row, ok); and
#   --row-timeout (a row past it untimed; a negative one a usage error).
#   Exit 0 pass, 1 fail.
set -u
mode=$1
root=$(cd "$(dirname "$0")/../.." && pwd)

find_python() {
  py=${KBC_PYTHON:-}
  if [ -z "$py" ]; then
    for cand in /usr/bin/python3 python3; do
      if "$cand" -c 'import torch, numpy' >/dev/null 2>&1; then py=$cand; break; fi
    done
  fi
}

case $mode in
  cpu)
    lib=$2 patterns=$3
    find_python
    if [ -z "$py" ]; then
      echo "SKIP: no python with torch and numpy (set KBC_PYTHON)"
      exit 77
    fi
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    KBC_LIB=$lib "$py" "$root/bench/suite.py" --device cpu --problems "$patterns" \
      --json "$tmp/suite.json" --markdown "$tmp/suite.md"
    ;;
  emit)
    kbc=$2 lib=$3
    fail=0 n=0
    for spec in "$root"/bench/suite/*.kb; do
      n=$((n + 1))
      if ! "$kbc" compile "$spec" --emit cuda --target sm_90 >/dev/null; then
        echo "FAIL: $kbc compile $spec --emit cuda --target sm_90"
        fail=$((fail + 1))
      fi
    done
    echo "emit cuda: $((n - fail)) of $n specs compile for sm_90"
    [ "$n" -ge 40 ] || { echo "FAIL: expected at least 40 specs in bench/suite"; fail=$((fail + 1)); }
    find_python
    if [ -n "$py" ]; then
      "$py" "$root/bench/suite.py" --emit-check "$kbc" --target sm_90 || fail=$((fail + 1))
      cache=$(mktemp -d)
      if ! KBC_CACHE_DIR=$cache "$py" "$root/bench/suite.py" --prewarm "$kbc" --problems L1/19,L2/9 ||
        [ "$(ls "$cache" | grep -c '\.cubin$')" -ne 2 ]; then
        echo "FAIL: suite.py --prewarm did not leave 2 cache entries in $cache: $(ls "$cache")"
        fail=$((fail + 1))
      fi
      rm -rf "$cache"
      # --kbc-env: a variant row per switch set, checked like kbc's own
      # (on the CPU: the interpreter; the column must be there and ok)
      out=$(mktemp -d)
      if ! KBC_LIB=$lib "$py" "$root/bench/suite.py" --device cpu --problems L1/23 \
          --kbc-env KBC_NO_FUSE=1 --json "$out/s.json" --markdown "$out/s.md" >"$out/log" 2>&1 ||
        ! grep -q "kbc\[KBC_NO_FUSE=1\] µs" "$out/s.md" ||
        ! "$py" -c 'import json, sys; r = json.load(open(sys.argv[1]))["results"]; v = [x for x in r if x["impl"].startswith("kbc[KBC_NO_FUSE=1]")]; sys.exit(0 if len(v) == 1 and v[0]["status"] == "ok" else 1)' "$out/s.json"; then
        echo "FAIL: suite.py --kbc-env KBC_NO_FUSE=1 (log in $out)"
        fail=$((fail + 1))
      else
        rm -rf "$out"
      fi
      # --row-timeout: a row past it is reported untimed (ok, no median, the
      # reason saying so), and a negative one is a usage error (exit 2)
      out=$(mktemp -d)
      if ! KBC_LIB=$lib "$py" "$root/bench/suite.py" --device cpu --cpu-timing --problems L1/19 --row-timeout 0.5 \
          --json "$out/s.json" --markdown "$out/s.md" >"$out/log" 2>&1 ||
        ! "$py" -c 'import json, sys; r = json.load(open(sys.argv[1]))["results"]; k = [x for x in r if x["impl"].startswith("kbc")]; sys.exit(0 if len(k) == 1 and k[0]["status"] == "ok" and k[0]["median_us"] is None and "--row-timeout" in (k[0]["reason"] or "") else 1)' "$out/s.json"; then
        echo "FAIL: suite.py --row-timeout 0.5 did not leave the kbc row ok and untimed (log in $out)"
        fail=$((fail + 1))
      else
        rm -rf "$out"
      fi
      KBC_LIB=$lib "$py" "$root/bench/suite.py" --device cpu --problems L1/19 --row-timeout -1 >/dev/null 2>&1
      [ $? -eq 2 ] || { echo "FAIL: suite.py --row-timeout -1 not a usage error"; fail=$((fail + 1)); }
      # the no-cliff check's compile step: both plans (chosen and
      # KBC_NO_FUSE=1) of softmax and layer norm; softmax's plain plan is
      # other code (three kernels, not two), so three entries at least
      cache=$(mktemp -d)
      if ! KBC_CACHE_DIR=$cache "$py" "$root/bench/nocliff.py" --kbc "$kbc" --suite L1/23,L1/40 --dry-run ||
        [ "$(ls "$cache" | grep -c '\.cubin$')" -lt 3 ]; then
        echo "FAIL: nocliff.py --dry-run did not compile both plans into $cache: $(ls "$cache")"
        fail=$((fail + 1))
      fi
      rm -rf "$cache"
    else
      echo "note: no python with torch: the launch plans at KernelBench's shapes were not checked"
    fi
    [ "$fail" -eq 0 ]
    ;;
  *)
    echo "usage: run_suite.sh cpu KBC_LIB PATTERNS | emit KBC KBC_LIB" >&2
    exit 2
    ;;
esac
