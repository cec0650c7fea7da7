#!/bin/sh
# run_diag.sh KBC FILE — one golden diagnostic test.
#
# FILE is a bad spec whose '# expect: LINE:COL: error: MESSAGE' lines state
# the errors `KBC check FILE` must print, in order.  The test passes when:
#   - kbc exits with status 1 (0: the bad spec was accepted; anything else,
#     a sanitizer report or an internal error: kbc crashed or broke);
#   - its error lines are exactly the expected ones, in order (printed as
#     FILE:LINE:COL: error: MESSAGE; notes may come in between);
#   - every error shows its source line and a caret under column COL;
#   - each '# expect-note: LINE:COL: note: MESSAGE' line is printed too.
# Exit status: 0 pass, 1 fail (with a diff-style report).
set -u

if [ $# -ne 2 ]; then
  echo "usage: $0 KBC FILE" >&2
  exit 2
fi
kbc=$1
file=$2
name=$(basename "$file")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kbc_diag.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

fail() {
  echo "FAIL: $name: $*"
  exit 1
}

# The expected errors.
sed -n 's/^# expect: //p' "$file" >"$tmp/want"
[ -s "$tmp/want" ] || fail "no '# expect: LINE:COL: error: MESSAGE' line in $file"
if grep -Ev '^[0-9]+:[0-9]+: error: .' "$tmp/want" >"$tmp/bad_want"; then
  fail "an '# expect:' line is not 'LINE:COL: error: MESSAGE': $(head -n 1 "$tmp/bad_want")"
fi

# Run kbc; sanitizers exit with a status of their own so a report is never
# mistaken for an ordinary error (exit 1).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}exitcode=86"
UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}exitcode=87:print_stacktrace=1"
export ASAN_OPTIONS UBSAN_OPTIONS
if command -v timeout >/dev/null 2>&1; then
  timeout 60 "$kbc" check "$file" >"$tmp/out" 2>&1
else
  "$kbc" check "$file" >"$tmp/out" 2>&1
fi
rc=$?

show_output() {
  echo "---- output of: $kbc check $file (exit status $rc)"
  cat "$tmp/out"
  echo "----"
}

if grep -Eq 'Sanitizer|runtime error:|internal error' "$tmp/out"; then
  show_output
  fail "kbc crashed or broke an invariant (sanitizer report or internal error above)"
fi
case $rc in
  1) ;;
  0) show_output; fail "kbc accepted a bad spec (exit status 0, want 1)" ;;
  124) show_output; fail "kbc did not finish within 60 s (a hang?)" ;;
  *) show_output; fail "exit status $rc, want 1 (status > 2 means a crash)" ;;
esac

# Compare the error lines, and check each one's source line and caret.
LC_ALL=C awk -v pfx="$file:" -v want="$tmp/want" -v spec="$file" '
  BEGIN {
    while ((getline l < want) > 0) wantl[++nw] = l
    while ((getline l < spec) > 0) src[++ns] = l
  }
  { out[++no] = $0 }
  END {
    for (i = 1; i <= no; i++)
      if (index(out[i], pfx) == 1 && index(out[i], ": error: ") > 0) {
        got[++ng] = substr(out[i], length(pfx) + 1)
        at[ng] = i
      }
    same = nw == ng
    for (k = 1; k <= nw && same; k++) same = wantl[k] == got[k]
    if (!same) {
      print "error lines differ (- expected, + printed):"
      for (k = 1; k <= nw; k++) print "- " wantl[k]
      for (k = 1; k <= ng; k++) print "+ " got[k]
      exit 1
    }
    for (k = 1; k <= ng; k++) {
      split(got[k], lc, ":")
      line = lc[1] + 0; col = lc[2] + 0
      shown = out[at[k] + 1]; caret = out[at[k] + 2]
      text = src[line]
      gsub(/\t/, " ", text)
      if (length(text) > 400) text = substr(text, 1, 400)
      if (shown != "  " text) {
        print "error " k " (" got[k] ") does not show source line " line ":"
        print "- " "  " text
        print "+ " shown
        exit 1
      }
      n = length(text)
      pos = 3 + (col - 1 < n ? col - 1 : n)
      if (caret !~ /^ *\^$/ || index(caret, "^") != pos) {
        print "error " k " (" got[k] ") has no caret under column " col ":"
        print "- " sprintf("%" pos "s", "^")
        print "+ " caret
        exit 1
      }
    }
  }
' "$tmp/out" >"$tmp/report"
if [ $? -ne 0 ]; then
  cat "$tmp/report"
  show_output
  fail "diagnostics differ from the '# expect:' lines"
fi
sed -n 's/^# expect-note: //p' "$file" | while IFS= read -r note; do
  if ! grep -Fqx "$file:$note" "$tmp/out"; then
    echo "missing note: $note"
    show_output
    exit 1
  fi
done || fail "an '# expect-note:' line was not printed"
echo "PASS: $name"
exit 0
