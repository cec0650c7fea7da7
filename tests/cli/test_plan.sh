#!/usr/bin/env bash
# test_plan.sh KBC SRCDIR — `kbc compile --emit plan` without a GPU
# (explicit targets): the text table and the JSON for several specs (the
# JSON parses, has exactly the documented keys, grid and block are [x, y, z],
# workspace_bytes is the sum of the buffers' bytes each rounded up to 256,
# a buffer's bytes are 4 per element of its shape), kbc_zero launches before
# split-K and scatter kernels, rank-0 outputs, -o FILE, and the errors:
# missing --set (exit 2, naming the axes), bad --set values (1 or 2),
# --set/--json without --emit plan (2).  Needs NVRTC (registers come from
# ptxas) and a python3 for the JSON checks; exit 77 (skip) without them.
set -u
kbc=$1
src=$2
py=${KBC_PYTHON:-python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kbc_plan.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
. "$(dirname "$0")/lib.sh" # fail, expect, mentions
# The generic plans (the code for any sizes); specialization, the runtime's
# default, is tested on its own below.
export KBC_SPECIALIZE=0

mm=$src/specs/examples/matmul_bias_gelu.kb
if ! "$kbc" compile "$mm" --emit resources --target sm_90 >"$log" 2>&1; then
  if grep -q "NVRTC" "$log"; then echo "SKIP: no NVRTC: $(head -1 "$log")"; exit 77; fi
fi
if ! "$py" -c 'import json' >/dev/null 2>&1; then echo "SKIP: no python3 for the JSON checks"; exit 77; fi

# check_json DESC FILE [PYTHON-ASSERTIONS on d]: the plan's JSON is valid
# and well-formed, then the extra assertions hold.
check_json() {
  local desc=$1 file=$2 extra=${3:-}
  if ! "$py" - "$file" "$extra" >"$tmp/pylog" 2>&1 <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {"kernels", "buffers", "workspace_bytes", "switches", "tuned"}, sorted(d)
assert isinstance(d["switches"], str) and d["tuned"] in (True, False), d
assert d["kernels"], "no kernels"
for r, k in enumerate(d["kernels"]):
    keys = {"name", "family", "statements", "grid", "block", "smem_bytes", "registers", "after"}
    assert set(k) == (keys | {"stages"} if k["family"] == "persistent" else keys), sorted(k)
    # the launches it waits for: earlier ones, ascending (the first, none)
    assert all(isinstance(j, int) and 0 <= j < r for j in k["after"]), k
    assert k["after"] == sorted(set(k["after"])) and (r > 0 or not k["after"]), k
    assert isinstance(k["name"], str) and k["name"]
    assert k["family"] in ("rows", "gemm", "scatter", "attention", "zero", "prep", "persistent"), k["family"]
    for i, st in enumerate(k.get("stages", [])):
        assert set(st) == {"name", "family", "blocks", "threads", "after"}, sorted(st)
        assert st["blocks"] >= 1 and 32 <= st["threads"] <= k["block"][0], st
        assert all(isinstance(j, int) and 0 <= j < i for j in st["after"]), st
        assert st["after"] == sorted(set(st["after"])), st
    assert isinstance(k["statements"], list) and k["statements"], k
    assert all(isinstance(s, str) and s for s in k["statements"]), k
    for key in ("grid", "block"):
        assert isinstance(k[key], list) and len(k[key]) == 3, k
        assert all(isinstance(v, int) and v >= 0 for v in k[key]), k
    assert k["grid"][0] >= 1 and k["grid"][1:] == [1, 1], k
    assert 1 <= k["block"][0] <= 1024 and k["block"][1:] == [1, 1], k
    assert isinstance(k["smem_bytes"], int) and 0 <= k["smem_bytes"] <= 227 * 1024, k
    assert isinstance(k["registers"], int) and 1 <= k["registers"] <= 255, k
    if k["family"] == "zero":
        assert k["name"] == "kbc_zero" and len(k["statements"]) == 1 and k["statements"][0].endswith(" = 0"), k
total = 0
for b in d["buffers"]:
    assert set(b) == {"name", "shape", "bytes"}, sorted(b)
    n = 1
    for v in b["shape"]:
        assert isinstance(v, int) and v >= 1, b
        n *= v
    assert b["bytes"] == 4 * n, b
    total += (b["bytes"] + 255) // 256 * 256
assert d["workspace_bytes"] == total, (d["workspace_bytes"], total)
names = [k["name"] for k in d["kernels"]]
families = [k["family"] for k in d["kernels"]]
buffers = {b["name"]: b for b in d["buffers"]}
exec(sys.argv[2])
EOF
    echo "FAIL: $desc: the JSON plan is not as documented"
    sed 's/^/    /' "$tmp/pylog" "$file" | head -60
    failed=1
  else
    echo "ok: $desc: JSON checked"
  fi
}

# ---- matmul_bias_gelu at m=64 k=32 n=48 --------------------------------------
set_mm=(--set m=64 --set k=32 --set n=48)
expect 0 "plan text (matmul_bias_gelu)" "$kbc" compile "$mm" --emit plan "${set_mm[@]}" --target sm_90 &&
  mentions "plan text (matmul_bias_gelu)" "# launch plan of matmul_bias_gelu for m=64 k=32 n=48: sm_90, fp32" &&
  mentions "plan text (matmul_bias_gelu)" "matmul_bias_gelu_k0_out" &&
  mentions "plan text (matmul_bias_gelu)" "out[i, j] = gelu(bias[j] + sum(r: a[i, r] * w[j, r]))" &&
  mentions "plan text (matmul_bias_gelu)" "# workspace: 0 bytes, no temporaries"
expect 0 "plan JSON (matmul_bias_gelu)" "$kbc" compile "$mm" --emit plan "${set_mm[@]}" --target sm_90 --json &&
  cp "$log" "$tmp/mm.json" &&
  check_json "matmul_bias_gelu" "$tmp/mm.json" '
assert "matmul_bias_gelu_k0_out" in names, names
assert d["buffers"] == [] and d["workspace_bytes"] == 0
k = d["kernels"][names.index("matmul_bias_gelu_k0_out")]
assert k["statements"] == ["out[i, j] = gelu(bias[j] + sum(r: a[i, r] * w[j, r]))"], k'
# -o FILE: the same text in the file, nothing on standard output
expect 0 "plan JSON into -o FILE" "$kbc" compile "$mm" --emit plan "${set_mm[@]}" --target sm_90 --json -o "$tmp/o.json" &&
  { [ -s "$log" ] && fail "plan -o FILE: output on stdout/stderr"; cmp -s "$tmp/o.json" "$tmp/mm.json" ||
    fail "plan -o FILE: not the JSON printed before"; }
# precision in the header; the grid of the same binding is the same for tf32 only by chance, so not compared
expect 0 "plan text tf32" "$kbc" compile "$mm" --emit plan "${set_mm[@]}" --target sm_80 --precision tf32 &&
  mentions "plan text tf32" ": sm_80, tf32,"
# KBC_IDX32=1: the binding fits, so the plan is the 32-bit variant's and says so
expect 0 "plan under KBC_IDX32=1" env KBC_IDX32=1 "$kbc" compile "$mm" --emit plan "${set_mm[@]}" --target sm_90 &&
  mentions "plan under KBC_IDX32=1" "sm_90, fp32, 32-bit indices"

# ---- conv3d_min_softmax: a GEMM, a fused rows kernel, temporaries ----------------
cv=$src/specs/conv3d_min_softmax.kb
set_cv=(--set batch_size=2 --set in_channels=3 --set d=6 --set h=8 --set w=8)
# (the generic plan folds the min into the convolution's tiles, below: not here)
expect 0 "plan text (conv3d_min_softmax)" env KBC_GEMM_FOLD=0 "$kbc" compile "$cv" --emit plan "${set_cv[@]}" --target sm_90 &&
  mentions "plan text (conv3d_min_softmax)" "gemm" &&
  mentions "plan text (conv3d_min_softmax)" "conv[n, c, z, i, j] = bias[c] + sum(" &&
  mentions "plan text (conv3d_min_softmax)" "  buffer" &&
  mentions "plan text (conv3d_min_softmax)" "[2, 24, 4, 6, 6]"
expect 0 "plan JSON (conv3d_min_softmax)" env KBC_GEMM_FOLD=0 "$kbc" compile "$cv" --emit plan "${set_cv[@]}" --target sm_90 --json &&
  cp "$log" "$tmp/cv.json" &&
  check_json "conv3d_min_softmax" "$tmp/cv.json" '
assert "gemm" in families and "rows" in families, families
assert buffers["conv"]["shape"] == [2, 24, 4, 6, 6], buffers
assert d["workspace_bytes"] > 0'
# At KernelBench's batch 128 the min over depth is folded into the
# convolution's tiles (codegen/gemm_fold.c): one GEMM kernel computes conv
# and m, and no buffer of the convolution's size is left; KBC_GEMM_FOLD=0
# keeps the two kernels and the buffer.  (KBC_GEMM_TAIL=0: the softmax in a
# kernel of its own, as below without it.)
set_cv128=(--set batch_size=128 --set in_channels=3 --set d=24 --set h=32 --set w=32)
expect 0 "plan JSON (conv3d_min_softmax, b128, KBC_GEMM_TAIL=0)" env KBC_GEMM_TAIL=0 "$kbc" compile "$cv" --emit plan "${set_cv128[@]}" --target sm_90 --json &&
  cp "$log" "$tmp/cv128.json" &&
  check_json "conv3d_min_softmax b128" "$tmp/cv128.json" '
k = d["kernels"][0]
assert k["family"] == "gemm" and len(k["statements"]) == 2, k
assert k["statements"][1].startswith("m[n, c, i, j] = min(z: conv["), k
assert "conv" not in buffers and buffers["m"]["shape"] == [128, 24, 30, 30], buffers
assert len(d["kernels"]) == 2, [k["name"] for k in d["kernels"]]'
# With the fold's tail (by default, codegen/gemm_tail.c) the softmax over
# the channels runs in the same kernel's epilogue: one kernel, no buffer.
expect 0 "plan JSON (conv3d_min_softmax, b128)" "$kbc" compile "$cv" --emit plan \
  "${set_cv128[@]}" --target sm_90 --json &&
  cp "$log" "$tmp/cv128t.json" &&
  check_json "conv3d_min_softmax b128, tail" "$tmp/cv128t.json" '
k = d["kernels"][0]
assert len(d["kernels"]) == 1 and k["family"] == "gemm" and len(k["statements"]) == 5, d["kernels"]
assert not buffers, buffers'
expect 0 "plan JSON (conv3d_min_softmax, b128, KBC_GEMM_FOLD=0)" env KBC_GEMM_FOLD=0 "$kbc" compile "$cv" --emit plan \
  "${set_cv128[@]}" --target sm_90 --json &&
  cp "$log" "$tmp/cv128n.json" &&
  check_json "conv3d_min_softmax b128, no fold" "$tmp/cv128n.json" '
assert buffers["conv"]["shape"] == [128, 24, 22, 30, 30], buffers'
# Specialized at batch 128 (the runtime's default), the folded convolution
# reads x from a box staged per tile and depth (codegen/gemm_win.c) on tensor
# cores, 3xTF32 at fp32; KBC_GEMM_WIN=0 keeps the FFMA tile's gathered loads.
expect 0 "cuda (conv3d_min_softmax, b128, specialized)" "$kbc" compile "$cv" --emit cuda --specialize "${set_cv128[@]}" \
  --target sm_90 &&
  mentions "cuda (conv3d_min_softmax, b128, specialized)" "A: read in place from a box of x staged per tile and fold step" &&
  mentions "cuda (conv3d_min_softmax, b128, specialized)" "3xTF32 mma.sync"
expect 0 "cuda (conv3d_min_softmax, b128, KBC_GEMM_WIN=0)" env KBC_GEMM_WIN=0 "$kbc" compile "$cv" --emit cuda --specialize \
  "${set_cv128[@]}" --target sm_90 &&
  mentions "cuda (conv3d_min_softmax, b128, KBC_GEMM_WIN=0)" "A: loaded m-contiguous" &&
  if grep -q "box of x" "$log"; then fail "cuda (conv3d_min_softmax, b128, KBC_GEMM_WIN=0): the window is used"; fi
# Unfolded, the box by default only for a short K (codegen/gemm_win.c,
# GEMM_WIN_SHORT_K: a conv3d of 3 channels, K = 81, takes it; a conv1d of 64
# channels, K = 192, keeps the gathered loads unless KBC_GEMM_WIN=2 asks).
c54=$src/bench/suite/1_54_conv3d.kb
expect 0 "cuda (conv3d, K = 81, unfolded)" "$kbc" compile "$c54" --emit cuda --specialize --target sm_90 \
  --set batch_size=2 --set in_channels=3 --set out_channels=64 --set d=16 --set h=32 --set w=32 &&
  mentions "cuda (conv3d, K = 81, unfolded)" "box of x (two: this step's, the next's)"
c67=$src/bench/suite/1_67_conv1d.kb
expect 0 "cuda (conv1d, K = 192, unfolded)" "$kbc" compile "$c67" --emit cuda --specialize --target sm_90 \
  --set batch_size=2 --set in_channels=64 --set out_channels=64 --set length=4096 &&
  if grep -q "box of x" "$log"; then fail "cuda (conv1d, K = 192, unfolded): the window is used"; fi
expect 0 "cuda (conv1d, K = 192, KBC_GEMM_WIN=2)" env KBC_GEMM_WIN=2 "$kbc" compile "$c67" --emit cuda --specialize \
  --target sm_90 --set batch_size=2 --set in_channels=64 --set out_channels=64 --set length=4096 &&
  mentions "cuda (conv1d, K = 192, KBC_GEMM_WIN=2)" "box of x"

# ---- softmax_middle ------------------------------------------------------------
sm=$src/specs/examples/softmax_middle.kb
expect 0 "plan text (softmax_middle)" "$kbc" compile "$sm" --emit plan --set a=3 --set b=5 --set c=4 --target sm_90 &&
  mentions "plan text (softmax_middle)" "softmax_middle_k0_"
expect 0 "plan JSON (softmax_middle)" "$kbc" compile "$sm" --emit plan --set a=3 --set b=5 --set c=4 --target sm_90 --json &&
  cp "$log" "$tmp/sm.json" &&
  check_json "softmax_middle" "$tmp/sm.json" '
assert families == ["rows"] * len(families), families
assert buffers["out.max"]["shape"] == [3, 4] and buffers["out.sum"]["shape"] == [3, 4], buffers'
# sizes of 1 everywhere
expect 0 "plan JSON (softmax_middle, all 1)" "$kbc" compile "$sm" --emit plan --set a=1 --set b=1 --set c=1 --target sm_90 --json &&
  cp "$log" "$tmp/sm1.json" && check_json "softmax_middle at 1x1x1" "$tmp/sm1.json" 'assert d["workspace_bytes"] == 512'

# ---- split-K's scratch; a scatter's zero-fill ------------------------------------
# split-K for a bare sum, a sum plus terms and a sum under an activation:
# no zero-fill, the slices' partial sums in the workspace's scratch
expect 0 "plan JSON (split-K)" "$kbc" compile "$src/tests/codegen/specs/splitk.kb" --emit plan --set m=64 --set n=64 \
  --target sm_90 --json &&
  cp "$log" "$tmp/sk.json" && check_json "split-K" "$tmp/sk.json" '
assert families == ["gemm", "gemm", "gemm"], families
assert [b["name"] for b in d["buffers"]] == ["(scratch)"] and d["buffers"][0]["bytes"] > 0, d["buffers"]'
expect 0 "plan text (split-K)" "$kbc" compile "$src/tests/codegen/specs/splitk.kb" --emit plan --set m=64 --set n=64 \
  --target sm_90 && mentions "plan text (split-K)" "0 temporaries and the kernels' scratch (split-K's partial sums)"
# TF32 operands rounded before the launch (KBC_GEMM_PREP=2): a kbc_tf32_copy
# of each before the GEMM, the copies in the scratch before split-K's parts
expect 0 "plan JSON (prep)" env KBC_GEMM_PREP=2 KBC_GEMM_WGMMA=2 KBC_GEMM_SPLIT=2 "$kbc" compile \
  "$src/specs/examples/matmul_bias_gelu.kb" --emit plan --set m=512 --set k=1024 --set n=256 --target sm_90a \
  --precision tf32 --json && cp "$log" "$tmp/prep.json" && check_json "prep" "$tmp/prep.json" '
assert families == ["prep", "prep", "gemm"], families
assert [k["statements"] for k in d["kernels"][:2]] == [["(scratch) = tf32(a)"], ["(scratch) = tf32(w)"]], d
assert d["buffers"][0]["name"] == "(scratch)" and d["buffers"][0]["bytes"] > 4 * (512 + 256) * 1024, d["buffers"]'
expect 0 "plan text (prep)" env KBC_GEMM_PREP=2 KBC_GEMM_WGMMA=2 KBC_GEMM_SPLIT=2 "$kbc" compile "$src/specs/examples/matmul_bias_gelu.kb" --emit plan \
  --set m=512 --set k=1024 --set n=256 --target sm_90a --precision tf32 &&
  mentions "plan text (prep)" "kbc_tf32_copy" && mentions "plan text (prep)" "(operands' copies, split-K's partial sums)"
expect 0 "plan JSON (no prep at fp32)" env KBC_GEMM_PREP=2 KBC_GEMM_WGMMA=2 "$kbc" compile "$src/specs/examples/matmul_bias_gelu.kb" \
  --emit plan --set m=512 --set k=1024 --set n=256 --target sm_90a --json && cp "$log" "$tmp/noprep.json" &&
  check_json "no prep at fp32" "$tmp/noprep.json" '
assert "prep" not in families, families'
# an n-contiguous operand packed k-major before the launch by the kernel's own
# pack kernel (KBC_GEMM_PACK: where it pays, as at 4096^3 specialized), rounded at tf32, as is at fp32
expect 0 "plan JSON (pack)" env KBC_SPECIALIZE=1 "$kbc" compile "$src/bench/suite/1_1_square_matmul.kb" --emit plan --set n=4096 \
  --target sm_90a --precision tf32 --json && cp "$log" "$tmp/pack.json" && check_json "pack" "$tmp/pack.json" '
assert families == ["prep", "prep", "gemm"], families
assert [k["name"] for k in d["kernels"]] == ["kbc_tf32_copy", "square_matmul_k0_out_pack1", "square_matmul_k0_out"], d
assert d["kernels"][1]["statements"] == ["(scratch) = tf32(b) packed k-major for operand B"], d
assert d["buffers"][0]["bytes"] == 2 * 4 * 4096 * 4096, d["buffers"]'
expect 0 "plan JSON (pack, fp32)" env KBC_SPECIALIZE=1 "$kbc" compile "$src/bench/suite/1_1_square_matmul.kb" --emit plan --set n=4096 \
  --target sm_90a --json && cp "$log" "$tmp/pack32.json" && check_json "pack, fp32" "$tmp/pack32.json" '
assert families == ["prep", "gemm"], families
assert d["kernels"][0]["statements"] == ["(scratch) = b packed k-major for operand B"], d'
expect 0 "plan JSON (pack, misaligned)" env KBC_SPECIALIZE=1 "$kbc" compile "$src/bench/suite/1_8_matmul_irregular.kb" \
  --emit plan --set m=8205 --set k=2949 --set n=5921 --target sm_90a --json && cp "$log" "$tmp/packm.json" &&
  check_json "pack, misaligned" "$tmp/packm.json" '
assert families == ["prep", "prep", "gemm"], families
assert [k["statements"] for k in d["kernels"][:2]] == [["(scratch) = a packed k-major for operand A"],
                                                       ["(scratch) = b packed k-major for operand B"]], d'
# A contraction of few tiles and a long K whose loads no team would read
# contiguously stays a GEMM (group.c, cg_group_family): SAM-HQ's
# relative-position gradients at 16x16 b32 (their terms 64 and 16 floats
# apart along n and x); a matrix-vector product (a row contiguous along k)
# goes to a rows team per output.
sam_parts() { "$kbc" compile "$src/specs/sam_hq_attn_relpos_bwd.kb" --emit plan --specialize --target sm_90a --set batch_size=32 \
  --set height=16 --set width=16 2>&1 | grep -E "grad_rel_pos_[hw]_part "; }
[ "$(sam_parts | grep -c ' gemm ')" = 2 ] || fail "rows: SAM-HQ's relative-position gradient parts not GEMMs at 16x16 b32: $(sam_parts)"
"$kbc" compile "$src/bench/suite/1_4_matvec.kb" --emit plan --target sm_90a --set m=2048 --set k=1048576 2>&1 | grep -qE 'matvec_k0_out +rows ' ||
  fail "rows: the matrix-vector product not a rows kernel"
# at fp32 an n-contiguous operand copied 16 bytes at a time into the stages (gemm_operand.trv) where
# that beats the pack: the batched 128 x 512 x 1024 x 2048 (few tiles along m); packed under
# KBC_GEMM_TR_VEC=0
bmm() { env "$@" "$kbc" compile "$src/bench/suite/1_3_batched_matmul.kb" --emit cuda --specialize --set batch=128 --set m=512 \
  --set k=1024 --set n=2048 --target sm_90a 2>&1 | grep '^//   B:'; }
bmm KBC_GEMM_TR_VEC=1 | grep -q 'into the low half' || fail "trv: the batched product's B not copied 16 bytes at a time: $(bmm KBC_GEMM_TR_VEC=1)"
bmm KBC_GEMM_TR_VEC=0 | grep -q 'packed k-major' || fail "trv: B not packed under KBC_GEMM_TR_VEC=0: $(bmm KBC_GEMM_TR_VEC=0)"
# no pack larger than four times its tensor (plus 4 MB), even forced: x[i + r] read as an m x k
# operand would be an im2col of 10^8 floats; w[r, j] is packed
printf 'kernel toeplitz\naxis m var\naxis k var\naxis n var\naxis mk = m + k\ninput x f32[mk]\ninput w f32[k, n]\noutput y f32[m, n]\ny[i, j] = sum(r: x[i + r] * w[r, j])\n' >"$tmp/toeplitz.kb"
expect 0 "plan JSON (pack size bound)" env KBC_SPECIALIZE=1 KBC_GEMM_PACK=2 "$kbc" compile "$tmp/toeplitz.kb" --emit plan \
  --set m=100000 --set k=1001 --set n=512 --target sm_90a --json && cp "$log" "$tmp/packb.json" &&
  check_json "pack size bound" "$tmp/packb.json" '
assert [k["statements"] for k in d["kernels"] if k["family"] == "prep"] == [["(scratch) = w packed k-major for operand B"]], d'
expect 0 "plan JSON (no pack)" env KBC_SPECIALIZE=1 KBC_GEMM_PACK=0 "$kbc" compile "$src/bench/suite/1_1_square_matmul.kb" --emit plan \
  --set n=4096 --target sm_90a --json && cp "$log" "$tmp/nopack.json" && check_json "no pack" "$tmp/nopack.json" '
assert "pack" not in str(d["kernels"]), d'
printf 'kernel pairsum\naxis h var\naxis n = 2 * h\ninput x f32[n]\noutput y f32[h]\ny[i / 2] += x[i]\n' >"$tmp/pairsum.kb"
expect 0 "plan JSON (scatter)" "$kbc" compile "$tmp/pairsum.kb" --emit plan --set h=1000 --target sm_90 --json &&
  cp "$log" "$tmp/sc.json" && check_json "scatter" "$tmp/sc.json" '
assert families == ["zero", "scatter"], families
assert d["kernels"][0]["statements"] == ["y = 0"] and d["kernels"][1]["statements"] == ["y[i/2] += x[i]"], d'
expect 0 "plan text (scatter)" "$kbc" compile "$tmp/pairsum.kb" --emit plan --set h=1000 --target sm_90 &&
  mentions "plan text (scatter)" "kbc_zero" && mentions "plan text (scatter)" "y = 0"

# ---- rank-0 tensors; no var axes ----------------------------------------------
printf 'kernel scalars\naxis n var\ninput x f32[n]\ninput alpha f32\noutput s f32\noutput y f32[n]\ny[i] = alpha * x[i]\ns = alpha * 2\n' >"$tmp/scalars.kb"
expect 0 "plan JSON (rank-0 output)" "$kbc" compile "$tmp/scalars.kb" --emit plan --set n=7 --target sm_90 --json &&
  cp "$log" "$tmp/s0.json" && check_json "rank-0 output" "$tmp/s0.json" 'assert any(k["statements"] == ["s = alpha * 2.0"] for k in d["kernels"]), d'
printf 'kernel fixed\naxis n const 6\ninput x f32[n]\noutput y f32[n]\ny[i] = 2 * x[i]\n' >"$tmp/fixed.kb"
expect 0 "plan text (no var axes)" "$kbc" compile "$tmp/fixed.kb" --emit plan --target sm_90 &&
  mentions "plan text (no var axes)" "for its constant axes"

# ---- errors ----------------------------------------------------------------------
expect 2 "plan without --set" "$kbc" compile "$mm" --emit plan --target sm_90 &&
  mentions "plan without --set" "missing: m, k, n" && mentions "plan without --set" "--set m=N --set k=N --set n=N"
expect 2 "plan with one --set missing" "$kbc" compile "$cv" --emit plan --set batch_size=2 --set in_channels=3 \
  --set d=6 --set h=8 --target sm_90 && mentions "plan with one --set missing" "missing: w"
expect 1 "plan --set of an unknown axis" "$kbc" compile "$mm" --emit plan --set zz=3 --target sm_90 &&
  mentions "plan --set of an unknown axis" "zz"
expect 1 "plan --set of a constant axis" "$kbc" compile "$cv" --emit plan "${set_cv[@]}" --set ks=3 --target sm_90 &&
  mentions "plan --set of a constant axis" "ks"
expect 1 "plan --set m=0" "$kbc" compile "$mm" --emit plan --set m=0 --set k=1 --set n=1 --target sm_90 &&
  mentions "plan --set m=0" "m=0"
expect 2 "plan --set m=abc" "$kbc" compile "$mm" --emit plan --set m=abc --target sm_90 && mentions "plan --set m=abc" "m=abc"
expect 2 "plan with a binding that breaks an axis" "$kbc" compile "$cv" --emit plan --set batch_size=2 --set in_channels=3 \
  --set d=2 --set h=8 --set w=8 --target sm_90 && mentions "plan with a binding that breaks an axis" "d=2"
expect 2 "--set without --emit plan" "$kbc" compile "$mm" --emit cuda --set m=4 --target sm_90

# specialization: the code for exact sizes (--specialize, or KBC_SPECIALIZE
# for what the runtime runs); the plan names the sizes it was made for
sw=$src/specs/examples/swiglu.kb
set_sw=(--set m=512 --set d=1024 --set ff=2816)
expect 0 "plan --specialize" "$kbc" compile "$sw" --emit plan --specialize "${set_sw[@]}" --target sm_90 &&
  mentions "plan --specialize" "for m=512 d=1024 ff=2816 (specialized)" && mentions "plan --specialize" "gemm"
expect 0 "plan under KBC_SPECIALIZE=4" env KBC_SPECIALIZE=4 "$kbc" compile "$sw" --emit plan "${set_sw[@]}" --target sm_90 &&
  mentions "plan under KBC_SPECIALIZE=4" "(specialized)"
expect 0 "plan, generic" "$kbc" compile "$sw" --emit plan "${set_sw[@]}" --target sm_90 &&
  if grep -q "(specialized)" "$log"; then fail "plan, generic: says specialized"; fi
expect 0 "cuda --specialize" "$kbc" compile "$sw" --emit cuda --specialize --set m=5 --set d=12 --set ff=20 --target sm_90
expect 2 "--specialize without --set" "$kbc" compile "$sw" --emit cuda --specialize --target sm_90
expect 2 "--specialize with --emit ir" "$kbc" compile "$sw" --emit ir --specialize --set m=5
# kbc info says what the code is generated with
expect 0 "info, defaults" env -u KBC_SPECIALIZE "$kbc" info &&
  mentions "info, defaults" "code: specialized for the first 16 bindings of a program (KBC_SPECIALIZE)"
expect 0 "info, switches" env KBC_SPECIALIZE=0 KBC_UNROLL=8 KBC_IDX32=0 "$kbc" info &&
  mentions "info, switches" "code: generic, not specialized (KBC_SPECIALIZE=0), KBC_UNROLL=8, KBC_IDX32=0"
# the attention family: one kernel for the chain, no scores or probabilities
# in the workspace (the causal forward has no temporary left); as four
# kernels under KBC_NO_ATTN; an MLP (no row statistics) stays two GEMMs
ac=$src/specs/examples/attention_causal.kb
set_ac=(--set batch=4 --set heads=8 --set seq=512)
expect 0 "plan, attention" "$kbc" compile "$ac" --emit plan "${set_ac[@]}" --target sm_90 &&
  mentions "plan, attention" "attention" && mentions "plan, attention" "# workspace: 0 bytes"
expect 0 "plan, attention JSON" "$kbc" compile "$ac" --emit plan --json "${set_ac[@]}" --target sm_90 -o "$tmp/ac.json" &&
  check_json "plan, attention JSON" "$tmp/ac.json" \
    'assert [k["family"] for k in d["kernels"]] == ["attention"], d["kernels"]; assert d["workspace_bytes"] == 0'
# the pipelined kernel (D and N2 known): 128 threads, dynamic shared
# memory, 3 blocks per multiprocessor where it fits; KBC_ATTN_PIPE=0 and
# KBC_ATTN_FFMA=1 give the 256-thread kernel with static shared memory
check_json "plan, attention pipelined" "$tmp/ac.json" \
  'k = d["kernels"][0]; assert k["block"] == [128, 1, 1] and k["smem_bytes"] > 24 * 1024, k'
expect 0 "plan, KBC_ATTN_PIPE=0" env KBC_ATTN_PIPE=0 "$kbc" compile "$ac" --emit plan --json "${set_ac[@]}" --target sm_90 \
  -o "$tmp/ac0.json" &&
  check_json "plan, KBC_ATTN_PIPE=0" "$tmp/ac0.json" \
    'k = d["kernels"][0]; assert k["family"] == "attention" and k["block"] == [256, 1, 1] and k["smem_bytes"] <= 48 * 1024, k'
expect 0 "plan, KBC_ATTN_FFMA" env KBC_ATTN_FFMA=1 "$kbc" compile "$ac" --emit cuda --specialize "${set_ac[@]}" \
  --target sm_90 && mentions "plan, KBC_ATTN_FFMA" "schedule: attention (FFMA fp32)"
expect 0 "plan, pipelined 3xTF32" "$kbc" compile "$ac" --emit cuda --specialize "${set_ac[@]}" --target sm_90 &&
  mentions "plan, pipelined 3xTF32" "__launch_bounds__(128, 3)" && mentions "plan, pipelined 3xTF32" "kbc_cp_async16("
expect 0 "plan, KBC_NO_ATTN" env KBC_NO_ATTN=1 "$kbc" compile "$ac" --emit plan "${set_ac[@]}" --target sm_90 &&
  if grep -q "attention " "$log"; then fail "plan, KBC_NO_ATTN: an attention kernel"; fi &&
  { grep -Eq "scores +\[4, 8, 512, 512\]" "$log" || fail "plan, KBC_NO_ATTN: no scores buffer"; }
expect 0 "plan, MLP" "$kbc" compile "$src/specs/examples/mlp_relu.kb" --emit plan --set batch=64 --set d_in=256 \
  --set d_hidden=512 --set d_out=128 --target sm_90 &&
  if grep -q "attention" "$log"; then fail "plan, MLP: an attention kernel"; fi
# the chain's conditions, each broken once: the probabilities read after
# the chain, the scores an output, exp of something other than the max's
# body, a second max; and one kept: the max's body scaled in both places
att_spec() { # NAME SCORES-LINE REST...: an attention spec over b, s, d = 16
  local f=$tmp/$1.kb
  shift
  { echo "kernel att"; echo "axis b var"; echo "axis s var"; echo "axis d const 16"
    echo "input q f32[b, s, d]"; echo "input k f32[b, s, d]"; echo "input v f32[b, s, d]"
    echo "output o f32[b, s, d]"; printf '%s\n' "$@"; } >"$f"
  echo "$f"
}
sc='sc[n, i, j] = sum(c: q[n, i, c] * k[n, j, c])'
mx='mx[n, i] = max(j: sc[n, i, j])'
l='l[n, i] = sum(j: exp(sc[n, i, j] - mx[n, i]))'
o='o[n, i, c] = sum(j: exp(sc[n, i, j] - mx[n, i]) * v[n, j, c]) / l[n, i]'
fused() { "$kbc" compile "$1" --emit plan --set b=2 --set s=40 --target sm_90 2>&1 | grep -c " attention "; }
f=$(att_spec plain "$sc" "$mx" "$l" "$o")
[ "$(fused "$f")" = 1 ] || fail "attention chain: not fused"
f=$(att_spec scaled "sc[n, i, j] = 0.5 * sum(c: q[n, i, c] * k[n, j, c])" "mx[n, i] = max(j: 2.0 * sc[n, i, j])" \
  "l[n, i] = sum(j: exp(2.0 * sc[n, i, j] - mx[n, i]))" "o[n, i, c] = sum(j: exp(2.0 * sc[n, i, j] - mx[n, i]) * v[n, j, c]) / l[n, i]")
[ "$(fused "$f")" = 1 ] || fail "attention chain, the max of 2 * s: not fused"
f=$(att_spec other_x "$sc" "$mx" "l[n, i] = sum(j: exp(2.0 * sc[n, i, j] - mx[n, i]))" "$o")
[ "$(fused "$f")" = 0 ] || fail "attention chain, exp(2 * s - max(s)): fused (it may overflow in one sweep)"
f=$(att_spec scores_out "output sc f32[b, s, s]" "$sc" "$mx" "$l" "$o")
[ "$(fused "$f")" = 0 ] || fail "attention chain, the scores an output: fused"
f=$(att_spec p_read_after "output pl f32[b, s]" "$sc" "$mx" "$l" "p[n, i, j] = exp(sc[n, i, j] - mx[n, i]) / l[n, i]" \
  "o[n, i, c] = sum(j: p[n, i, j] * v[n, j, c])" "pl[n, i] = sum(j: p[n, i, j] * p[n, i, j])")
[ "$(fused "$f")" = 0 ] || fail "attention chain, the probabilities read after it: fused"
f=$(att_spec two_max "$sc" "$mx" "m2[n, i] = max(j: sc[n, i, j] + 1.0)" "$l" \
  "o[n, i, c] = sum(j: exp(sc[n, i, j] - mx[n, i]) * exp(sc[n, i, j] + 1.0 - m2[n, i]) * v[n, j, c]) / l[n, i]")
[ "$(fused "$f")" = 0 ] || fail "attention chain, two rescaling maxima: fused"
# Pointwise groups four points a thread where specialized with a last
# extent that is a multiple of 4 (sched_rows.c), not for other extents, not
# under KBC_NO_VEC=1.
pv=$src/tests/codegen/specs/pointwise_vec.kb
vec() { "$kbc" compile "$pv" --emit cuda --target sm_90 "$@" 2>&1 | grep -c "four points a thread"; }
[ "$(vec --specialize --set n=600 --set m=64)" = 2 ] || fail "pointwise_vec at m = 64: not four points a thread"
"$kbc" compile "$pv" --emit cuda --target sm_90 --specialize --set n=600 --set m=64 | grep -q "__stwb((float4 \*)" ||
  fail "pointwise_vec at m = 64: no 16-byte store"
[ "$(vec --specialize --set n=600 --set m=66)" = 1 ] || fail "pointwise_vec at m = 66: not only u's kernel (n = 600) four points a thread"
[ "$(vec --specialize --set n=601 --set m=66)" = 0 ] || fail "pointwise_vec at n = 601, m = 66: four points a thread"
[ "$(KBC_NO_VEC=1 vec --specialize --set n=600 --set m=64)" = 0 ] || fail "KBC_NO_VEC=1: four points a thread"
# rfactor (passes/hoist.c): a long reduction of few outputs split in parts
# where the sizes are known, with kernels of more blocks; not in the
# generic code, not below 2^17 terms.
rf=$src/tests/codegen/specs/rfactor.kb
"$kbc" compile "$rf" --emit plan --json --target sm_90 --specialize --set c=3 --set n=16 --set h=8192 >"$tmp/rf.json" &&
  check_json "rfactor at 3 x 2^17 terms" "$tmp/rf.json" '
part = [k for k in d["kernels"] if any(st.startswith("s.part[ch, b] = sum(i:") for st in k["statements"])]
assert len(part) == 1 and part[0]["grid"][0] == 48, part
assert any("s[ch] = sum(b: s.part[ch, b])" in st for k in d["kernels"] for st in k["statements"]), names'
parts() { "$kbc" compile "$rf" --emit plan --target sm_90 "$@" 2>&1 | grep -c "\.part\["; }
[ "$(parts --set c=3 --set n=16 --set h=8192)" = 0 ] || fail "rfactor in the generic code"
[ "$(parts --specialize --set c=3 --set n=16 --set h=64)" = 0 ] || fail "rfactor below 2^17 terms"
# The wgmma K loop (codegen/gemm_wgmma.c): on sm_90a for a product whose
# operands are both k-major and whose tiles fill a wave; mma.sync for one
# too small (CViT's linears at batch 10 ran 1.8x slower on wgmma), on
# sm_90, and under KBC_GEMM_WGMMA=0; a GELU epilogue of 128 outputs a
# thread parked and rolled.
wg() { "$kbc" compile "$mm" --emit cuda --specialize "$@" 2>&1 | grep -c "schedule: gemm (.*wgmma"; }
big="--set m=4096 --set k=4096 --set n=4096"
[ "$(wg --target sm_90a $big)" = 1 ] || fail "matmul_bias_gelu 4096^3 on sm_90a: not wgmma"
[ "$(wg --target sm_90a --set m=512 --set k=768 --set n=256)" = 0 ] || fail "a product of 8 tiles on wgmma"
[ "$(wg --target sm_90 $big)" = 0 ] || fail "wgmma on sm_90 (not sm_90a)"
[ "$(KBC_GEMM_WGMMA=0 wg --target sm_90a $big)" = 0 ] || fail "wgmma under KBC_GEMM_WGMMA=0"
"$kbc" compile "$mm" --emit cuda --specialize --target sm_90a $big --precision tf32 2>&1 | grep -q "accumulators parked" ||
  fail "matmul_bias_gelu at tf32 (64 x 256 a warpgroup): the GELU epilogue not parked"
# wgmma with m- or n-contiguous operands copied transposed (KBC_GEMM_WGMMA_T,
# 2 by default since fuzzed on the GPU; the packs off): under 2, gemm_kn's y
# (w[k, n] transposed) at fp32 and tf32, its z (both operands transposed) at
# tf32 only — at fp32 that measured 1.09-1.21x slower than mma.sync on the
# H100; under 1 both, at either precision.  With the packs (the default at
# 4096^3), both at fp32, every operand k-major.
kn=$src/tests/codegen/specs/gemm_kn.kb
[ "$("$kbc" compile "$kn" --emit cuda --specialize --target sm_90a $big 2>&1 | grep -c "schedule: gemm (.*wgmma")" = 2 ] ||
  fail "gemm_kn fp32 with its operands packed: not wgmma for y and z"
wgt() { KBC_GEMM_PACK=0 "$kbc" compile "$kn" --emit cuda --specialize --target sm_90a $big "$@" 2>&1 | grep -c "schedule: gemm (.*wgmma"; }
[ "$(KBC_GEMM_WGMMA_T=2 wgt)" = 1 ] || fail "gemm_kn fp32 under KBC_GEMM_WGMMA_T=2: not wgmma for y alone"
[ "$(KBC_GEMM_WGMMA_T=2 wgt --precision tf32)" = 2 ] || fail "gemm_kn tf32 under KBC_GEMM_WGMMA_T=2: not wgmma for both"
[ "$(KBC_GEMM_WGMMA_T=1 wgt)" = 2 ] || fail "gemm_kn fp32 under KBC_GEMM_WGMMA_T=1: not wgmma for both"
[ "$(wgt --precision tf32)" = 2 ] || fail "gemm_kn tf32 by default: not wgmma for both (KBC_GEMM_WGMMA_T=2 the default)"
[ "$(KBC_GEMM_WGMMA_T=0 wgt --precision tf32)" = 0 ] || fail "gemm_kn tf32 under KBC_GEMM_WGMMA_T=0: wgmma for a transposed operand"
# A plain GEMM's tail (gemm_tail.c, KBC_GEMM_TAIL=2): CViT's second linear
# takes its layer norm, and its out-projection (20 x 128 x 128, a rows
# kernel by its work) becomes a GEMM to take the other (45 launches become
# 33 at batch 10), not by default.
cv() { KBC_SPECIALIZE=1 "$kbc" compile "$src/specs/cvit.kb" --emit plan --target sm_90 --set batch_size=10 --set in_channels=3 \
  --set image_size=32 2>&1 | head -n 1 | grep -o "[0-9]* launches"; }
[ "$(cv)" = "45 launches" ] || fail "CViT b10: $(cv) by default, not 45"
[ "$(KBC_GEMM_TAIL=2 cv)" = "33 launches" ] || fail "CViT b10 under KBC_GEMM_TAIL=2: $(KBC_GEMM_TAIL=2 cv), not 33"
# By default a plain GEMM takes its tail where it keeps its K loop (not on
# wgmma without the tail) and its output tiles with it fill a wave (group.c,
# tail_pays): a softmax over 32 classes at K = 256 joins its GEMM at 65,536
# rows on sm_90, not on sm_90a (wgmma), nor at 32,768 rows (128 tiles).
tw() { "$kbc" compile "$src/tests/codegen/specs/tail_wgmma.kb" --emit plan --specialize "$@" 2>&1 | head -n 1 |
  grep -o "[0-9]* launch[es]*$"; }
[ "$(tw --target sm_90 --set m=65536)" = "1 launch" ] || fail "tail_wgmma m=65536 sm_90: $(tw --target sm_90 --set m=65536), not 1"
[ "$(tw --target sm_90a --set m=65536)" = "2 launches" ] || fail "tail_wgmma m=65536 sm_90a: the tail took wgmma's GEMM"
[ "$(tw --target sm_90 --set m=32768)" = "2 launches" ] || fail "tail_wgmma m=32768 sm_90: a tail under a wave of tiles"
[ "$(KBC_GEMM_TAIL=2 tw --target sm_90a --set m=65536)" = "1 launch" ] || fail "tail_wgmma m=65536 sm_90a under KBC_GEMM_TAIL=2: no tail"
[ "$(KBC_GEMM_TAIL=0 tw --target sm_90 --set m=65536)" = "2 launches" ] || fail "tail_wgmma m=65536 under KBC_GEMM_TAIL=0: a tail"
# A k-tile's chunks copied after one test for all of them (gemm_vec.c)
"$kbc" compile "$mm" --emit cuda --specialize --target sm_90a $big --precision tf32 2>&1 |
  grep -q "if (_vok && _kb + 32 <= _kend && .* // every chunk whole and aligned" ||
  fail "matmul_bias_gelu 4096^3: no single test for a k-tile's copies"
# A contraction below the GEMM family's threshold is a rows kernel, and a
# tiled GEMM under KBC_GEMM_ALWAYS=1 (the fuzzer's gemm variants).
gm() { "$kbc" compile "$mm" --emit plan --specialize --set m=8 --set k=4 --set n=8 --target sm_90 2>&1 | grep -c " gemm "; }
[ "$(gm)" = 0 ] || fail "an 8 x 4 x 8 product tiled by default"
[ "$(KBC_GEMM_ALWAYS=1 gm)" = 1 ] || fail "an 8 x 4 x 8 product not tiled under KBC_GEMM_ALWAYS=1"
# A reduction over short windows only, with points for the whole GPU: a
# thread per point (strided windows too: max pooling 3-D of stride 2 at
# KernelBench's shape had teams of 2).
mp=$src/bench/suite/1_43_maxpool3d.kb
"$kbc" compile "$mp" --emit cuda --target sm_90 --specialize --set batch_size=16 --set channels=32 --set dim1=128 \
  --set dim2=128 --set dim3=128 2>&1 | grep -q "1 thread per outer point" || fail "maxpool3d: not a thread per point"
# A padded operand of a tiled contraction addressed as row offset + k
# offset under its in-bounds test, which leaves out the dimensions proven in
# range (a transposed convolution's batch and channel: only i - ki, j - kj).
ct=$("$kbc" compile "$src/bench/suite/1_57_conv_transpose2d.kb" --emit cuda --target sm_90 --specialize \
  --set batch_size=8 --set in_channels=64 --set out_channels=64 --set height=1024 --set width=1024 2>&1)
echo "$ct" | grep -q "A: .*addressed as row offset + k offset where in bounds" ||
  fail "conv_transpose2d: padded A not addressed as row offset + k offset"
echo "$ct" | grep -qE "0 <= _ar0_n|_kd\[[^]]*\]\[0\]\[[^]]*\] < " && fail "conv_transpose2d: a dimension proven in range tested"
# Two blocks per multiprocessor for a plain FFMA matrix product (gemm_plan.c),
# none where KBC_GEMM_MIN_BLOCKS=1 says so, nor for a convolution.
sq=$src/bench/suite/1_1_square_matmul.kb
"$kbc" compile "$sq" --emit cuda --target sm_90 2>&1 | grep -qF "__launch_bounds__(256, KBC_BLOCKS_SM90(2))" ||
  fail "square matmul: not two blocks per multiprocessor"
KBC_GEMM_MIN_BLOCKS=1 "$kbc" compile "$sq" --emit cuda --target sm_90 2>&1 | grep -qF "__launch_bounds__(256, " &&
  fail "square matmul: KBC_GEMM_MIN_BLOCKS=1 ignored"
"$kbc" compile "$src/bench/suite/1_55_conv2d_asym_input.kb" --emit cuda --target sm_90 2>&1 |
  grep -qF "__launch_bounds__(256, " && fail "conv2d: two blocks per multiprocessor asked"
# inline (passes/inline.c): a producer kept for a reduction that reads it
# is not recomputed by its other readers; a trivial one (x + 1) is.
printf 'kernel keep\naxis n var\naxis m var\ninput x f32[n, m]\ninput w f32[m, m]\noutput y f32[n, m]\noutput z f32[n, m]\ntensor a f32[n, m]\ntensor b f32[n, m]\na[i, j] = tanh(x[i, j]) * 2.0 + x[i, j]\nb[i, j] = x[i, j] + 1.0\ny[i, j] = sum(k: a[i, k] * w[k, j]) + sum(k: b[i, k] * w[k, j])\nz[i, j] = a[i, j] + b[i, j]\n' >"$tmp/keep.kb"
"$kbc" compile "$tmp/keep.kb" --emit ir --after inline 2>&1 | grep -qxF 'z[i, j] = a[i, j] + (x[i, j] + 1.0)' ||
  fail "inline: z recomputes a (kept for y's sum) or keeps b"
# Every long top reduction split across its team or the grid (hoist moves
# the others out; one under a where() splits too): no serial loop over a
# reduction index from 0 in the generic code (3 before: seed 208830).
tr=$src/tests/codegen/specs/team_reductions.kb
serial=$("$kbc" compile "$tr" --emit cuda --target sm_90 2>&1 | grep -cE "for \((long long|int) [a-z_0-9]+ = 0")
[ "$serial" = 0 ] || fail "team_reductions: $serial reductions summed whole by every thread"
# Reductions nested in reductions (passes/distribute.c, hoist.c): a sum
# linear in a contraction sums the other factor once (L2/14: a column sum
# and a matrix-vector product, not 1024 x 8192 x 8192 in one rows kernel);
# a contraction under sigmoid becomes a GEMM of its own; an invariant
# nested sum is computed once.
ns=$src/tests/codegen/specs/nested_sums.kb
ns_ir=$("$kbc" compile "$ns" --emit ir --after dce 2>&1)
for line in 'y1.red1[l] = sum(j: w[j, l])' 'y1[i] = sum(l: x[i, l] * y1.red1[l]) / 2.0 + y1.red' \
            'y2.red[i, j] = sum(l: x[i, l] * w[j, l])' 'y3.red.red[l] = sum(m: v[l, m] * bias[m])' \
            'y5[i] = sum(j: where(bias[j] > 0.0, y5.red[i, j], 0.0))' 'y6[i] = sum(l: x[i, l] * y6.red[l]) / (h)'; do
  grep -qxF "$line" <<<"$ns_ir" || fail "nested sums: no '$line' in the IR"
done
"$kbc" compile "$src/bench/suite/2_14_gemm_div_sum_scale.kb" --emit plan --target sm_90 --set batch_size=1024 \
  --set input_size=8192 --set hidden_size=8192 2>&1 | grep -qF "out.red[b] = sum(k: x[b, k] * out.red.red[k])" ||
  fail "L2/14: the sums not reassociated"
# A row's sum of a contraction times p, summed through the contraction's
# other operand (passes/rowsum.c, run under KBC_ATTN_RECOMPUTE only): the
# softmax backward's sum(j2: dp * p) with dp = go . v^T becomes sum(c: go *
# (p . v)) — a new statement in attention_bwd.kb, SAM-HQ's own o (the same
# sum, its indices renamed) in its backward; not where N is wider than J
# (x . w^T over 512 features summed against p over 64 columns).
rs_ir=$(KBC_ATTN_RECOMPUTE=1 "$kbc" compile "$src/specs/examples/attention_bwd.kb" --emit ir --after rowsum 2>&1)
for line in 'ds.red.o[b, h, i, c] = sum(j2: p[b, h, i, j2] * v[b, h, j2, c])' \
            'ds.red[b, h, i] = sum(c: go[b, h, i, c] * ds.red.o[b, h, i, c])'; do
  grep -qxF "$line" <<<"$rs_ir" || fail "rowsum: no '$line' in attention_bwd's IR"
done
"$kbc" compile "$src/specs/examples/attention_bwd.kb" --emit ir --after rowsum 2>&1 | grep -qF 'ds.red.o' &&
  fail "rowsum: a statement added without KBC_ATTN_RECOMPUTE or KBC_ROWSUM=2"
KBC_ROWSUM=2 "$kbc" compile "$src/specs/examples/attention_bwd.kb" --emit ir --after rowsum 2>&1 | grep -qF 'ds.red.o' ||
  fail "rowsum: no statement added under KBC_ROWSUM=2"
# By default (KBC_ROWSUM=1) only where the program computes o already: the
# pass rowsum-reuse rewrites SAM-HQ's ds.red; KBC_ROWSUM=0 keeps sum(dp * p).
sam_ds() { "$kbc" compile "$src/specs/sam_hq_attn_relpos_bwd.kb" --emit ir --after dce 2>&1 | grep "^ds.red\[" ; }
sam_ds | grep -qF 'sum(c: go[b, y, x, n, c] * o[b, y, x, n, c])' || fail "rowsum-reuse: SAM-HQ's o not reused by default"
KBC_ROWSUM=0 sam_ds | grep -qF 'dp[' || fail "rowsum-reuse: run under KBC_ROWSUM=0"
# absorb (KBC_ABSORB=1): rowsum-reuse left dp one reader, ds, which takes it
# in as its contraction's epilogue; by default dp stays.
KBC_ABSORB=1 "$kbc" compile "$src/specs/sam_hq_attn_relpos_bwd.kb" --emit ir --after dce 2>&1 |
  grep -qxF 'ds[b, n, y, x, ky, kx] = p[b, n, y, x, ky, kx] * (sum(c: go[b, y, x, n, c] * qkv[b, ky, kx, 2, n, c]) - ds.red[b, n, y, x])' ||
  fail "absorb: SAM-HQ's dp not taken into ds under KBC_ABSORB=1"
"$kbc" compile "$src/specs/sam_hq_attn_relpos_bwd.kb" --emit ir --after dce 2>&1 | grep -q '^dp\[' ||
  fail "absorb: SAM-HQ's dp taken into ds by default"
# The stages the K touches (gemm_plan.c, ring) and the output-bound tiles
# (gemm_wgmma.c, KBC_GEMM_OCC) on SAM-HQ at 64x64 b4, sm_90a: rel_h (K 64)
# asks for its two k-tiles' stages, not four; dp takes 128 x 64 tiles two a
# multiprocessor (KBC_GEMM_OCC=0: 128 x 128, one); s keeps its 128 x 128
# tile, whose epilogue is periodic (KBC_GEMM_EP_PERIODIC, on), and takes the
# two-block tile under KBC_GEMM_EP_PERIODIC=0.
sam_plan() { "$kbc" compile "$src/specs/sam_hq_attn_relpos_bwd.kb" --emit plan --specialize --target sm_90a --set batch_size=4 \
  --set height=64 --set width=64 2>&1 | grep -E "_k(1_rel_h|3_s|9_dp) "; }
sp=$(sam_plan)
grep -qE "k1_rel_h +gemm +\[1536, 1, 1\] +\[256, 1, 1\] +99328 " <<<"$sp" || fail "ring: rel_h's shared memory: $sp"
grep -qE "k9_dp +gemm +\[98304, 1, 1\] +\[256, 1, 1\] +99328 " <<<"$sp" || fail "occ: dp not on two-block tiles: $sp"
grep -qE "k3_s +gemm +\[49152, 1, 1\] .* 132096 " <<<"$sp" || fail "occ: s left its periodic tile: $sp"
grep -qE "k9_dp +gemm +\[49152, 1, 1\]" <<<"$(KBC_GEMM_OCC=0 sam_plan)" || fail "occ: dp's tile under KBC_GEMM_OCC=0"
grep -qE "k3_s +gemm +\[98304, 1, 1\] +\[256, 1, 1\] +99328 " <<<"$(KBC_GEMM_EP_PERIODIC=0 sam_plan)" ||
  fail "occ: s not on two-block tiles under KBC_GEMM_EP_PERIODIC=0"
KBC_ATTN_RECOMPUTE=1 "$kbc" compile "$src/specs/sam_hq_attn_relpos_bwd.kb" --emit ir --after rowsum 2>&1 |
  grep -qxF 'ds.red[b, n, y, x] = sum(c: go[b, y, x, n, c] * o[b, y, x, n, c])' || fail "rowsum: SAM-HQ's o not reused"
printf 'kernel wide\naxis n var\ninput x f32[n, 512]\ninput w f32[64, 512]\ninput p f32[n, 64]\noutput y f32[n]\ntensor a f32[n, 64]\na[i, j] = sum(c: x[i, c] * w[j, c])\ny[i] = sum(j: a[i, j] * p[i, j])\n' >"$tmp/wide.kb"
KBC_ATTN_RECOMPUTE=1 "$kbc" compile "$tmp/wide.kb" --emit ir --after rowsum 2>&1 | grep -qxF 'y[i] = sum(j: a[i, j] * p[i, j])' ||
  fail "rowsum: rewritten where N (512) is wider than J (64)"
# The attention backward recomputed (codegen/recompute.c, under
# KBC_ATTN_RECOMPUTE): the forward chain with its row statistics kept, dq,
# dk and dv each an attention kernel recomputing s, p (and dp, ds), no
# buffer of the scores' size; plain by default (the scores in memory).
rc_plan() { "$kbc" compile "$src/specs/examples/attention_bwd.kb" --emit plan --target sm_90 --set batch=16 --set heads=1 \
  --set seq=1024 2>&1; }
rc=$(KBC_ATTN_RECOMPUTE=1 rc_plan)
[ "$(grep -cE '^  [0-9]+  attention_bwd_k[0-9]+_[a-z_]+ +attention ' <<<"$rc")" = 4 ] ||
  fail "recompute: not four attention kernels: $rc"
grep -qE '^  (s|p|dp|ds) +\[16, 1, 1024, 1024\]' <<<"$rc" && fail "recompute: a scores-sized buffer: $rc"
grep -qE '^  dp +\[16, 1, 1024, 1024\]' <<<"$(rc_plan)" || fail "recompute by default"
# The order the kernels need (codegen/deps.c), which the runtime's graph
# keeps (runtime/exec.c, capture_branches): attention_bwd's dp reads only
# inputs and waits for nothing; dv waits for p's kernel alone, not for ds's
# (specialized, as the runtime runs it: the generic code's GEMMs take the
# one scratch region for their operands' packs, and so wait for each other).
br=$(KBC_SPECIALIZE=1 "$kbc" compile "$src/specs/examples/attention_bwd.kb" --emit plan --target sm_90 --set batch=2 --set heads=3 \
  --set seq=100 2>&1)
grep -qF '# each launch waits for the one before it, or for those it names' <<<"$br" &&
  grep -A1 -E '^  2  attention_bwd_k2_dp ' <<<"$br" | grep -qF '(waits for nothing)' &&
  grep -A1 -E '_k[0-9]+_dv ' <<<"$br" | grep -qE '\(waits for 1 only\)' || fail "branches: not as expected: $br"
grep -qF '(waits for' <<<"$("$kbc" compile "$mm" --emit plan "${set_mm[@]}" --target sm_90 2>&1)" &&
  fail "branches: a one-kernel plan names what it waits for"
# Epilogue absorption (inline.c): L2/45's sigmoid becomes the first GEMM's
# epilogue rather than the second GEMM's operand prologue.
"$kbc" compile "$src/bench/suite/2_45_gemm_sigmoid_gemm_lse.kb" --emit ir --after inline 2>&1 |
  grep -qxF 'h.1[i0, i1] = sigmoid(sum(k: x[i0, k] * w1[i1, k]) + b1[i1])' ||
  fail "L2/45: the sigmoid did not absorb the first GEMM"
# Transposed convolutions split by phase (passes/phase.c): KernelBench
# L2/2 (stride 2, 3x3 taps) is four where-free convolution GEMMs of 1, 2,
# 2 and 4 taps per input channel, then one pointwise kernel selecting among
# them (before: one rows kernel of 576 where-guarded terms per output,
# past four minutes on the H200).
ct_plan=$("$kbc" compile "$src/bench/suite/2_2_conv_transpose2d_bias_clamp_scale.kb" --emit plan --target sm_90 \
  --set batch_size=128 --set in_channels=64 --set out_channels=64 --set height=128 --set width=128 2>&1)
[ "$(grep -cE '_k[0-9]+_y_ph[0-9]*  +gemm ' <<<"$ct_plan")" = 4 ] || fail "L2/2: not four phase GEMMs: $ct_plan"
grep -qF 'y.ph3[n, c, io, jo] = sum(ci, kit, kjt: x?[n, ci, io - kit + 1, jo - kjt + 1] * conv_weight[ci, c, 2*kit, 2*kjt])' \
  <<<"$ct_plan" || fail "L2/2: the four-tap phase is not a plain convolution"
grep -q 'where(((i - ki' <<<"$ct_plan" && fail "L2/2: a where-guarded sum is left"
# A team per point only where it keeps loads coalesced (group.c
# count_unit_loads): L2/92's reductions over the 64 channels at each
# (n, i, j) read conv[n, c, i, j], contiguous along j; gn_weight[c], the
# same 64 values for every point, does not count for a team over c (which
# had read 32 sectors for 32 floats: 0.72x eager).
"$kbc" compile "$src/bench/suite/2_92_conv2d_groupnorm_tanh_hardswish_residual_lse.kb" --emit cuda --target sm_90 \
  --specialize --set batch_size=128 --set in_channels=8 --set num_groups=16 --set height=128 --set width=128 2>&1 |
  grep -qxF '// schedule: rows, 3 outer dimensions, 1 thread per outer point' ||
  fail "L2/92: the channel reductions are not a thread per point"
# Grids of the rows family (sched_rows.c, "Pointwise grids"): a float4
# pointwise kernel a thread per four points, block after block (ReLU over
# 4,096 x 393,216: 1,572,864 blocks of 256); a pointwise kernel of single
# points (L1/79's phase select, 16 x 64 x 262,145 points) a grid-stride loop
# over 16 blocks per SM (2,112 on 132 SMs).
relu_plan=$(KBC_SPECIALIZE=1 "$kbc" compile "$src/bench/suite/1_19_relu.kb" --target sm_90 --emit plan \
  --set batch_size=4096 --set dim=393216 2>&1)
grep -qE 'relu_k0_out +rows +\[1572864, 1, 1\] +\[256, 1, 1\]' <<<"$relu_plan" ||
  fail "ReLU: not a thread per four points, block after block: $relu_plan"
ct1_plan=$(KBC_SPECIALIZE=1 "$kbc" compile "$src/bench/suite/1_79_conv_transpose1d_strided.kb" --target sm_90 \
  --emit plan --set batch_size=16 --set in_channels=32 --set out_channels=64 --set length=131072 2>&1)
grep -qE '_k1_out +rows +\[2112, 1, 1\]' <<<"$ct1_plan" ||
  fail "L1/79: the single-point select is not a grid-stride loop of 2,112 blocks: $ct1_plan"
# Float4 rows (vec_loop.c): the L2 norm's rows of 65,535 (odd: aligned
# differently on every row) read and written as float4 after a peeled head.
"$kbc" compile "$src/bench/suite/1_39_l2_norm.kb" --emit cuda --target sm_90 --specialize --set batch_size=32768 \
  --set dim=65535 2>&1 | grep -c 'float4 where every row below is 16-byte aligned' | grep -qx 2 ||
  fail "L2 norm: its two row loops are not float4"
# Column reductions split in parts (hoist.c split_column) where the sizes are
# known (a specialized plan), the parts a kernel of their own (group.c:
# CG_JOIN_LONG), then the sum of the parts.
cs_plan=$(KBC_SPECIALIZE=1 "$kbc" compile "$src/tests/codegen/specs/column_sums.kb" --target sm_90 --emit plan --set h=8192 \
  --set k=2048 --set a=1 --set p=67 2>&1)
grep -qF 'c.part[i_part, j] = sum(i: w[128*i_part + i, j])' <<<"$cs_plan" || fail "column sums: not split in parts"
grep -A1 -F 'column_sums_k0_c_part' <<<"$cs_plan" | tail -1 | grep -qF 'c.part[' &&
  grep -A2 -F 'column_sums_k0_c_part' <<<"$cs_plan" | tail -1 | grep -qE '^ +1 +column_sums_k1_c ' ||
  fail "column sums: the parts not a kernel of their own"
# Long rows of few outputs cut in parts (hoist.c row_parts) where the sizes
# are known: 3 rows of 135,168 into 33 parts of 4,096 (99 blocks, not 3);
# a prime extent left whole; the generic code untouched.
rp=$src/tests/codegen/specs/rowparts.kb
rp_plan=$(KBC_SPECIALIZE=1 "$kbc" compile "$rp" --target sm_90 --emit plan --set n=3 --set m=135168 2>&1)
grep -qF 'ss.part[j_part, i] = sum(j: x[i, 4096*j_part + j] * x[i, 4096*j_part + j])' <<<"$rp_plan" ||
  fail "rowparts: the sum of squares not cut in parts"
grep -qE '^ +0 +rowparts_k0_ss_part +rows +\[99, 1, 1\]' <<<"$rp_plan" || fail "rowparts: the parts not 99 blocks"
grep -qF 'mx[i] = max(j: mx.part[j, i])' <<<"$rp_plan" || fail "rowparts: the max's parts not combined by max"
[ "$(grep -cE '^ +[0-9]+ +rowparts_k' <<<"$rp_plan")" = 4 ] ||
  fail "rowparts: not three parts' kernels and one combining all three (hoist.c gather_part)"
[ "$(KBC_SPECIALIZE=1 "$kbc" compile "$rp" --target sm_90 --emit plan --set n=2 --set m=131101 2>&1 | grep -c '\.part\[')" = 0 ] ||
  fail "rowparts: a prime extent cut"
[ "$(KBC_SPECIALIZE=0 "$kbc" compile "$rp" --target sm_90 --emit plan --set n=3 --set m=135168 2>&1 | grep -c '\.part\[')" = 0 ] ||
  fail "rowparts: cut in the generic code"
# A one-point group pays for what its statements lose on one team (group.c,
# join_loss): the fuzzer's spec of seed 28 keeps its 1,152-element score
# matrix out of the one-block group of its small statements.
ops_plan=$(KBC_SPECIALIZE=1 "$kbc" compile "$src/tests/codegen/specs/one_point_starve.kb" --target sm_90 \
  --emit plan --set a=2 --set b=1 --set m=2 2>&1)
grep -qF 'y13[i4, i5] = y13.red[i5]' <<<"$ops_plan" || fail "one-point starve: no plan: $ops_plan"
awk '/^  0  /{k=1} /^  1  /{k=0} k && /s25\[/' <<<"$ops_plan" | grep -q . &&
  fail "one-point starve: the score matrix is in the one-block group of the small statements: $ops_plan"
# A join keeping a few outer points pays the same way (group.c, join_pays):
# seed 69's y16 reads one element of t11 per point of its first dimension,
# so joining it would leave 32 teams for t11's 17,408 elements; and CViT at
# batch 10 keeps each layer's projections out of the ten-block layer norm
# (280.7 us folded, 156.6 us apart on the H200).
bj_plan=$(KBC_SPECIALIZE=1 "$kbc" compile "$src/tests/codegen/specs/bounded_join_starve.kb" --target sm_90 \
  --emit plan --set a=1 --set b_x=17 2>&1)
grep -qE '^# launch plan of bounded_join_starve .*, 2 launches$' <<<"$bj_plan" ||
  fail "bounded join starve: t11 and y16 not two kernels: $bj_plan"
cv_plan=$(KBC_SPECIALIZE=1 "$kbc" compile "$src/specs/cvit.kb" --target sm_90 --emit plan --set batch_size=10 \
  --set in_channels=3 --set image_size=32 2>&1)
grep -qF 'encoder_layer1.qkv[' <<<"$cv_plan" || fail "cvit: no plan: $cv_plan"
awk '/^  [0-9]+ /{q=0; x=0} /\.qkv\[/{q=1} /\.x1\.mean\[/{x=1} q && x {print; exit}' <<<"$cv_plan" | grep -q . &&
  fail "cvit: a layer's projection and its layer norm in one kernel: $cv_plan"
# The fused attention family where it pays (attn_cost.c): not for 5,329
# heads of 3x3 scores (seed 236: 104 us fused, 29 us apart), unless
# KBC_ATTN_ALWAYS=1; for a causal attention of 8 heads of 512 rows.
at_plan() { KBC_SPECIALIZE=1 "$kbc" compile "$src/tests/codegen/specs/attn_tiny_heads.kb" --target sm_90 \
  --emit plan --set a=37 --set b=31 2>&1; }
at_plan | grep -qF 'y27[' || fail "attention of tiny heads: no plan: $(at_plan)"
at_plan | grep -qE '^ +[0-9]+ +\S+ +attention ' && fail "attention of tiny heads: fused: $(at_plan)"
KBC_ATTN_ALWAYS=1 at_plan | grep -qE '^ +[0-9]+ +\S+ +attention ' ||
  fail "attention of tiny heads under KBC_ATTN_ALWAYS=1: not fused: $(KBC_ATTN_ALWAYS=1 at_plan)"
KBC_SPECIALIZE=1 "$kbc" compile "$src/specs/examples/attention_causal.kb" --target sm_90 --emit plan --set batch=4 \
  --set heads=8 --set seq=512 2>&1 | grep -qE '^ +0 +\S+ +attention ' || fail "causal attention b4 h8 s512: not fused"
# A few inner elements of long sums: in parts across the team
# (sched_rows.c, parts_per_element; seed 202: 27.6 us one thread an
# element, 11.4 us in parts).
"$kbc" compile "$src/tests/codegen/specs/parts_idle.kb" --target sm_90 --emit cuda --specialize --set a=65 \
  --set b_x=2 2>&1 | grep -qF '_pw' || fail "parts idle: y8.red's two sums not in parts"
# Short sums a thread an element where a warp each would take many more
# rounds (sched_rows.c, warp_rounds_lose; seed 928): no warp lanes, but
# under KBC_ROWS_COST=0.
wr_cuda() { "$kbc" compile "$src/tests/codegen/specs/warp_rounds.kb" --target sm_90 --emit cuda --specialize \
  --set a_x=1 --set b=17 --set n_x=33 2>&1; }
wr_cuda | grep -qF '// schedule: rows, 2 outer dimensions, 128 threads per outer point' ||
  fail "warp rounds: not one group of 128 threads a point: $(wr_cuda)"
wr_cuda | grep -qF '_wl = ' && fail "warp rounds: 33 sums of 33 terms a warp each"
KBC_ROWS_COST=0 wr_cuda | grep -qF '_wl = ' || fail "warp rounds under KBC_ROWS_COST=0: not a warp each"
# Teams and scattered stores (group.c, scattered_stores): a thread a point
# where a team would scatter a broadcast's stores (seed 931), teams where a
# thread a point would (seed 260's short rows), a team where both scatter
# as many (seed 543).
sc_cuda() { local f=$1; shift; "$kbc" compile "$src/tests/codegen/specs/$f.kb" --target sm_90 --emit cuda --specialize \
  "$@" 2>&1 | grep '^// schedule: rows'; }
st_args=(--set a_x=30 --set b=7 --set n_x=67)
sc_cuda scatter_team "${st_args[@]}" | head -1 | grep -qF '3 outer dimensions, 1 thread per outer point' ||
  fail "scatter team: the broadcast's group not a thread a point: $(sc_cuda scatter_team "${st_args[@]}")"
KBC_ROWS_COST=0 sc_cuda scatter_team "${st_args[@]}" | head -1 | grep -qF '3 outer dimensions, 32 threads per outer point' ||
  fail "scatter team under KBC_ROWS_COST=0: not a warp a point"
sc_cuda scatter_thread --set a_x=131 | grep -qF '3 outer dimensions, 1 thread per outer point' &&
  fail "scatter thread: rows of 16 a thread a point: $(sc_cuda scatter_thread --set a_x=131)"
[ "$(KBC_ROWS_COST=0 sc_cuda scatter_thread --set a_x=131 | grep -cF '3 outer dimensions, 1 thread per outer point')" = 2 ] ||
  fail "scatter thread under KBC_ROWS_COST=0: not a thread a point"
sc_cuda scatter_mixed --set a=37 --set b_x=257 --set n=5 | tail -1 | grep -qF '2 outer dimensions, 8 threads per outer point' ||
  fail "scatter mixed: t19 and y23 not a team a point: $(sc_cuda scatter_mixed --set a=37 --set b_x=257 --set n=5)"
# A scalar's sum over long rows by the point family, a block a row
# (sched_point.c, rows_pay): the hinge loss over 2^15 x 2^15 and
# point_rows.kb at 600 rows of 1,027; not 100 rows (fewer than the blocks).
pr_cuda() { "$kbc" compile "$src/$1" --target sm_90 --emit cuda --specialize "${@:2}" 2>&1 |
  grep -c 'each block whole rows, its threads along them'; }
[ "$(pr_cuda bench/suite/1_100_hinge_loss.kb --set batch_size=32768 --set dim=32768)" = 1 ] ||
  fail "hinge loss over 2^15 x 2^15: the point family not by rows"
[ "$(pr_cuda tests/codegen/specs/point_rows.kb --set n=600 --set m=1027)" = 2 ] ||
  fail "point_rows at 600 x 1,027: not both sums by rows"
[ "$(pr_cuda tests/codegen/specs/point_rows.kb --set n=100 --set m=1027)" = 0 ] ||
  fail "point_rows at 100 x 1,027: by rows with fewer rows than blocks"
# A row's max and sum of exps in one pass where the rows stream past the L2
# (sched_rows.c, online_pair and online_pays): softmax over rows of
# 393,216, not cross entropy over rows of 4,096; never under
# KBC_ROWS_ONLINE=0, always under 2.
on_cuda() { "$kbc" compile "$src/$1" --target sm_90 --emit cuda --specialize "${@:2}" 2>&1 | grep -c 'online: a new max'; }
[ "$(on_cuda bench/suite/1_23_softmax.kb --set batch_size=4096 --set dim=393216)" -gt 0 ] ||
  fail "softmax over rows of 393,216: max and sum not in one pass"
[ "$(KBC_ROWS_ONLINE=0 on_cuda bench/suite/1_23_softmax.kb --set batch_size=4096 --set dim=393216)" = 0 ] ||
  fail "softmax under KBC_ROWS_ONLINE=0: in one pass"
[ "$(on_cuda bench/suite/1_95_cross_entropy.kb --set batch_size=32768 --set num_classes=4096)" = 0 ] ||
  fail "cross entropy over rows of 4,096: in one pass"
[ "$(KBC_ROWS_ONLINE=2 on_cuda bench/suite/1_95_cross_entropy.kb --set batch_size=32768 --set num_classes=4096)" -gt 0 ] ||
  fail "cross entropy under KBC_ROWS_ONLINE=2: not in one pass"
# A row's sum and squared deviations in one pass (sched_rows.c,
# welford_pair): by default (KBC_ROWS_WELFORD=1) for the instance norm's
# rows of 262,144 (past the L2); never under KBC_ROWS_WELFORD=0.
wf_cuda() { "$kbc" compile "$src/bench/suite/1_34_instancenorm.kb" --target sm_90 --emit cuda --specialize \
  --set batch_size=112 --set features=64 --set dim1=512 --set dim2=512 2>&1 | grep -c 'Welford, for'; }
[ "$(KBC_ROWS_WELFORD=0 wf_cuda)" = 0 ] || fail "instance norm under KBC_ROWS_WELFORD=0: Welford"
[ "$(wf_cuda)" -gt 0 ] || fail "instance norm: two passes by default"
# KBC_STREAM_SPLIT=1 (group.c streams_past_l2): softmax over rows of 393,216
# (1.5 MB each, some thousand at once: far past the L2) keeps its max and sum
# in one kernel and gives the normalisation the pointwise grid; by default
# the three passes are one kernel.
sm_plan() { "$kbc" compile "$src/bench/suite/1_23_softmax.kb" --target sm_90 --emit plan --specialize \
  --set batch_size=4096 --set dim=393216 2>&1; }
sm_plan | grep -qE '^# launch plan of softmax .*, 1 launch$' || fail "softmax: not one kernel by default: $(sm_plan)"
KBC_STREAM_SPLIT=1 sm_plan | grep -qE 'softmax_k1_out +rows +\[1572864, 1, 1\]' ||
  fail "softmax under KBC_STREAM_SPLIT=1: the normalisation is not a pointwise grid: $(KBC_STREAM_SPLIT=1 sm_plan)"
# Contractions with few rows (group.c small_rule, KBC_GEMM_SMALL=1 by
# default): a 20-row linear of 512 x 256 weights (0.5 MB) in the rows family,
# an 8-row one of 4096 x 1024 (16 MB) a GEMM; an 8-row one of 8192-term sums,
# matrix-vector like, stays rows (a team an element); under KBC_GEMM_SMALL=0
# the first two the other way round (the work rule: 16 rows, 2^20 products).
mbg_family() { "$kbc" compile "$src/specs/examples/matmul_bias_gelu.kb" --target sm_90a --emit plan --specialize \
  --set "m=$1" --set "k=$2" --set "n=$3" 2>&1 | awk '$2 == "matmul_bias_gelu_k0_out" {print $3}'; }
[ "$(mbg_family 20 512 256)" = rows ] || fail "20 x 256 x 512 linear: not rows: $(mbg_family 20 512 256)"
[ "$(mbg_family 8 1024 4096)" = gemm ] || fail "8 x 4096 x 1024 linear: not a GEMM: $(mbg_family 8 1024 4096)"
[ "$(mbg_family 8 8192 256)" = rows ] || fail "8 x 256 x 8192 linear: not rows: $(mbg_family 8 8192 256)"
# 8 trailing columns of a 4096 x 1024 operand stay rows (a block's points
# share their row of it); the same product written out[j, i] (the 8 leading)
# is a GEMM
printf 'kernel few\naxis m var\naxis k var\naxis n var\ninput x f32[m, k]\ninput w f32[k, n]\noutput y f32[%s]\ny[%s] = sum(r: x[i, r] * w[r, j])\n' \
  "m, n" "i, j" >"$tmp/few_trailing.kb"
printf 'kernel few\naxis m var\naxis k var\naxis n var\ninput x f32[m, k]\ninput w f32[k, n]\noutput y f32[%s]\ny[%s] = sum(r: x[i, r] * w[r, j])\n' \
  "n, m" "j, i" >"$tmp/few_leading.kb"
few_family() { "$kbc" compile "$tmp/$1.kb" --target sm_90a --emit plan --specialize --set m=4096 --set k=1024 --set n=8 2>&1 |
  awk '$2 == "few_k0_y" {print $3}'; }
[ "$(few_family few_trailing)" = rows ] || fail "8 trailing columns: not rows: $(few_family few_trailing)"
[ "$(few_family few_leading)" = gemm ] || fail "8 leading rows: not a GEMM: $(few_family few_leading)"
[ "$(KBC_GEMM_SMALL=0 mbg_family 20 512 256)" = gemm ] || fail "KBC_GEMM_SMALL=0, 20 rows: not a GEMM"
[ "$(KBC_GEMM_SMALL=0 mbg_family 8 1024 4096)" = rows ] || fail "KBC_GEMM_SMALL=0, 8 rows: not rows"
# KBC_PERSIST=2 (codegen/persist.c): one persistent kernel, its stages in
# order, each with the stages it waits for (transitive ones left out: y
# waits for total alone, which waits for norm, which waits for h), the
# scatter's zero-fill a stage of its own; three blocks of 256 threads a
# multiprocessor (persist_per_sm: 80 registers a thread), so the grid is 396
# and a stage of more blocks (h: 171) keeps them; JSON lists the same stages
ps=(compile "$src/tests/codegen/specs/persist.kb" --target sm_90 --emit plan --specialize --set m=70 --set n=70)
expect 0 "persistent plan" env KBC_PERSIST=2 KBC_GEMM_ALWAYS=1 KBC_GEMM_SPLIT=2 "$kbc" "${ps[@]}" &&
  mentions "persistent plan" ": sm_90, fp32, 32-bit indices, 1 launch" &&
  grep -qE '^  0 +persist_persist +persistent +\[396, 1, 1\] +\[256, 1, 1\]' "$log" &&
  mentions "persistent plan" "stage 0: persist_k0_h (gemm, 171 blocks of 256 threads)" &&
  mentions "persistent plan" "stage 3: kbc_zero (zero, 2 blocks of 256 threads)" &&
  mentions "persistent plan" "stage 4: persist_k3_hist (scatter, 20 blocks of 256 threads; after stage 1, 3)" &&
  mentions "persistent plan" "stage 5: persist_k4_y (gemm, 45 blocks of 256 threads; after stage 2)" &&
  mentions "persistent plan" "(scratch)" || fail "persistent plan: $(cat "$log")"
expect 0 "persistent plan JSON" env KBC_PERSIST=2 KBC_GEMM_ALWAYS=1 KBC_GEMM_SPLIT=2 "$kbc" "${ps[@]}" --json &&
  cp "$log" "$tmp/persist.json" &&
  check_json "persistent plan" "$tmp/persist.json" '
assert names == ["persist_persist"], names
k = d["kernels"][0]
assert k["family"] == "persistent", k
st = k["stages"]
assert [s["name"] for s in st] == ["persist_k0_h", "persist_k1_norm_red", "persist_k2_total", "kbc_zero",
                                   "persist_k3_hist", "persist_k4_y"], st
assert [s["after"] for s in st] == [[], [0], [1], [], [1, 3], [2]], st
assert st[3]["family"] == "zero" and st[0]["blocks"] == 171 and st[0]["threads"] == 256, st
assert k["grid"] == [396, 1, 1], k["grid"]'
# not by default (KBC_PERSIST off until timed)
expect 0 "no persistent kernel by default" "$kbc" "${ps[@]}" &&
  grep -q persistent "$log" && fail "persistent kernel without KBC_PERSIST: $(cat "$log")"
# Independent GEMMs split over K each take a region of the scratch of their
# own (deps.c, cg_kernel.scratch_slot: four regions), so they wait for
# nothing; the fifth shares the latest region and waits for its kernel.
cat >"$tmp/lin5.kb" <<'EOF'
kernel lin5
axis m var
axis k var
axis n var
input x f32[m, k]
input w1 f32[n, k]
input w2 f32[n, k]
input w3 f32[n, k]
input w4 f32[n, k]
input w5 f32[n, k]
output y1 f32[m, n]
output y2 f32[m, n]
output y3 f32[m, n]
output y4 f32[m, n]
output y5 f32[m, n]
y1[i, j] = sum(c: x[i, c] * w1[j, c])
y2[i, j] = sum(c: x[i, c] * w2[j, c])
y3[i, j] = sum(c: x[i, c] * w3[j, c])
y4[i, j] = sum(c: x[i, c] * w4[j, c])
y5[i, j] = sum(c: x[i, c] * w5[j, c])
EOF
expect 0 "split-K GEMMs side by side" "$kbc" compile "$tmp/lin5.kb" --target sm_90a --emit plan --json \
  --set m=32 --set k=8192 --set n=256 && cp "$log" "$tmp/lin5.json" &&
  check_json "split-K GEMMs side by side" "$tmp/lin5.json" '
ks = d["kernels"]
assert [k["family"] for k in ks] == ["gemm"] * 5, ks
assert [k["after"] for k in ks] == [[], [], [], [], [3]], [k["after"] for k in ks]
sc = [b for b in d["buffers"] if b["name"] == "(scratch)"]
assert len(sc) == 1 and sc[0]["bytes"] % (4 * 256) == 0 and sc[0]["bytes"] >= 4 * 4 * 32 * 256, sc'
expect 2 "--json without --emit plan" "$kbc" compile "$mm" --emit ir --json
expect 2 "--emit plan with a bad target" "$kbc" compile "$mm" --emit plan "${set_mm[@]}" --target sm_12
expect 1 "plan of a bad spec" "$kbc" compile "$src/tests/diag/stmt_unknown_name.kb" --emit plan --set n=1 --target sm_90
expect 0 "compile --help mentions plan" "$kbc" compile --help && mentions "compile --help mentions plan" "--emit plan"

if [ "$failed" -ne 0 ]; then
  echo "plan tests: FAIL"
  exit 1
fi
echo "plan tests: PASS"
exit 0
