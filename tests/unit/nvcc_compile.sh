#!/usr/bin/env bash
# nvcc_compile.sh KBC SPEC [PRECISION] — the spec's generated CUDA C (kbc
# compile --emit cuda, target sm_90, precision fp32 or tf32) compiles with
# nvcc for sm_80 and sm_90 with no errors (KBC_NVCC_TARGET=sm_90a: the text
# for sm_90a, compiled for sm_90a alone), and no GEMM or attention kernel
# (a kernel whose comment says "schedule: gemm" or "schedule: attention")
# spills registers or uses a stack frame (of a persistent kernel: the kernel, its stages with it),
# and ptxas serializes no wgmma.  Prints registers / shared
# memory / spills of every such kernel.
# KBC_NVCC_ARGS: more arguments for kbc compile (`--specialize --set AXIS=N ...`: the text for one binding).
# Exit 77 (skip) when nvcc is absent (NVCC, CUDACXX, PATH, /usr/local/cuda).
set -u
kbc=$1 spec=$2 prec=${3:-fp32}
nvcc=${NVCC:-${CUDACXX:-$(command -v nvcc || true)}}
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  echo "SKIP: nvcc not found"
  exit 77
fi
tmp=$(mktemp -d /tmp/kbc_nvcc_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
name=$(basename "$spec" .kb)
cu=$tmp/$name.cu
target=${KBC_NVCC_TARGET:-sm_90}
archs="sm_80 sm_90"
[ "$target" = sm_90a ] && archs=sm_90a
# shellcheck disable=SC2086
if ! "$kbc" compile "$spec" --emit cuda --target "$target" --precision "$prec" ${KBC_NVCC_ARGS:-} -o "$cu"; then
  echo "FAIL: kbc compile $spec"
  exit 1
fi
# GEMM and attention kernels: the name line after their "// schedule:" comment
gemms=$(awk '/^\/\/ schedule: /{g = ($3 == "gemm" || $3 == "attention")} g && /^[A-Za-z_][A-Za-z0-9_]*\(/{sub(/\(.*/, ""); print; g = 0}' "$cu")
# a persistent kernel (codegen/persist.c, cluster.c): its stages are device functions; the kernel itself is checked
if grep -Eq "^// The [0-9]* stages above as one (persistent kernel|kernel of thread-block clusters)" "$cu"; then
  gemms=$(awk '/^\/\/ The [0-9]* stages above as one (persistent kernel|kernel of thread-block clusters)/{g = 1} g && /^[A-Za-z_][A-Za-z0-9_]*\(/{sub(/\(.*/, ""); print; g = 0}' "$cu")
fi
status=0
for arch in $archs; do
  log=$tmp/$name.$arch.log
  if ! "$nvcc" -cubin -arch=$arch -Xptxas -v -o "$tmp/$name.$arch.cubin" "$cu" > "$log" 2>&1; then
    echo "FAIL: nvcc -arch=$arch $spec ($prec)"
    grep -m 20 -i error "$log"
    status=1
    continue
  fi
  # ptxas serializing wgmma (C7514: something touched the accumulators of a batch in flight)
  if grep -q C7514 "$log"; then
    echo "FAIL: ptxas serialized wgmma at $arch:"
    grep -m 5 C7514 "$log"
    status=1
  fi
  for k in $gemms; do
    info=$(awk -v k="$k" 'index($0, "Compiling entry function '"'"'" k "'"'"'") {f = 1; next}
                          f && /Compiling entry function/ {exit}
                          f {print}' "$log" | tr '\n' ' ')
    regs=$(echo "$info" | grep -o 'Used [0-9]* registers' | grep -o '[0-9]*')
    smem=$(echo "$info" | grep -o '[0-9]* bytes smem' | grep -o '^[0-9]*')
    stack=$(echo "$info" | grep -o '[0-9]* bytes stack frame' | awk '{s += $1; n++} END {if (n) print s}')
    spills=$(echo "$info" | grep -o '[0-9]* bytes spill [a-z]*' | awk '{s += $1; n++} END {if (n) print s}')
    echo "$arch $prec $k: ${regs:-?} registers, ${smem:-0} B shared, stack ${stack:-?} B, spills ${spills:-?} B"
    if [ -z "$regs" ] || [ "$regs" -gt 255 ] || [ "${spills:-1}" != 0 ] || [ "${stack:-1}" != 0 ]; then
      echo "FAIL: $k spills, uses a stack frame or was not found at $arch"
      status=1
    fi
  done
done
exit $status
