#!/usr/bin/env bash
# demo.sh — the main job on an embedded default: builds kbc, checks the
# three workload specs, and runs the conv3d -> min -> softmax spec on the CPU
# interpreter on fresh random inputs, compared with PyTorch's own modules.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tools/setup.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release >/dev/null
kbc=build/release/kbc
for s in specs/conv3d_min_softmax.kb specs/cvit.kb specs/sam_hq_attn_relpos_bwd.kb; do
  $kbc check "$s"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 tools/oracle.py gen conv3d_min_softmax --inputs "$tmp/in.safetensors" \
  --expected "$tmp/expected.safetensors" --set batch_size=2 --set in_channels=3 --set d=6 --set h=8 --set w=8
$kbc run specs/conv3d_min_softmax.kb --backend cpu --inputs "$tmp/in.safetensors" --outputs "$tmp/out.safetensors"
/usr/bin/python3 tools/oracle.py compare "$tmp/expected.safetensors" "$tmp/out.safetensors" --tol 1e-5
