#!/usr/bin/env bash
# sass.sh KBC SPEC [KBC COMPILE ARGS...] — the SASS of a spec's kernels, for
# reading instruction counts and schedules without a GPU: `kbc compile
# --emit cuda` (target sm_90a unless the arguments name one), nvcc -cubin for
# that architecture, then cuobjdump -sass.  Prints the disassembly, then a
# count of instructions per kernel.  SASS_GREP=REGEX prints only the lines
# matching it (with the counts).
#
# The CUDA toolkit here has nvcc and ptxas but no cuobjdump or nvdisasm;
# the first run fetches NVIDIA's wheels of both (pip download, network
# needed) into $KBC_TOOLS_DIR (default ~/.cache/kbc-tools).  A developer's
# tool: no test or CI step uses it.
#   tools/sass.sh build/release/kbc specs/examples/matmul_bias_gelu.kb \
#     --precision tf32 --specialize --set m=4096 --set k=4096 --set n=4096
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: tools/sass.sh KBC SPEC [KBC COMPILE ARGS...]" >&2; exit 2; }
kbc=$1 spec=$2
shift 2
dir=${KBC_TOOLS_DIR:-$HOME/.cache/kbc-tools}
bin=$dir/nvidia/cu13/bin
if [ ! -x "$bin/cuobjdump" ] || [ ! -x "$bin/nvdisasm" ]; then
  mkdir -p "$dir"
  for w in nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm; do
    python3 -m pip download --quiet --no-deps "$w" -d "$dir/wheels" ||
      { echo "sass.sh: cannot download $w (pip, network)" >&2; exit 1; }
  done
  for f in "$dir"/wheels/*.whl; do python3 -m zipfile -e "$f" "$dir"; done
  chmod +x "$bin"/cuobjdump "$bin"/nvdisasm
fi
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
target=sm_90a
for a in "$@"; do case $a in sm_*) target=$a ;; esac; done
has_target=0
for a in "$@"; do [ "$a" = --target ] && has_target=1; done
tmp=$(mktemp -d /tmp/kbc_sass_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [ $has_target = 1 ]; then "$kbc" compile "$spec" --emit cuda "$@" -o "$tmp/k.cu"
else "$kbc" compile "$spec" --emit cuda --target "$target" "$@" -o "$tmp/k.cu"; fi
"$nvcc" -arch="$target" -cubin -O3 "$tmp/k.cu" -o "$tmp/k.cubin"
PATH=$bin:$PATH "$bin/cuobjdump" -sass "$tmp/k.cubin" >"$tmp/k.sass"
if [ -n "${SASS_GREP:-}" ]; then grep -E "Function :|${SASS_GREP}" "$tmp/k.sass" || true
else grep -vE '^\s+/\* 0x[0-9a-f]+ \*/\s*$' "$tmp/k.sass"; fi
awk '/Function :/ {f = $3} /^ +\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]\*\// {n[f]++} END {for (k in n) printf "%s: %d instructions\n", k, n[k]}' "$tmp/k.sass" | sort
