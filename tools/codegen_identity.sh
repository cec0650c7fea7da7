#!/usr/bin/env bash
# codegen_identity.sh — the generated CUDA of two kbc binaries compared,
# byte for byte, for every spec at fp32 and tf32 under every code
# generation switch (docs/ARCHITECTURE.md, "Switches").
#
#   tools/codegen_identity.sh BASE_KBC NEW_KBC [SOURCE_DIR]
#
# Before: two built `kbc` binaries (say, main's and a branch's) and the
# source tree holding the specs (default: this script's repository).
# After: every spec of specs/, specs/examples/, tests/codegen/specs/ and
# tests/fuzz/regress/ compiled by both with `--emit cuda --target sm_90`,
# at each precision, under each setting below (the KBC_* switches cleared
# first); their stdout and exit status compared.  Prints the number of
# outputs compared and every difference; exit 0 when all are identical,
# 1 otherwise, 2 on a usage error.  Needs no GPU.
set -u

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 BASE_KBC NEW_KBC [SOURCE_DIR]" >&2
  exit 2
fi
base=$1 new=$2
src=${3:-$(cd "$(dirname "$0")/.." && pwd)}
for b in "$base" "$new"; do
  [ -x "$b" ] || { echo "$0: $b is not an executable" >&2; exit 2; }
done

# The settings: none, each switch on (its documented spelling "1", or a
# value), values that are ignored (out of range, not a number, empty),
# the off spellings, and the combinations the tests use.
settings=(
  ""
  "KBC_IDX32=1" "KBC_IDX32=0"
  "KBC_FP32_MMA=1" "KBC_FP32_MMA=0"
  "KBC_ROWS_PARTS=1" "KBC_ROWS_PARTS=0"
  "KBC_NO_GEMM=1" "KBC_NO_GEMM=0" "KBC_NO_GEMM=yes"
  "KBC_NO_FUSE=1" "KBC_NO_FUSE=0"
  "KBC_ATTN_ALWAYS=1" "KBC_ATTN_ALWAYS=0"
  "KBC_UNROLL=2" "KBC_UNROLL=1" "KBC_UNROLL=64" "KBC_UNROLL=0" "KBC_UNROLL=65" "KBC_UNROLL=abc" "KBC_UNROLL="
  "KBC_MAX_TEAM=32" "KBC_MAX_TEAM=4" "KBC_MAX_TEAM=1" "KBC_MAX_TEAM=0" "KBC_MAX_TEAM=1000"
  "KBC_GEMM_MIN_BLOCKS=2" "KBC_GEMM_MIN_BLOCKS=3" "KBC_GEMM_MIN_BLOCKS=4" "KBC_GEMM_MIN_BLOCKS=1"
  "KBC_GEMM_MIN_BLOCKS=9"
  "KBC_GEMM_VEC=0" "KBC_GEMM_VEC=1" "KBC_GEMM_VEC=0 KBC_GEMM_STAGES=3" "KBC_ROWS_COST=0"
  "KBC_IDX32=1 KBC_ROWS_PARTS=1" "KBC_IDX32=1 KBC_FP32_MMA=1" "KBC_IDX32=1 KBC_GEMM_MIN_BLOCKS=2"
  "KBC_NO_GEMM=1 KBC_MAX_TEAM=32"
  "KBC_GEMM_EDGE=0" "KBC_GEMM_WIN_BSPLIT=1" "KBC_GEMM_WIN_BSPLIT=1 KBC_GEMM_WIN_ASPLIT=1" "KBC_GEMM_LOW_STAGE=1"
  "KBC_GEMM_STAGE_N=1" "KBC_GEMM_STAGE_N=2"
)
clear=(-u KBC_IDX32 -u KBC_FP32_MMA -u KBC_ROWS_PARTS -u KBC_NO_GEMM -u KBC_NO_FUSE -u KBC_UNROLL
       -u KBC_MAX_TEAM -u KBC_GEMM_MIN_BLOCKS -u KBC_ATTN_ALWAYS -u KBC_GEMM_VEC -u KBC_GEMM_STAGES -u KBC_ROWS_COST
       -u KBC_STREAM_SPLIT -u KBC_GEMM_EDGE -u KBC_GEMM_WIN_BSPLIT -u KBC_GEMM_WIN_ASPLIT -u KBC_GEMM_LOW_STAGE
       -u KBC_GEMM_STAGE_N -u KBC_GEMM_TAIL -u KBC_GEMM_SPLIT)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
compared=0 differ=0 failed=0
for spec in "$src"/specs/*.kb "$src"/specs/examples/*.kb "$src"/tests/codegen/specs/*.kb \
            "$src"/tests/fuzz/regress/*.kb; do
  for prec in fp32 tf32; do
    for set in "${settings[@]}"; do
      read -r -a vars <<<"$set"
      env "${clear[@]}" "${vars[@]}" "$base" compile "$spec" --emit cuda --target sm_90 --precision "$prec" \
        >"$tmp/base" 2>/dev/null
      rb=$?
      env "${clear[@]}" "${vars[@]}" "$new" compile "$spec" --emit cuda --target sm_90 --precision "$prec" \
        >"$tmp/new" 2>/dev/null
      rn=$?
      compared=$((compared + 1))
      [ "$rb" -ne 0 ] && failed=$((failed + 1))
      if [ "$rb" -ne "$rn" ] || ! cmp -s "$tmp/base" "$tmp/new"; then
        differ=$((differ + 1))
        echo "DIFFERENT: ${spec#"$src"/} --precision $prec [${set:-no switch}] (exit $rb vs $rn)"
      fi
    done
  done
done
echo "$compared outputs compared ($((compared / ${#settings[@]} / 2)) specs x 2 precisions x ${#settings[@]} settings), $differ different"
echo "($failed of them a failure of the base binary too: the same exit status and output compared)"
[ "$differ" -eq 0 ]
