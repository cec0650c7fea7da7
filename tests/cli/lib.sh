# lib.sh — the helpers the command-line tests share (sourced by test_cli.sh
# and test_plan.sh).  Before sourcing: $tmp, a scratch directory, and $log,
# the file a command's output goes to.  After: `failed` is 0; fail,
# expect and mentions below; sanitizers exit with statuses of their own
# (86, 87), never mistaken for kbc's 1 or 2.

failed=0
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}exitcode=86"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}exitcode=87:print_stacktrace=1"

# fail MESSAGE: reports a failure with the last command's output.
fail() {
  echo "FAIL: $*"
  if [ -s "$log" ]; then
    echo "---- output"
    sed 's/^/    /' "$log"
    echo "----"
  fi
  failed=1
}

# expect RC DESC CMD...: runs CMD (its standard output, then its standard
# error, in $log); 0 unless it exits other than RC or reports a sanitizer
# error or an internal error.
expect() {
  local want=$1 desc=$2
  shift 2
  "$@" >"$log" 2>"$tmp/expect.err"
  local rc=$?
  cat "$tmp/expect.err" >>"$log"
  if grep -Eq 'Sanitizer|runtime error:|internal error' "$log"; then
    fail "$desc: sanitizer report or internal error (exit $rc): $*"
    return 1
  fi
  if [ "$rc" -ne "$want" ]; then
    fail "$desc: exit status $rc, want $want: $*"
    return 1
  fi
  echo "ok: $desc (exit $rc)"
  return 0
}

# mentions DESC TEXT: the last command's output contains TEXT.
mentions() {
  grep -qF -- "$2" "$log" || fail "$1: the output does not mention '$2'"
}
