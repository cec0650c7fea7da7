#!/usr/bin/env bash
# test_tune.sh KBC SRCDIR — `kbc tune`'s records without a GPU (runtime/
# tune.h): --store, --show and --clear at an explicit target; a record
# changes the code of its program at its binding, target and precision
# only (`--emit plan` says "switches: ... (from kbc tune's record)"), and
# the same program with other comments and spacing finds it; KBC_TUNE=0
# and the environment's switches win over it; a record that does not parse
# is ignored; kbc_options.config's errors (an unknown switch, a value out
# of range) exit 2; the timing itself without a GPU exits 1 and writes
# nothing.  Needs NVRTC (the plan's registers), else skipped (77).
set -u
kbc=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kbc_tune.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
. "$(dirname "$0")/lib.sh" # fail, expect, mentions
export KBC_CACHE_DIR=$tmp/cache
unset KBC_GEMM_STAGES KBC_GEMM_WGMMA KBC_TUNE

mm=$src/specs/examples/matmul_bias_gelu.kb
set_mm=(--set m=4096 --set n=4096 --set k=4096 --precision tf32) # wgmma by default at sm_90a
if ! "$kbc" compile "$mm" --emit resources --target sm_90a >"$log" 2>&1; then
  if grep -q "NVRTC" "$log"; then echo "SKIP: no NVRTC: $(head -1 "$log")"; exit 77; fi
fi
records() { ls "$KBC_CACHE_DIR" 2>/dev/null | grep -c '^tune-' ; }

expect 0 "show, no record" "$kbc" tune "$mm" "${set_mm[@]}" --show --target sm_90a &&
  mentions "show, no record" "no tune record"
expect 0 "store" "$kbc" tune "$mm" "${set_mm[@]}" --store "KBC_GEMM_STAGES=3,KBC_GEMM_WGMMA=0" --target sm_90a
[ "$(records)" = 1 ] || fail "store: $(records) records, want 1"
expect 0 "show" "$kbc" tune "$mm" "${set_mm[@]}" --show --target sm_90a &&
  mentions "show" "settings: KBC_GEMM_STAGES=3,KBC_GEMM_WGMMA=0"
grep -q "^# stored by kbc tune --store" "$KBC_CACHE_DIR"/tune-*.txt || fail "the record has no comment line"

# the record's program at its binding, target and precision: its switches
expect 0 "plan with the record" "$kbc" compile "$mm" "${set_mm[@]}" --emit plan --target sm_90a &&
  mentions "plan with the record" "# switches: KBC_GEMM_STAGES=3, KBC_GEMM_WGMMA=0 (from kbc tune's record)"
cp "$log" "$tmp/plan_tuned"
expect 0 "plan JSON with the record" "$kbc" compile "$mm" "${set_mm[@]}" --emit plan --json --target sm_90a &&
  mentions "plan JSON with the record" '"switches": "KBC_GEMM_STAGES=3, KBC_GEMM_WGMMA=0", "tuned": true'
"$kbc" compile "$mm" "${set_mm[@]}" --emit cuda --target sm_90a --specialize >"$tmp/tuned.cu" 2>&1
KBC_TUNE=0 "$kbc" compile "$mm" "${set_mm[@]}" --emit cuda --target sm_90a --specialize >"$tmp/default.cu" 2>&1
cmp -s "$tmp/tuned.cu" "$tmp/default.cu" && fail "the record did not change the generated CUDA"
grep -q "wgmma" "$tmp/tuned.cu" && fail "KBC_GEMM_WGMMA=0 in the record, but the code has wgmma"
grep -q "wgmma" "$tmp/default.cu" || fail "the defaults' code at sm_90a has no wgmma"
# ... and nowhere else
for other in "--set k=2048 --target sm_90a --precision tf32" "--set k=4096 --target sm_90 --precision tf32" \
  "--set k=4096 --target sm_90a"; do
  # shellcheck disable=SC2086
  expect 0 "plan, $other" "$kbc" compile "$mm" --set m=4096 --set n=4096 $other --emit plan
  grep -q "switches" "$log" && fail "plan, $other: a record applied: $(grep switches "$log")"
done
# the same program, other comments and spacing
{ echo "# a comment the key does not see"; sed 's/  */ /g' "$mm"; } >"$tmp/mm2.kb"
expect 0 "show, respelled" "$kbc" tune "$tmp/mm2.kb" "${set_mm[@]}" --show --target sm_90a &&
  mentions "show, respelled" "settings: KBC_GEMM_STAGES=3,KBC_GEMM_WGMMA=0"
# KBC_TUNE=0 ignores it; the environment's switches override it
expect 0 "plan, KBC_TUNE=0" env KBC_TUNE=0 "$kbc" compile "$mm" "${set_mm[@]}" --emit plan --target sm_90a
grep -q "switches" "$log" && fail "KBC_TUNE=0: the record applied"
expect 0 "plan, environment over record" env KBC_GEMM_STAGES=2 "$kbc" compile "$mm" "${set_mm[@]}" --emit plan \
  --target sm_90a && mentions "plan, environment over record" "# switches: KBC_GEMM_STAGES=2, KBC_GEMM_WGMMA=0"

# a record that does not parse: ignored
f=$(ls "$KBC_CACHE_DIR"/tune-*.txt)
printf 'settings: KBC_GEMM_STAGES=banana\n' >"$f"
expect 0 "plan, bad record" "$kbc" compile "$mm" "${set_mm[@]}" --emit plan --target sm_90a
grep -q "switches" "$log" && fail "a record that does not parse applied"
printf '# no settings line\n' >"$f"
expect 0 "show, no settings line" "$kbc" tune "$mm" "${set_mm[@]}" --show --target sm_90a &&
  mentions "show, no settings line" "no tune record"

# errors
expect 2 "store, unknown switch" "$kbc" tune "$mm" "${set_mm[@]}" --store "KBC_GEMM_STAGS=3" --target sm_90a &&
  mentions "store, unknown switch" "unknown switch 'KBC_GEMM_STAGS'"
expect 2 "store, out of range" "$kbc" tune "$mm" "${set_mm[@]}" --store "KBC_GEMM_STAGES=9" --target sm_90a &&
  mentions "store, out of range" "KBC_GEMM_STAGES takes a number from 0 to 4, not '9'"
expect 2 "store, not NAME=VALUE" "$kbc" tune "$mm" "${set_mm[@]}" --store "KBC_GEMM_STAGES" --target sm_90a &&
  mentions "store, not NAME=VALUE" "expected NAME=VALUE"
expect 2 "store, recompute" "$kbc" tune "$mm" "${set_mm[@]}" --store "KBC_ATTN_RECOMPUTE=1" --target sm_90a
expect 2 "missing var axis" "$kbc" tune "$mm" --set m=4096 --set n=4096 --show --target sm_90a &&
  mentions "missing var axis" "missing: k"
expect 2 "two modes" "$kbc" tune "$mm" "${set_mm[@]}" --show --clear --target sm_90a
expect 2 "target without a mode" "$kbc" tune "$mm" "${set_mm[@]}" --target sm_90a
expect 2 "iters out of range" "$kbc" tune "$mm" "${set_mm[@]}" --iters 1
expect 2 "bad precision" "$kbc" tune "$mm" "${set_mm[@]}" --precision fp16
expect 0 "clear" "$kbc" tune "$mm" "${set_mm[@]}" --clear --target sm_90a
[ "$(records)" = 0 ] || fail "clear: $(records) records left"
expect 0 "clear, none" "$kbc" tune "$mm" "${set_mm[@]}" --clear --target sm_90a
# timing needs a GPU: without one, exit 1 and no record
if "$kbc" info 2>/dev/null | grep -q "^CUDA driver: none"; then
  expect 1 "tune without a GPU" "$kbc" tune "$mm" "${set_mm[@]}" && mentions "tune without a GPU" "no GPU available"
  [ "$(records)" = 0 ] || fail "tune without a GPU wrote a record"
fi
exit $failed
