#!/usr/bin/env bash
# demo.sh — the main job: builds kbc, checks the three workload specs, then
#   - where kbc sees a GPU and a python has CUDA torch: compiles the three
#     workloads for it, runs them at their benchmark shapes beside PyTorch
#     eager, checks every output against float64 and prints one table
#     (tools/demo_gpu.py);
#   - where kbc sees a GPU but no python has CUDA torch: kbc verify (the GPU
#     against the CPU interpreter at reduced shapes) and kbc bench at the
#     benchmark shapes;
#   - without a GPU: says why in one line, and runs the conv3d -> min ->
#     softmax spec on the CPU interpreter on fresh random inputs, compared
#     with PyTorch's own nn.Conv3d / torch.min / torch.softmax.
# KBC_BUILD=DIR uses a build made elsewhere (the GPU machine has no flex or
# bison: tools/gpu_build.sh's build/gpu, carried) instead of building.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -n "${KBC_BUILD:-}" ]; then
  build=$KBC_BUILD
  [ -x "$build/kbc" ] || { echo "demo: KBC_BUILD=$build has no kbc" >&2; exit 1; }
else
  tools/setup.sh
  build=build/release
  cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build $build >/dev/null
fi
kbc=$build/kbc
for s in specs/conv3d_min_softmax.kb specs/cvit.kb specs/sam_hq_attn_relpos_bwd.kb; do
  $kbc check "$s"
done

# A GPU? kbc's own answer (driver, device), and the reason when not:
# "NAME<US>WHY" from one `kbc info --json` (US, a separator that keeps an
# empty NAME a field of its own).
IFS=$'\x1f' read -r gpu why < <($kbc info --json | python3 -c 'import json, sys
d = json.load(sys.stdin)
name = d["devices"][0]["name"] if d.get("devices") else ""
print(name + "\x1f" + (d.get("driver_error") or d.get("devices_error") or "no CUDA device"))' 2>/dev/null ||
  printf '\x1fkbc info failed\n')
if [ -n "$gpu" ]; then
  py=""
  for p in python3 /usr/bin/python3; do
    if command -v $p >/dev/null && $p -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
      py=$p
      break
    fi
  done
  if [ -n "$py" ]; then
    echo "demo: GPU $gpu: the three workloads at their benchmark shapes against PyTorch eager"
    exec $py tools/demo_gpu.py "$build"
  fi
  echo "demo: GPU $gpu, but no python with CUDA torch: kbc verify (GPU against the CPU interpreter) and kbc bench"
  set -x
  $kbc verify specs/conv3d_min_softmax.kb --set batch_size=2 --set in_channels=3 --set d=6 --set h=8 --set w=8
  $kbc verify specs/cvit.kb --set batch_size=2 --set in_channels=3 --set image_size=32
  $kbc verify specs/sam_hq_attn_relpos_bwd.kb --set batch_size=1 --set height=7 --set width=7
  $kbc bench specs/conv3d_min_softmax.kb --set batch_size=128 --set in_channels=3 --set d=24 --set h=32 --set w=32
  $kbc bench specs/cvit.kb --set batch_size=10 --set in_channels=3 --set image_size=32
  $kbc bench specs/sam_hq_attn_relpos_bwd.kb --set batch_size=4 --set height=64 --set width=64
  exit 0
fi
echo "demo: no GPU ($why): conv3d -> min -> softmax on the CPU interpreter against PyTorch"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 tools/oracle.py gen conv3d_min_softmax --inputs "$tmp/in.safetensors" \
  --expected "$tmp/expected.safetensors" --set batch_size=2 --set in_channels=3 --set d=6 --set h=8 --set w=8
$kbc run specs/conv3d_min_softmax.kb --backend cpu --inputs "$tmp/in.safetensors" --outputs "$tmp/out.safetensors"
/usr/bin/python3 tools/oracle.py compare "$tmp/expected.safetensors" "$tmp/out.safetensors" --tol 1e-5
