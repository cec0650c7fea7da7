#!/usr/bin/env bash
# nvrtc_compile.sh KBC SPEC TARGET [--no-spills] — the spec's generated CUDA
# compiles through NVRTC for TARGET (no GPU needed); prints the registers,
# spills, stack and shared memory of every kernel, and with --no-spills
# fails when any kernel spills.  Exit 77 (skip) when NVRTC is absent.
set -u
kbc=$1 spec=$2 target=$3 nospill=${4:-}
out=$("$kbc" compile "$spec" --emit resources --target "$target" 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
  case "$out" in *NVRTC*could*not*|*libnvrtc*) echo "SKIP: $out"; exit 77 ;; esac
  echo "$out"
  exit 1
fi
echo "$out"
if [ -n "$nospill" ] && echo "$out" | grep -Eq ' [1-9][0-9]* bytes spill (stores|loads)'; then
  echo "FAIL: a kernel spills registers at $target"
  exit 1
fi
exit 0
