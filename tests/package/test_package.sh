#!/usr/bin/env bash
# test_package.sh BUILD_DIR SOURCE_DIR — kbc as an installed package, used
# the two ways an outside project would:
#   1. `cmake --install` of the build into a temporary prefix;
#   2. examples/ configured and built as a project of its own with
#      find_package(kbc) (kbc::kbc; embed_gpu against CUDA::cuda_driver,
#      the toolkit's stub where there is no driver), and embed run;
#   3. examples/embed.c and embed_gpu.c compiled with `pkg-config --cflags
#      --libs kbc` alone, and embed run;
#   4. the python module installed under PREFIX/share/kbc/python imported
#      from there, finding PREFIX's library, running a spec (torch needed);
#   5. embed_gpu run where a CUDA driver is installed (else said skipped).
# Exit status: 0 pass, 1 fail.
set -u
build=$1 src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kbc_package.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cuda=${CUDA_HOME:-/usr/local/cuda}

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
for f in include/kbc.h lib/cmake/kbc/kbcConfig.cmake lib/cmake/kbc/kbcConfigVersion.cmake \
         lib/cmake/kbc/kbcTargets.cmake lib/pkgconfig/kbc.pc bin/kbc; do
  [ -e "$tmp/prefix/$f" ] || fail "not installed: $f"
done
libdir=$(ls -d "$tmp/prefix"/lib*/ | head -n 1)

# find_package(kbc)
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
cmake -S "$src/examples" -B "$tmp/ex" "${gen[@]}" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCUDAToolkit_ROOT="$cuda" >"$tmp/cfg.log" 2>&1 || { cat "$tmp/cfg.log"; fail "find_package(kbc): configure"; }
cmake --build "$tmp/ex" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "find_package(kbc): build"; }
"$tmp/ex/embed" >"$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; fail "find_package(kbc): embed did not run"; }
grep -q "sum to 1" "$tmp/run.log" || { cat "$tmp/run.log"; fail "embed printed no result"; }
echo "ok: find_package(kbc) builds the examples and embed runs"

# a version it is not
mkdir -p "$tmp/v"
printf 'cmake_minimum_required(VERSION 3.20)\nproject(v C)\nfind_package(kbc 9.0 REQUIRED)\n' >"$tmp/v/CMakeLists.txt"
if cmake -S "$tmp/v" -B "$tmp/vb" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null 2>&1; then
  fail "find_package(kbc 9.0) accepted version $(grep -o 'PACKAGE_VERSION "[^"]*"' "$tmp/prefix"/lib*/cmake/kbc/kbcConfigVersion.cmake)"
fi
echo "ok: find_package(kbc 9.0) is refused"

# pkg-config
export PKG_CONFIG_PATH="$libdir/pkgconfig"
flags=$(pkg-config --cflags --libs kbc) || fail "pkg-config kbc"
cc -std=c11 -o "$tmp/embed_pc" "$src/examples/embed.c" $flags -Wl,-rpath,"$libdir" -lm || fail "pkg-config: embed.c"
"$tmp/embed_pc" >/dev/null || fail "pkg-config: embed did not run"
cc -std=c11 -I"$cuda/include" -o "$tmp/embed_gpu_pc" "$src/examples/embed_gpu.c" $flags -Wl,-rpath,"$libdir" \
   -L"$cuda/lib64/stubs" -lcuda -lm || fail "pkg-config: embed_gpu.c"
echo "ok: pkg-config builds embed and embed_gpu"

# the python module as installed (PREFIX/share/kbc/python): finds the
# prefix's libkbc.so by itself, runs a spec on CPU tensors
py=${KBC_PYTHON:-/usr/bin/python3} # (the GPU machine: its python3 with torch, bench/device_run.sh)
if [ -x $py ] && $py -c 'import torch' >/dev/null 2>&1; then
  (cd "$tmp" && env -u KBC_LIB PYTHONPATH="$tmp/prefix/share/kbc/python" $py -c '
import sys, torch, kbc
assert kbc.library_path().startswith(sys.argv[1]), kbc.library_path()
p = kbc.compile("kernel twice\naxis n var\ninput x f32[n]\noutput y f32[n]\ny[i] = 2.0 * x[i]\n")
assert torch.equal(p.run({"x": torch.arange(5.0)})["y"], torch.arange(5.0) * 2)
print("ok: the installed python module runs a spec with", kbc.library_path())' "$tmp/prefix") ||
    fail "the installed python module"
else
  echo "skipped: the installed python module (no torch for $py)"
fi

# the GPU example, where there is a driver
if [ -x "$tmp/ex/embed_gpu" ] && ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  "$tmp/ex/embed_gpu"
  rc=$?
  case $rc in
    0) echo "ok: embed_gpu matches the CPU" ;;
    77) echo "skipped: embed_gpu (no CUDA device)" ;;
    *) fail "embed_gpu exited $rc" ;;
  esac
else
  echo "skipped: embed_gpu (no CUDA driver)"
fi
exit 0
