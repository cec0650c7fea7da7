#!/usr/bin/env bash
# test_cli.sh KBC SRCDIR [usage|run|all] — the kbc command line on bad input.
#
#   usage: exit statuses of usage errors (2), unreadable specs (1) and
#          --help (0), with messages that name the thing at fault.
#   run:   `kbc run` on specs/examples/relpos_gather.kb with inputs from
#          tools/oracle.py: every bad inputs file / --set fails with the
#          right status and message, leaves an existing outputs file
#          byte-identical and no temporary file next to it; a good run
#          writes the outputs, and they match the oracle's; rank-0 inputs
#          and outputs (specs/examples/global_norm.kb) round-trip.
#
# Every kbc run must be free of sanitizer reports.  Needs a python with torch
# and numpy for `run`: $KBC_PYTHON, else /usr/bin/python3 (else: SKIP, exit 77).
# Exit status: 0 pass, 1 fail, 77 skip.
set -u

if [ $# -lt 2 ]; then
  echo "usage: $0 KBC SRCDIR [usage|run|all]" >&2
  exit 2
fi
kbc=$1
src=$2
what=${3:-all}
py=${KBC_PYTHON:-/usr/bin/python3}
spec=$src/specs/examples/relpos_gather.kb

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kbc_cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log

. "$(dirname "$0")/lib.sh" # fail, expect, mentions

# ---- usage errors and unreadable specs -------------------------------------

test_usage() {
  expect 2 "no arguments" "$kbc"
  mentions "no arguments" "usage: kbc"
  expect 2 "unknown command" "$kbc" frobnicate
  mentions "unknown command" "frobnicate"
  expect 2 "unknown option (check)" "$kbc" check --bogus "$spec"
  mentions "unknown option (check)" "--bogus"
  expect 2 "unknown option (compile)" "$kbc" compile --bogus "$spec"
  expect 2 "unknown option (run)" "$kbc" run --bogus "$spec"
  expect 2 "check without a spec" "$kbc" check
  expect 2 "two specs" "$kbc" check "$spec" "$spec"

  expect 1 "missing spec file" "$kbc" check "$tmp/no_such_spec.kb"
  mentions "missing spec file" "$tmp/no_such_spec.kb"
  mkdir -p "$tmp/a_directory.kb"
  expect 1 "a directory as spec" "$kbc" check "$tmp/a_directory.kb"
  mentions "a directory as spec" "$tmp/a_directory.kb"
  printf 'kernel t\naxis n var\0\n' >"$tmp/nul.kb"
  expect 1 "a spec with a NUL byte" "$kbc" check "$tmp/nul.kb"
  mentions "a spec with a NUL byte" "NUL"
  expect 1 "a missing spec to compile" "$kbc" compile "$tmp/no_such_spec.kb"

  local cmd
  for cmd in check compile run verify; do
    expect 0 "$cmd --help" "$kbc" "$cmd" --help
    mentions "$cmd --help" "usage: kbc $cmd"
  done
  expect 0 "--help" "$kbc" --help
  expect 0 "--version" "$kbc" --version

  expect 2 "compile --emit bogus" "$kbc" compile "$spec" --emit bogus
  mentions "compile --emit bogus" "bogus"
  expect 2 "compile --after nosuchpass" "$kbc" compile "$spec" --emit ir --after nosuchpass
  mentions "compile --after nosuchpass" "nosuchpass"
  expect 2 "compile --emit without a value" "$kbc" compile "$spec" --emit
  expect 0 "compile --emit ir" "$kbc" compile "$spec" --emit ir

  # kbc verify: usage, spec and binding errors come before the GPU is
  # opened, so they are the same with and without one.
  local mm=$src/specs/examples/matmul_bias_gelu.kb
  expect 2 "verify without a spec" "$kbc" verify
  mentions "verify without a spec" "kbc verify: no spec file given"
  expect 2 "verify: unknown option" "$kbc" verify "$mm" --bogus
  mentions "verify: unknown option" "--bogus"
  expect 2 "verify: two specs" "$kbc" verify "$mm" "$mm"
  expect 2 "verify --precision fp64" "$kbc" verify "$mm" --precision fp64 --set m=2 --set k=2 --set n=2
  mentions "verify --precision fp64" "fp64"
  expect 2 "verify --seed -1" "$kbc" verify "$mm" --seed -1 --set m=2 --set k=2 --set n=2
  expect 2 "verify --seed abc" "$kbc" verify "$mm" --seed abc --set m=2 --set k=2 --set n=2
  expect 2 "verify --inputs 1:0" "$kbc" verify "$mm" --inputs 1:0 --set m=2 --set k=2 --set n=2
  expect 2 "verify --inputs x" "$kbc" verify "$mm" --inputs 0:1x --set m=2 --set k=2 --set n=2
  expect 2 "verify --set without a value" "$kbc" verify "$mm" --set
  expect 2 "verify --set m=abc" "$kbc" verify "$mm" --set m=abc
  mentions "verify --set m=abc" "m=abc"
  expect 2 "verify without every var axis" "$kbc" verify "$mm" --set m=64 --json
  mentions "verify without every var axis" "missing: k, n"
  mentions "verify without every var axis" "--set k=N --set n=N"
  expect 1 "verify --set of an unknown axis" "$kbc" verify "$mm" --set zz=1 --set m=2 --set k=2 --set n=2
  mentions "verify --set of an unknown axis" "kbc verify: --set zz=1"
  expect 1 "verify --set m=0" "$kbc" verify "$mm" --set m=0 --set k=2 --set n=2
  expect 1 "verify of a missing spec" "$kbc" verify "$tmp/no_such_spec.kb" --set n=1
  mentions "verify of a missing spec" "no_such_spec.kb"
  expect 1 "verify of a bad spec" "$kbc" verify "$src/tests/diag/stmt_unknown_name.kb"
  expect 1 "verify with a binding that breaks an axis" "$kbc" verify "$src/specs/conv3d_min_softmax.kb" \
    --set batch_size=1 --set in_channels=1 --set d=2 --set h=3 --set w=3
  mentions "verify with a binding that breaks an axis" "d=2"
  expect 1 "verify of a binding too large for the CPU" "$kbc" verify "$mm" --set m=100000 --set k=100000 --set n=1
  mentions "verify of a binding too large for the CPU" "smaller --set values"
  expect 2 "verify --batch with a spec" "$kbc" verify --batch "$mm"
  mentions "verify --batch with a spec" "--batch reads its specs from standard input"
  expect 2 "bench --batch with a spec" "$kbc" bench --batch "$mm"
  mentions "bench --batch with a spec" "--batch reads its specs from standard input"
  expect 2 "bench --repeat 0" "$kbc" bench "$mm" --set m=2 --set k=2 --set n=2 --repeat 0
  mentions "bench --repeat 0" "--repeat takes a number from 1 to 10000"
  expect 2 "bench --rotate 65" "$kbc" bench "$mm" --set m=2 --set k=2 --set n=2 --rotate 65
  mentions "bench --rotate 65" "--rotate takes a number from 1 to 64"

  # KBC_UNROLL=N sets the rows family's flattened-loop unrolling (1..64);
  # anything else keeps the default 4.
  local sm=$src/specs/examples/layernorm.kb
  expect 0 "KBC_UNROLL=2" env KBC_UNROLL=2 "$kbc" compile "$sm" --emit cuda --target sm_90
  grep -q "#pragma unroll 2$" "$log" || fail "KBC_UNROLL=2: no '#pragma unroll 2' in the generated code"
  grep -q "#pragma unroll 4$" "$log" && fail "KBC_UNROLL=2: the default unroll factor is still used"
  for bad in 0 65 abc ""; do
    expect 0 "KBC_UNROLL='$bad'" env KBC_UNROLL="$bad" "$kbc" compile "$sm" --emit cuda --target sm_90
    grep -q "#pragma unroll 4$" "$log" || fail "KBC_UNROLL='$bad': not the default unroll factor 4"
    # an invalid value is named in a warning (an empty one is unset)
    if [ -n "$bad" ]; then
      grep -q "^kbc: warning: ignoring KBC_UNROLL='$bad' (want an integer in 1..64); using the default, 4$" "$log" ||
        fail "KBC_UNROLL='$bad': no warning"
    elif grep -q "warning" "$log"; then
      fail "KBC_UNROLL='': a warning"
    fi
  done
  # a float4 loop of a constant row that gives a thread at most one float4
  # is not unrolled (rows of 1,024 on 256 threads); one of more is (rows not
  # kept in registers: KBC_ROWS_CACHE=0; kept, the loops over the kept
  # float4s are unrolled whole)
  expect 0 "unroll, one float4 a thread" env KBC_ROWS_CACHE=0 "$kbc" compile "$sm" --emit cuda --target sm_90 --specialize \
    --set rows=4096 --set cols=1024
  grep -q "#pragma unroll 1$" "$log" || fail "rows of 1,024: the float4 loops are unrolled"
  grep -q "#pragma unroll 4$" "$log" && fail "rows of 1,024: a loop of one float4 a thread unrolled by 4"
  expect 0 "unroll, many float4s a thread" env KBC_ROWS_CACHE=0 "$kbc" compile "$sm" --emit cuda --target sm_90 --specialize \
    --set rows=512 --set cols=8192
  grep -q "#pragma unroll 4$" "$log" || fail "rows of 8,192: the float4 loops are not unrolled"
  expect 0 "rows kept" "$kbc" compile "$sm" --emit cuda --target sm_90 --specialize --set rows=512 --set cols=8192
  grep -q "float4 _rc0\[8\]; // x's row" "$log" || fail "rows of 8,192: x's row not kept in registers"

  # KBC_IDX32=1: the 32-bit index variant (var axes as int, no long long
  # but the alignment tests); KBC_GEMM_MIN_BLOCKS=2: __launch_bounds__(256, 2)
  # on GEMM kernels (anything out of 2..4 ignored).
  mm=$src/specs/examples/batched_matmul.kb
  expect 0 "KBC_IDX32=1" env KBC_IDX32=1 "$kbc" compile "$mm" --emit cuda --target sm_90
  head -n 1 "$log" | grep -q "^// 32-bit index variant" || fail "KBC_IDX32=1: no 32-bit variant header"
  grep -v "unsigned long long" "$log" | grep -q "long long" && fail "KBC_IDX32=1: a long long is left"
  grep -q "const int batch," "$log" || fail "KBC_IDX32=1: var axes are not int parameters"
  expect 0 "KBC_IDX32=0" env KBC_IDX32=0 "$kbc" compile "$mm" --emit cuda --target sm_90
  grep -q "const long long batch," "$log" || fail "KBC_IDX32=0: var axes are not long long"
  expect 0 "KBC_GEMM_MIN_BLOCKS=2" env KBC_GEMM_MIN_BLOCKS=2 "$kbc" compile "$mm" --emit cuda --target sm_90
  grep -q "__launch_bounds__(256, 2)" "$log" || fail "KBC_GEMM_MIN_BLOCKS=2: no __launch_bounds__(256, 2)"
  # (the plan's own for this product: the vector K loop's tile, one block)
  expect 0 "KBC_GEMM_MIN_BLOCKS=9" env KBC_GEMM_MIN_BLOCKS=9 "$kbc" compile "$mm" --emit cuda --target sm_90
  grep -qF "__launch_bounds__(256, 1)" "$log" || fail "KBC_GEMM_MIN_BLOCKS=9: not ignored (the plan's 1)"
  expect 0 "KBC_GEMM_MIN_BLOCKS=1" env KBC_GEMM_MIN_BLOCKS=1 "$kbc" compile "$mm" --emit cuda --target sm_90
  grep -q "__launch_bounds__(256, " "$log" && fail "KBC_GEMM_MIN_BLOCKS=1: a bound asked"
  # The K loop: by default the vector loop (16-byte cp.async chunks) in 3
  # stages, KBC_GEMM_STAGES=4 four (values out of 0..4 ignored);
  # KBC_GEMM_VEC=0 the register-staged double buffer, with
  # KBC_GEMM_STAGES=3 three cp.async stages a float at a time.
  for st in "" 4 7; do
    n=${st:-3}
    [ "$st" = 7 ] && n=3
    expect 0 "KBC_GEMM_STAGES=$st" env KBC_GEMM_STAGES=$st "$kbc" compile "$mm" --emit cuda --target sm_90
    grep -q "in $n stages filled by cp.async in 16-byte chunks" "$log" && grep -q "kbc_cp_wait<$((n - 2))>();" "$log" ||
      fail "KBC_GEMM_STAGES=$st: no $n-stage vector K loop"
  done
  expect 0 "KBC_GEMM_VEC=0" env KBC_GEMM_VEC=0 "$kbc" compile "$mm" --emit cuda --target sm_90
  grep -q "double-buffered" "$log" && ! grep -q "cp.async" "$log" || fail "KBC_GEMM_VEC=0: not the register-staged loop"
  expect 0 "KBC_GEMM_VEC=0 KBC_GEMM_STAGES=3" env KBC_GEMM_VEC=0 KBC_GEMM_STAGES=3 "$kbc" compile "$mm" --emit cuda \
    --target sm_90
  grep -q "in 3 stages filled by cp.async$" "$log" && grep -q "kbc_cp_async4(&_As" "$log" ||
    fail "KBC_GEMM_VEC=0 KBC_GEMM_STAGES=3: no three-stage cp.async K loop a float at a time"

  # A long serial sum of known extent in blocks at a divisor near sqrt(terms),
  # unrolled (4096 terms: blocks of 64), where a thread takes a column (by
  # default 8 threads a warp apart take it: codegen/across_long_text)
  expect 0 "sum blocks" env KBC_ROWS_ACROSS=0 "$kbc" compile "$src/bench/suite/1_47_sum_dim.kb" --emit cuda \
    --target sm_90 --specialize --set batch_size=128 --set dim1=4096 --set dim2=4095
  grep -A1 -F "#pragma unroll 8" "$log" | grep -qF "i < _b1 + 64; ++i" || fail "sum blocks: no unrolled block of 64"

  # Column sums in parts only with KBC_ROWS_PARTS=1 (measured slower: off by default)
  local cp=$src/tests/codegen/specs/colparts.kb
  expect 0 "colparts" "$kbc" compile "$cp" --emit cuda --target sm_90
  grep -q "_part\[" "$log" && fail "column sums in parts without KBC_ROWS_PARTS=1"
  expect 0 "KBC_ROWS_PARTS=1" env KBC_ROWS_PARTS=1 "$kbc" compile "$cp" --emit cuda --target sm_90
  grep -q "_part\[" "$log" || fail "KBC_ROWS_PARTS=1: no column sums in parts"

  # One truthiness rule for every boolean switch (docs/ARCHITECTURE.md,
  # "Switches"): 1/yes/on/true on, 0/no/off/false off, anything else the
  # default with a warning.
  expect 0 "KBC_ROWS_PARTS=yes" env KBC_ROWS_PARTS=yes "$kbc" compile "$cp" --emit cuda --target sm_90
  grep -q "_part\[" "$log" || fail "KBC_ROWS_PARTS=yes: no column sums in parts"
  expect 0 "KBC_ROWS_PARTS=2" env KBC_ROWS_PARTS=2 "$kbc" compile "$cp" --emit cuda --target sm_90
  grep -q "_part\[" "$log" && fail "KBC_ROWS_PARTS=2: column sums in parts"
  grep -q "^kbc: warning: ignoring KBC_ROWS_PARTS='2'" "$log" || fail "KBC_ROWS_PARTS=2: no warning"
  expect 0 "KBC_NO_GEMM=on" env KBC_NO_GEMM=on "$kbc" compile "$mm" --emit cuda --target sm_90
  grep -q "schedule: gemm" "$log" && fail "KBC_NO_GEMM=on: a gemm kernel"
  expect 0 "KBC_NO_GEMM=off" env KBC_NO_GEMM=off "$kbc" compile "$mm" --emit cuda --target sm_90
  grep -q "schedule: gemm" "$log" || fail "KBC_NO_GEMM=off: no gemm kernel"
}

# ---- run -----------------------------------------------------------------

# A damaged copy of the good inputs: mkinputs OUT PYTHON-STATEMENTS (on dict t).
mkinputs() {
  "$py" - "$src/tools" "$tmp/in.safetensors" "$1" "$2" <<'EOF' >"$log" 2>&1
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import st
t = st.read(sys.argv[2])
exec(sys.argv[4])
st.write(sys.argv[3], t)
EOF
  [ $? -eq 0 ] || fail "could not make $1"
}

# A fresh output directory holding only an existing outputs file.
fresh_outdir() {
  rm -rf "$tmp/outdir"
  mkdir "$tmp/outdir"
  printf 'previous outputs: must survive a failed run\n' >"$tmp/outdir/out.safetensors"
  cp "$tmp/outdir/out.safetensors" "$tmp/previous"
}

# The outputs file is as before and nothing else is in its directory.
untouched() {
  if ! cmp -s "$tmp/outdir/out.safetensors" "$tmp/previous"; then
    fail "$1: the existing outputs file was changed"
  fi
  local extra
  extra=$(ls -A "$tmp/outdir" | grep -vx 'out.safetensors')
  if [ -n "$extra" ]; then
    fail "$1: files left next to the outputs: $extra"
  fi
}

# run_fails RC DESC TEXT ARGS...: `kbc run SPEC ARGS --outputs OUT` exits RC,
# its message mentions TEXT, and OUT is untouched.
run_fails() {
  local want=$1 desc=$2 text=$3
  shift 3
  fresh_outdir
  expect "$want" "$desc" "$kbc" run "$spec" "$@" --outputs "$tmp/outdir/out.safetensors" &&
    mentions "$desc" "$text"
  untouched "$desc"
}

test_run() {
  if ! "$py" -c 'import torch, numpy' >/dev/null 2>&1; then
    echo "SKIP: $py cannot import torch and numpy; the kbc run tests need tools/oracle.py"
    return 77
  fi
  local in=$tmp/in.safetensors exp=$tmp/exp.safetensors
  if ! "$py" "$src/tools/oracle.py" gen relpos_gather --inputs "$in" --expected "$exp" --seed 7 >"$log" 2>&1; then
    fail "oracle.py gen relpos_gather"
    return 1
  fi
  mkinputs "$tmp/missing.st" "del t['table']"
  mkinputs "$tmp/extra.st" "t['bogus'] = np.zeros((2, 2), np.float32)"
  mkinputs "$tmp/rank.st" "t['q'] = t['q'].reshape(-1)"
  mkinputs "$tmp/shape.st" "t['table'] = np.zeros((t['table'].shape[0], t['table'].shape[1] + 1), np.float32)"
  mkinputs "$tmp/f64.st" "t['q'] = t['q'].astype(np.float64)"
  head -c 50 "$in" >"$tmp/corrupt.st"
  printf 'not a safetensors file at all, just text\n' >"$tmp/text.st"

  fresh_outdir
  expect 2 "run without --inputs" "$kbc" run "$spec" --outputs "$tmp/outdir/out.safetensors"
  mentions "run without --inputs" "--inputs"
  untouched "run without --inputs"
  run_fails 1 "inputs file missing" "$tmp/no_such_inputs.st" --inputs "$tmp/no_such_inputs.st"
  run_fails 1 "corrupt (truncated) inputs file" "corrupt.st" --inputs "$tmp/corrupt.st"
  run_fails 1 "inputs file that is text" "text.st" --inputs "$tmp/text.st"
  run_fails 1 "missing input tensor" "table" --inputs "$tmp/missing.st"
  run_fails 1 "extra input tensor" "bogus" --inputs "$tmp/extra.st"
  run_fails 1 "input of the wrong rank" "'q'" --inputs "$tmp/rank.st"
  run_fails 1 "input shape disagreeing with another input" "axis d" --inputs "$tmp/shape.st"
  run_fails 1 "input of dtype F64" "F64" --inputs "$tmp/f64.st"
  run_fails 1 "--set n=0" "n=0" --inputs "$in" --set n=0
  run_fails 1 "--set of an unknown axis" "nosuchaxis" --inputs "$in" --set nosuchaxis=3
  run_fails 1 "--set of a derived axis" "table_rows" --inputs "$in" --set table_rows=3
  run_fails 1 "--set disagreeing with the inputs" "axis n" --inputs "$in" --set n=4
  run_fails 2 "--set n=abc" "n=abc" --inputs "$in" --set n=abc
  printf 'kernel t\naxis n var\ninput q f32[n]\noutput out f32[n]\nout[i] = q[i] * alpha\n' >"$tmp/bad.kb"
  fresh_outdir
  expect 1 "run of a bad spec" "$kbc" run "$tmp/bad.kb" --inputs "$in" --outputs "$tmp/outdir/out.safetensors" &&
    mentions "run of a bad spec" "unknown name 'alpha'"
  untouched "run of a bad spec"
  fresh_outdir
  expect 1 "outputs into a missing directory" "$kbc" run "$spec" --inputs "$in" \
    --outputs "$tmp/no_such_dir/out.safetensors"
  untouched "outputs into a missing directory"

  # A good run replaces the existing file, leaves no temporary, matches the oracle.
  fresh_outdir
  if expect 0 "good run over an existing outputs file" "$kbc" run "$spec" --inputs "$in" \
    --outputs "$tmp/outdir/out.safetensors"; then
    cmp -s "$tmp/outdir/out.safetensors" "$tmp/previous" && fail "good run: the outputs file was not written"
    local extra
    extra=$(ls -A "$tmp/outdir" | grep -vx 'out.safetensors')
    [ -z "$extra" ] || fail "good run: files left next to the outputs: $extra"
    expect 0 "good run matches the oracle" "$py" "$src/tools/oracle.py" compare "$exp" "$tmp/outdir/out.safetensors"
  fi
  rm -rf "$tmp/outdir" && mkdir "$tmp/outdir"
  expect 0 "good run into a new file" "$kbc" run "$spec" --inputs "$in" --outputs "$tmp/outdir/out.safetensors"
  [ -s "$tmp/outdir/out.safetensors" ] || fail "good run into a new file: no file written"
  test_run_rank0
  return 0
}

# Rank-0 tensors: global_norm.kb reads a rank-0 input (from the inputs file
# with shape [], or --scalar) and writes a rank-0 output (shape [] in the
# outputs file) and a rank-0 intermediate; a rank-0 input given as [1] is
# refused.
test_run_rank0() {
  local gn=$src/specs/examples/global_norm.kb in=$tmp/gn_in.safetensors exp=$tmp/gn_exp.safetensors
  if ! "$py" "$src/tools/oracle.py" gen global_norm --inputs "$in" --expected "$exp" --seed 7 >"$log" 2>&1; then
    fail "oracle.py gen global_norm"
    return
  fi
  expect 0 "rank-0 input and output" "$kbc" run "$gn" --inputs "$in" --outputs "$tmp/gn_out.safetensors" &&
    expect 0 "rank-0 run matches the oracle" "$py" "$src/tools/oracle.py" compare "$exp" "$tmp/gn_out.safetensors"
  "$py" - "$src/tools" "$tmp/gn_out.safetensors" <<'PY' >"$log" 2>&1 || fail "rank-0 output: not of shape [] in the outputs file"
import json, struct, sys
sys.path.insert(0, sys.argv[1])
import st
assert st.read(sys.argv[2])["peak"].shape == ()
with open(sys.argv[2], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    assert json.loads(f.read(n))["peak"]["shape"] == []
PY
  # the same value through --scalar
  "$py" - "$src/tools" "$in" "$tmp/gn_noscale.st" "$tmp/scale" <<'PY' >"$log" 2>&1 || fail "could not make gn_noscale.st"
import sys
sys.path.insert(0, sys.argv[1])
import st
t = st.read(sys.argv[2])
open(sys.argv[4], "w").write(repr(float(t.pop("scale"))))
st.write(sys.argv[3], t)
PY
  expect 0 "rank-0 input through --scalar" "$kbc" run "$gn" --inputs "$tmp/gn_noscale.st" \
    --scalar "scale=$(cat "$tmp/scale")" --outputs "$tmp/gn_out2.safetensors" &&
    expect 0 "--scalar run matches the oracle" "$py" "$src/tools/oracle.py" compare "$exp" "$tmp/gn_out2.safetensors"
  "$py" - "$src/tools" "$in" "$tmp/gn_rank1.st" <<'PY' >"$log" 2>&1 || fail "could not make gn_rank1.st"
import sys
sys.path.insert(0, sys.argv[1])
import st
t = st.read(sys.argv[2])
t["scale"] = t["scale"].reshape(1)
st.write(sys.argv[3], t)
PY
  expect 1 "rank-0 input given as [1]" "$kbc" run "$gn" --inputs "$tmp/gn_rank1.st" --outputs "$tmp/gn_out3.safetensors" &&
    mentions "rank-0 input given as [1]" "'scale'"
}

status=0
case $what in
  usage) test_usage ;;
  run) test_run || status=$? ;;
  all) test_usage; test_run || status=$? ;;
  *) echo "unknown part '$what' (usage, run or all)" >&2; exit 2 ;;
esac
if [ "$failed" -ne 0 ]; then
  echo "cli tests ($what): FAIL"
  exit 1
fi
if [ "$status" -eq 77 ]; then
  exit 77
fi
echo "cli tests ($what): PASS"
exit 0
