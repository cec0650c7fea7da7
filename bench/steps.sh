# bench/steps.sh — sourced by the device-call scripts (bench/device_*.sh):
# $OUT (default /tmp/out), $LIMIT seconds for the whole call (the caller's
# default), KBC_LIB for the python scripts, and `step SECONDS COMMAND...`,
# which runs COMMAND under that timeout only while that much of $LIMIT is
# left (most important steps first), saying so where it skips one.
OUT=${OUT:-/tmp/out}
export KBC_LIB=$PWD/build/gpu/libkbc.so
left() { echo $((LIMIT - SECONDS)); }
step() { # SECONDS_AT_MOST COMMAND...: runs it if that much time is left
  local t=$1; shift
  [ "$(left)" -ge "$t" ] || { echo "(skipped, $(left) s left: $*)"; return; }
  echo "== $* ($SECONDS s)"
  timeout "$t" "$@"
}
