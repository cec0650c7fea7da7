#!/usr/bin/env bash
# verify.sh KBC SRCDIR — `kbc verify` on the GPU: example specs and the
# conv3d workload match the CPU interpreter in fp32 and tf32 (exit 0, every
# output ok, the --json object valid), at ordinary shapes, at sizes of 1,
# with rank-0 inputs and outputs, with a scatter and an all-zero output;
# and the launches that run (KBC_DEBUG=2) are those `kbc compile --emit
# plan --json` lists for the same binding (names, grids, blocks, shared
# memory).  Exit 0 pass, 1 fail, 77 without a GPU.
set -u
kbc=$1
src=$2
py=${KBC_PYTHON:-python3}
if ! "$kbc" info 2>/dev/null | grep -q "device 0"; then
  echo "SKIP: no GPU"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kbc_verify.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

# ok DESC SPEC ARGS...: kbc verify exits 0, and its --json says every output
# is ok (with BOUND set: and within it, below the precision's tolerance).
ok() {
  local desc=$1
  shift
  if ! "$kbc" verify "$@" >"$tmp/text" 2>&1; then
    echo "FAIL: $desc: kbc verify $*"
    sed 's/^/    /' "$tmp/text"
    failed=1
    return
  fi
  if ! "$kbc" verify "$@" --json >"$tmp/json" 2>"$tmp/err" ||
    ! "$py" - "$tmp/json" "${BOUND:-}" >"$tmp/pylog" 2>&1 <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
bound = float(sys.argv[2]) if sys.argv[2] else d["tolerance"]
for key in ("spec", "kernel", "device", "precision", "seed", "tolerance", "axes", "outputs", "ok"):
    assert key in d, key
assert d["ok"] is True and d["outputs"], d
for o in d["outputs"]:
    assert o["ok"] is True and o["rel_l2"] <= min(d["tolerance"], bound), o
    assert o["nonfinite_mismatches"] == 0 and o["unwritten"] == 0, o
EOF
    echo "FAIL: $desc: kbc verify $* --json"
    sed 's/^/    /' "$tmp/json" "$tmp/err" "$tmp/pylog"
    failed=1
    return
  fi
  echo "ok: $desc: $(tail -1 "$tmp/text")"
}

ex=$src/specs/examples
for prec in fp32 tf32; do
  ok "matmul_bias_gelu $prec" "$ex/matmul_bias_gelu.kb" --set m=64 --set k=32 --set n=48 --precision $prec
  ok "matmul_bias_gelu $prec, large" "$ex/matmul_bias_gelu.kb" --set m=512 --set k=768 --set n=384 --precision $prec
  ok "softmax_middle $prec" "$ex/softmax_middle.kb" --set a=3 --set b=5 --set c=4 --precision $prec
  ok "layernorm $prec" "$ex/layernorm.kb" --set rows=33 --set cols=257 --precision $prec
  ok "batched_matmul $prec" "$ex/batched_matmul.kb" --set batch=3 --set m=70 --set k=40 --set n=90 --precision $prec
  ok "relpos_scatter $prec" "$ex/relpos_scatter.kb" --set n=9 --set d=5 --precision $prec
  ok "conv3d_min_softmax $prec" "$src/specs/conv3d_min_softmax.kb" --set batch_size=2 --set in_channels=3 \
    --set d=6 --set h=8 --set w=8 --precision $prec
done
ok "softmax_middle at 1x1x1" "$ex/softmax_middle.kb" --set a=1 --set b=1 --set c=1
ok "matmul_bias_gelu at 1x1x1" "$ex/matmul_bias_gelu.kb" --set m=1 --set k=1 --set n=1
ok "matmul_bias_gelu, seed 12345" "$ex/matmul_bias_gelu.kb" --set m=17 --set k=300 --set n=5 --seed 12345

# long rows of few outputs cut in parts (hoist.c row_parts, specialized by
# default): 3 rows of 2^22 (1,024 parts), one row, a prime extent whole
rp=$src/tests/codegen/specs/rowparts.kb
ok "rowparts 3 x 2^22" "$rp" --set n=3 --set m=4194304
ok "rowparts 1 x 2^20" "$rp" --set n=1 --set m=1048576
ok "rowparts at a prime extent" "$rp" --set n=2 --set m=131101
ok "layernorm over 2 rows of 2^22, mean and variance in parts" "$ex/layernorm.kb" --set rows=2 --set cols=4194304
# a GEMM tail whose row sum reads a vector along the row (KBC_GEMM_TAIL=2)
KBC_GEMM_TAIL=2 ok "gemm_tail_vec" "$src/tests/codegen/specs/gemm_tail_vec.kb" --set m=300

# TF32 as accurate on wgmma as on mma.sync: the tensor cores truncate fp32
# operands, so the stages are rounded to nearest first (gemm_wgmma.c);
# on inputs in [0, 1) a K = 2048 product's error is then about 3e-5, where
# truncation gave 6e-4 (SAM-HQ's tf32 backward: 5.0e-3 against 9.6e-4)
for wg in 0 2; do
  BOUND=1.5e-4 KBC_GEMM_WGMMA=$wg KBC_GEMM_WGMMA_T=1 ok "tf32 a b^T, K 2048, KBC_GEMM_WGMMA=$wg, within 1.5e-4" \
    "$src/tests/codegen/specs/gemm_kk.kb" --set z=1 --set m=512 --set n=512 --set k=2048 --precision tf32 --inputs 0:1
  BOUND=1.5e-4 KBC_GEMM_WGMMA=$wg KBC_GEMM_WGMMA_T=1 ok "tf32 a w and a^T w, K 2048, KBC_GEMM_WGMMA=$wg, within 1.5e-4" \
    "$src/tests/codegen/specs/gemm_kn.kb" --set m=512 --set k=2048 --set n=512 --precision tf32 --inputs 0:1
done
# a NaN the GPU makes (0x7fffffff, mantissa all ones) through the stages'
# rounding and through the copies: adding 0x1000 to its bits, as the pass
# did until session 31, made it -0 (rows of finite values where NaN belongs)
printf 'kernel nanmm\naxis m var\naxis k var\naxis n var\ninput x f32[m, k]\ninput w f32[n, k]\noutput t f32[m, k]\noutput out f32[m, n]\nt[i, r] = where(x[i, r] > 0.99, sqrt(0.0 - x[i, r]), x[i, r])\nout[i, j] = sum(r: t[i, r] * w[j, r])\n' >"$tmp/nanmm.kb"
for prep in 0 2; do
  KBC_GEMM_WGMMA=2 KBC_GEMM_PREP=$prep ok "tf32 wgmma, NaN operands stay NaN, KBC_GEMM_PREP=$prep" "$tmp/nanmm.kb" \
    --set m=256 --set k=96 --set n=256 --precision tf32
done
# the same with the operands rounded once before the launch, into copies the
# loop reads (KBC_GEMM_PREP=2; kbc_tf32_copy): k-major, transposed, and a
# split-K product whose parts follow the copies in the scratch
BOUND=1.5e-4 KBC_GEMM_PREP=2 KBC_GEMM_WGMMA=2 KBC_GEMM_WGMMA_T=1 ok "tf32 a b^T, K 2048, copies rounded first" \
  "$src/tests/codegen/specs/gemm_kk.kb" --set z=1 --set m=512 --set n=512 --set k=2048 --precision tf32 --inputs 0:1
BOUND=1.5e-4 KBC_GEMM_PREP=2 KBC_GEMM_WGMMA=2 KBC_GEMM_WGMMA_T=1 ok "tf32 a w and a^T w, K 2048, copies rounded first" \
  "$src/tests/codegen/specs/gemm_kn.kb" --set m=512 --set k=2048 --set n=512 --precision tf32 --inputs 0:1
KBC_GEMM_PREP=2 KBC_GEMM_WGMMA=2 KBC_GEMM_SPLIT=2 ok "tf32 split-K, copies rounded first" \
  "$src/tests/codegen/specs/splitk.kb" --set m=70 --set n=200 --precision tf32
# operands contiguous along their free indices packed k-major before the
# launch by the kernel's own pack kernel (KBC_GEMM_PACK=2, gemm_pack.c):
# tf32 (rounded in the pack) within the same bound, fp32 (3xTF32), a
# k-major operand off 16-byte alignment (K = 1001), batched and shared-by-
# the-batch operands and two K indices (gemm_pack.kb), a split-K product
BOUND=1.5e-4 KBC_GEMM_PACK=2 KBC_GEMM_WGMMA=2 ok "tf32 a w and a^T w, K 2048, packed" \
  "$src/tests/codegen/specs/gemm_kn.kb" --set m=512 --set k=2048 --set n=512 --precision tf32 --inputs 0:1
KBC_GEMM_PACK=2 KBC_GEMM_WGMMA=2 ok "fp32 a w and a^T w, packed" "$src/tests/codegen/specs/gemm_kn.kb" \
  --set m=300 --set k=1000 --set n=260
KBC_GEMM_WGMMA=2 ok "fp32 a b^T at K 1001, misaligned k-major operands packed" "$src/tests/codegen/specs/gemm_kk.kb" \
  --set z=2 --set m=300 --set n=260 --set k=1001
for prec in fp32 tf32; do
  KBC_GEMM_PACK=2 KBC_GEMM_WGMMA=2 ok "gemm_pack $prec" "$src/tests/codegen/specs/gemm_pack.kb" --set b=3 --set m=200 \
    --set k=300 --set n=130 --precision $prec
done
KBC_GEMM_PACK=2 KBC_GEMM_WGMMA=2 KBC_GEMM_SPLIT=2 ok "fp32 split-K, packed" "$src/tests/codegen/specs/gemm_kn.kb" \
  --set m=64 --set k=4000 --set n=72

# the persistent kernel (KBC_PERSIST=2): CViT's chain; SAM-HQ 32x32, whose
# stages' static shared memory with the dynamic exceeds a block, so the
# runtime falls back to the kernels one by one (inputs narrowed: at [-1, 1)
# its scores reach the hundreds, where fp32 itself misses 1e-5)
KBC_PERSIST=2 ok "persistent CViT b2" "$src/specs/cvit.kb" --set batch_size=2 --set in_channels=3 --set image_size=32
KBC_PERSIST=2 ok "persistent SAM-HQ 32x32 b1, too big: the kernels one by one" "$src/specs/sam_hq_attn_relpos_bwd.kb" \
  --set batch_size=1 --set height=32 --set width=32 --inputs -0.1:0.1

# programmatic dependent launch (KBC_PDL): each kernel launched while the one
# before runs, waiting for it with griddepcontrol.wait: a chain of 46
# kernels (CViT), a scatter's zero-fill (launched plainly) between two
# (relpos_scatter), split-K (the MLP at batch 8)
KBC_PDL=1 ok "programmatic launch, CViT b2" "$src/specs/cvit.kb" --set batch_size=2 --set in_channels=3 --set image_size=32
KBC_PDL=1 ok "programmatic launch, relpos_scatter" "$ex/relpos_scatter.kb" --set n=9 --set d=5
KBC_PDL=1 ok "programmatic launch, mlp_relu b8" "$ex/mlp_relu.kb" --set batch=8 --set d_in=1024 --set d_hidden=4096 --set d_out=1024

# rank-0 input and output, a scatter, an output that is all zeros, a var
# axis no input shape determines, NaN through max, min and relu (as PyTorch:
# the GPU's max.NaN, where fmaxf would drop it)
cat >"$tmp/odd.kb" <<'EOF'
kernel odd
axis h var
axis n = 2 * h
axis extra var
input  x     f32[n]
input  alpha f32
output s     f32
output y     f32[h]
output zero  f32[h, extra]
output sq    f32[n]
output mx    f32[h]
output rl    f32[n]
y[i / 2] += alpha * x[i]
s = alpha * 2
zero[i, j] = 0 * x[2 * i]
sq[i] = sqrt(x[i])
mx[i] = max(j < 2: sqrt(x[2 * i + j]))
rl[i] = relu(sqrt(x[i])) + min(sqrt(x[i]), x[0])
EOF
ok "rank-0, scatter, zeros, NaN from sqrt through max, min and relu" "$tmp/odd.kb" --set h=1000 --set extra=3
ok "the same at 1" "$tmp/odd.kb" --set h=1 --set extra=1

# --batch: a JSON line per line of arguments, in order, each as the single
# command's (ok, mismatch by precision, a missing spec, a usage error);
# comments and empty lines skipped; exit status the worst (2 here).
{
  echo "$ex/layernorm.kb --set rows=33 --set cols=257"
  echo "# a comment, then an empty line"
  echo
  echo "$tmp/odd.kb --set h=7 --set extra=2 --precision tf32 --seed 3"
  echo "$tmp/missing.kb --set h=1"
  echo "$ex/layernorm.kb --set rows=2 --set cols=3 --precision fp16"
  echo "$ex/softmax_middle.kb --set a=1 --set b=1 --set c=1"
} | "$kbc" verify --batch >"$tmp/batch.json" 2>"$tmp/batch.err"
code=$?
if [ $code -ne 2 ] || ! "$py" - "$tmp/batch.json" >"$tmp/pylog" 2>&1 <<'EOF'; then
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 5, rows
assert rows[0]["ok"] is True and rows[0]["spec"].endswith("layernorm.kb") and rows[0]["outputs"], rows[0]
assert rows[1]["ok"] is True and rows[1]["precision"] == "tf32" and rows[1]["seed"] == 3, rows[1]
assert rows[2] == {"spec": rows[2]["spec"], "ok": False, "exit": 1} and "missing" in rows[2]["spec"], rows[2]
assert rows[3]["ok"] is False and rows[3]["exit"] == 2, rows[3]
assert rows[4]["ok"] is True and rows[4]["axes"] == {"a": 1, "b": 1, "c": 1}, rows[4]
EOF
  echo "FAIL: kbc verify --batch (exit $code)"
  sed 's/^/    /' "$tmp/batch.json" "$tmp/batch.err" "$tmp/pylog"
  failed=1
else
  echo "ok: kbc verify --batch: 5 lines, 5 results"
fi

# bench --batch: the same protocol for timings (the no-cliff check's way
# of timing many specs in one context): a --json object per line that ran.
{
  echo "$ex/layernorm.kb --set rows=33 --set cols=257 --iters 5"
  echo "$tmp/missing.kb --set h=1"
  echo "$tmp/odd.kb --set h=7 --set extra=2 --precision tf32 --iters 3 --repeat 4"
} | "$kbc" bench --batch >"$tmp/bench.json" 2>"$tmp/bench.err"
code=$?
if [ $code -ne 1 ] || ! "$py" - "$tmp/bench.json" >"$tmp/pylog" 2>&1 <<'EOF'; then
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 3, rows
assert rows[0]["iters"] == 5 and rows[0]["median_us"] > 0 and rows[0]["kernels"] >= 1, rows[0]
assert rows[1] == {"spec": rows[1]["spec"], "ok": False, "exit": 1} and "missing" in rows[1]["spec"], rows[1]
assert rows[0]["repeat"] == 1 and rows[2]["repeat"] == 4, rows
assert rows[2]["precision"] == "tf32" and rows[2]["iters"] == 3 and rows[2]["median_us"] > 0, rows[2]
EOF
  echo "FAIL: kbc bench --batch (exit $code)"
  sed 's/^/    /' "$tmp/bench.json" "$tmp/bench.err" "$tmp/pylog"
  failed=1
else
  echo "ok: kbc bench --batch: 3 lines, 3 results"
fi

# A program of one kernel replays a CUDA graph once its arguments repeat, as
# programs of several do (runtime/exec.c); KBC_NO_GRAPH=1: never.
cat >"$tmp/one.kb" <<'EOF'
kernel one
axis n var
input  x f32[n]
output y f32[n]
y[i] = 2.0 * x[i]
EOF
KBC_DEBUG=1 "$kbc" bench "$tmp/one.kb" --set n=1000 --iters 5 >/dev/null 2>"$tmp/graph1"
KBC_DEBUG=1 KBC_NO_GRAPH=1 "$kbc" bench "$tmp/one.kb" --set n=1000 --iters 5 >/dev/null 2>"$tmp/graph0"
if grep -q "captured 1 kernels of one into a CUDA graph" "$tmp/graph1" && ! grep -q "captured" "$tmp/graph0"; then
  echo "ok: one kernel replayed as a CUDA graph (none under KBC_NO_GRAPH=1)"
else
  echo "FAIL: one-kernel program and CUDA graphs"
  sed 's/^/    /' "$tmp/graph1" "$tmp/graph0"
  failed=1
fi

# The launches that run are the plan's.
plan_matches() {
  local desc=$1 spec=$2
  shift 2
  "$kbc" compile "$spec" --emit plan --json "$@" >"$tmp/plan.json" 2>"$tmp/err" &&
    KBC_DEBUG=2 "$kbc" verify "$spec" "$@" >/dev/null 2>"$tmp/debug"
  if ! "$py" - "$tmp/plan.json" "$tmp/debug" >"$tmp/pylog" 2>&1 <<'EOF'; then
import json, re, sys
plan = [k for k in json.load(open(sys.argv[1]))["kernels"] if k["family"] != "zero" and k["grid"][0] > 0]
ran = [m.groups() for m in re.finditer(r"launch (\S+): grid (\d+), block (\d+), smem (\d+)", open(sys.argv[2]).read())]
want = [(k["name"], str(k["grid"][0]), str(k["block"][0])) for k in plan]
# kbc verify launches the program more than once (plain, captured, replayed):
# each time the plan's launches, in its order.
assert want and len(ran) % len(want) == 0, (ran, want)
assert [r[:3] for r in ran] == want * (len(ran) // len(want)), (ran, want)
for k, r in zip(plan * (len(ran) // len(want)), ran):
    assert int(r[3]) <= k["smem_bytes"], (k, r)  # dynamic, within dynamic + static
EOF
    echo "FAIL: $desc: the launches are not the plan's"
    sed 's/^/    /' "$tmp/pylog" "$tmp/err"
    failed=1
  else
    echo "ok: $desc: the launches are the plan's"
  fi
}
plan_matches "conv3d_min_softmax" "$src/specs/conv3d_min_softmax.kb" --set batch_size=2 --set in_channels=3 \
  --set d=6 --set h=8 --set w=8
plan_matches "matmul_bias_gelu" "$ex/matmul_bias_gelu.kb" --set m=64 --set k=32 --set n=48
plan_matches "odd" "$tmp/odd.kb" --set h=1000 --set extra=3
KBC_GEMM_PREP=2 KBC_GEMM_WGMMA=2 plan_matches "matmul_bias_gelu tf32, its operands' copies" "$ex/matmul_bias_gelu.kb" \
  --set m=1000 --set k=700 --set n=600 --precision tf32

[ "$failed" -eq 0 ] && echo "PASS: kbc verify" || echo "FAIL: kbc verify"
exit $failed
