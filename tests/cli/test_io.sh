#!/usr/bin/env bash
# test_io.sh KBC SRCDIR — the command line's options and messages, and
# `kbc run`'s tensor files (issue 16):
#   options: --opt=value, --, - (the spec from standard input), -V, a
#     repeated single-valued option, "did you mean" for options and
#     commands, -q, --color, --diagnostics-format=json, -Werror and the
#     warnings of an unused input or axis, tf32 on the CPU refused;
#   files: .npy, .npz and directories in and out (numpy makes the inputs
#     and reads the outputs where /usr/bin/python3 has it; else those cases
#     are skipped), corrupt and truncated files, compressed .npz, F64
#     without and with --cast, unknown output extensions — each a clear
#     message, a non-zero exit, and an existing outputs file untouched.
set -u
kbc=$1 src=$2
py=${KBC_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kbc_io.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
. "$(dirname "$0")/lib.sh" # fail, expect, mentions
spec=$src/specs/examples/relpos_gather.kb

# ---- options ------------------------------------------------------------------
expect 0 "-V" "$kbc" -V && mentions "-V" "kbc "
expect 0 "--emit=ir" "$kbc" compile --emit=ir "$spec"
expect 0 "spec from standard input" sh -c "'$kbc' check - <'$spec'" && mentions "stdin" "<stdin>: ok"
expect 0 "-- ends the options" "$kbc" check -- "$spec"
expect 2 "a repeated --emit" "$kbc" compile "$spec" --emit ir --emit=ast && mentions "repeated" "given twice"
expect 2 "misspelt option" "$kbc" compile "$spec" --emti ir && mentions "misspelt option" "did you mean '--emit'"
expect 2 "misspelt command" "$kbc" chekc "$spec" && mentions "misspelt command" "did you mean 'check'"
expect 2 "misspelt --emit kind" "$kbc" compile "$spec" --emit cdua && mentions "misspelt --emit kind" "did you mean 'cuda'"
expect 2 "--json with a value" "$kbc" compile "$spec" --json=1 && mentions "--json with a value" "takes no value"
expect 2 "--color=sometimes" "$kbc" check --color=sometimes "$spec"
expect 0 "bench --help" "$kbc" bench --help
grep -q '%%' "$log" && fail "bench --help prints a literal %%"
expect 0 "run --help lists --cast" "$kbc" run --help && mentions "run --help" "--cast"

# warnings: an input never read and an axis never used
printf 'kernel w\naxis n var\naxis k const 3\ninput x f32[n]\ninput unused f32[n]\noutput y f32[n]\ny[i] = x[i]\n' >"$tmp/w.kb"
expect 0 "warnings do not fail check" "$kbc" check "$tmp/w.kb"
mentions "warning: input" "w.kb:5:7: warning: input 'unused' is never read"
mentions "warning: axis" "w.kb:3:6: warning: constant axis 'k' is never used"
expect 1 "-Werror" "$kbc" check -Werror "$tmp/w.kb" && mentions "-Werror" "error: input 'unused' is never read [-Werror]"
expect 1 "-Werror before the command" "$kbc" -Werror compile --emit ir "$tmp/w.kb"
expect 0 "--diagnostics-format=json" "$kbc" check --diagnostics-format=json "$tmp/w.kb"
mentions "json" '{"file": "'"$tmp"'/w.kb", "line": 5, "column": 7, "kind": "warning", "message": "input '"'unused'"' is never read"}'
expect 0 "--color=always" "$kbc" check --color=always "$tmp/w.kb"
grep -q $'\033\\[1;35mwarning:' "$log" || fail "--color=always: no magenta 'warning:'"
expect 0 "--color=never" "$kbc" check --color=never "$tmp/w.kb"
grep -q $'\033' "$log" && fail "--color=never: escape sequences"
printf 'kernel e\ninput x f32[4]\noutput y f32[4]\ny[i] = x[i] + "\n' >"$tmp/e.kb"
expect 1 "json errors" "$kbc" check --diagnostics-format=json "$tmp/e.kb" && mentions "json errors" '"kind": "error"'
# whole-tensor statements: integers (axes, loop variables, literals) are
# values as in index notation, `/` between integers floor division
printf 'kernel wt\naxis L const 2\naxis d var\ninput x f32[L, d]\noutput v f32[d]\noutput s f32\nvv = x[0] * 0.0\nfor l in 0..L {\n  vv = vv + x[l] * (l + 1.0)\n}\nv = vv * d + x[1] * (3 / 2)\ns = d\n' >"$tmp/wt.kb"
expect 0 "whole-tensor integers" "$kbc" compile --emit ir "$tmp/wt.kb" &&
  mentions "whole-tensor integers" "x[1, i0] * ((1) + 1.0)" &&
  mentions "whole-tensor integers" "* (d) + x[1, i0] * (1)" && mentions "whole-tensor integers" "s = (d)"
# errors about the file as a whole are JSON too, line and column 0
expect 1 "json, no file" "$kbc" check --diagnostics-format=json "$tmp/none.kb" &&
  mentions "json, no file" '{"file": "'"$tmp"'/none.kb", "line": 0, "column": 0, "kind": "error", "message": "cannot open: No such file or directory"}'
printf 'kernel z\0\n' >"$tmp/z.kb"
expect 1 "json, NUL byte" "$kbc" check --diagnostics-format=json "$tmp/z.kb" &&
  mentions "json, NUL byte" '"line": 0, "column": 0, "kind": "error", "message": "contains a NUL byte; a spec is text"}'

# ---- files -------------------------------------------------------------------
fresh() { rm -rf "$tmp/o" && mkdir "$tmp/o" && printf 'old\n' >"$tmp/o/out.npz" && cp "$tmp/o/out.npz" "$tmp/old"; }
untouched() {
  cmp -s "$tmp/o/out.npz" "$tmp/old" || fail "$1: the existing outputs file changed"
  [ -z "$(ls -A "$tmp/o" | grep -vx out.npz)" ] || fail "$1: files left next to the outputs: $(ls -A "$tmp/o")"
}
bad_input() { # bad_input DESC TEXT FILE [ARGS...]
  local desc=$1 text=$2 file=$3
  shift 3
  fresh
  expect 1 "$desc" "$kbc" run "$spec" --backend cpu --inputs "$file" --outputs "$tmp/o/out.npz" "$@" && mentions "$desc" "$text"
  untouched "$desc"
}
printf 'just words\n' >"$tmp/text.bin"
printf '\x1f\x8b\x08\x00rest' >"$tmp/gz.bin"
printf '\x93NUMPY\x01\x00\x40\x00{'"'"'descr'"'"': '"'"'<f4'"'"', ' >"$tmp/trunc.npy"
printf 'PK\x03\x04 cut here' >"$tmp/trunc.npz"
bad_input "text inputs" "text.bin: error: this is text" "$tmp/text.bin"
bad_input "gzip inputs" "a gzip file" "$tmp/gz.bin"
bad_input "truncated .npy" "trunc.npy: error: the .npy header" "$tmp/trunc.npy"
bad_input "truncated .npz" "trunc.npz: error: a zip file without its end record" "$tmp/trunc.npz"
bad_input "missing inputs" "No such file or directory" "$tmp/none.npz"
mkdir "$tmp/emptydir"
bad_input "a directory without .npy files" "without .npy files" "$tmp/emptydir"
fresh
expect 2 "unknown output extension" "$kbc" run "$spec" --inputs "$tmp/text.bin" --outputs "$tmp/o/out.txt" &&
  mentions "unknown output extension" "out.txt: error: the outputs' format is named by the extension"
expect 2 "tf32 on the CPU" "$kbc" run "$spec" --backend cpu --precision tf32 --inputs "$tmp/text.bin" --outputs "$tmp/o/out.npz"
untouched "usage errors"

if ! "$py" -c 'import numpy' >/dev/null 2>&1; then
  echo "SKIP: $py has no numpy; the .npy/.npz round trips are not run"
else
  "$py" - "$tmp" <<'PY' || fail "numpy could not make the inputs"
import os, sys
import numpy as np
d = sys.argv[1]
r = np.random.default_rng(1)
q = r.standard_normal((5, 3)).astype(np.float32)
t = r.standard_normal((9, 3)).astype(np.float32)
np.savez(f"{d}/in.npz", q=q, table=t)
np.savez_compressed(f"{d}/inc.npz", q=q, table=t)
np.savez(f"{d}/in64.npz", q=q.astype(np.float64), table=t.astype(np.float16))
os.makedirs(f"{d}/indir")
np.save(f"{d}/indir/q.npy", q)
np.save(f"{d}/indir/table.npy", t)
np.save(f"{d}/indir/qbig.npy", q.astype(">f4"))
i, j = np.arange(5)[:, None], np.arange(5)[None, :]
np.save(f"{d}/exp.npy", np.einsum("ijd,ijd->ij", np.broadcast_to(q[:, None], (5, 5, 3)), t[i - j + 4]))
PY
  bad_input "compressed .npz" "member 'q.npy': compressed (np.savez_compressed)" "$tmp/inc.npz"
  bad_input "F64 without --cast" "in64.npz: error: tensor 'q' has dtype F64, but kbc specs take f32; give --cast" "$tmp/in64.npz"
  bad_input "a big-endian .npy in a directory" "member 'qbig.npy': dtype '>f4' is big-endian" "$tmp/indir"
  rm "$tmp/indir/qbig.npy"
  fresh
  expect 0 ".npz in, .npz out" "$kbc" run "$spec" --backend cpu --inputs "$tmp/in.npz" --outputs "$tmp/o/out.npz" &&
    mentions "running on" "kbc: running on the CPU interpreter"
  expect 0 "a directory in, .npy out, -q" "$kbc" -q run "$spec" --backend cpu --inputs "$tmp/indir" --outputs "$tmp/o/out.npy"
  [ -s "$log" ] && fail "-q: informational lines printed"
  expect 0 "--cast, a directory out" "$kbc" run "$spec" --backend cpu --cast --inputs "$tmp/in64.npz" --outputs "$tmp/o/dir/"
  expect 0 "safetensors out" "$kbc" run "$spec" --backend cpu --inputs "$tmp/in.npz" --outputs "$tmp/o/out.safetensors"
  "$py" - "$tmp" <<'PY' >"$log" 2>&1 || fail "the outputs differ from numpy's: $(cat "$log")"
import sys
import numpy as np
d = sys.argv[1]
e = np.load(f"{d}/exp.npy")
for got in (np.load(f"{d}/o/out.npz")["out"], np.load(f"{d}/o/out.npy"), np.load(f"{d}/o/dir/out.npy")):
    assert got.dtype == np.float32 and got.shape == e.shape, (got.dtype, got.shape)
    assert np.abs(got - e).max() < 1e-2, np.abs(got - e).max()
PY
  fresh
  expect 2 ".npy out for two outputs" "$kbc" run "$src/specs/examples/global_norm.kb" --backend cpu \
    --inputs "$tmp/in.npz" --outputs "$tmp/o/two.npy"
fi
[ "$failed" -eq 0 ] && echo "io tests: PASS" || echo "io tests: FAIL"
exit "$failed"
