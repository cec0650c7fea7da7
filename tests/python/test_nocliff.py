"""test_nocliff.py SRCDIR KBC — bench/nocliff.py without a GPU: --fuzz's seed
lists (A:B, and comma-separated seeds and ranges, each seed once; a range
that is empty or text that is not seeds is an error), and the cases whose
chosen and plain plans are one and the same kernel text, which it does not
time (fuzz seed 170: one statement, nothing to fuse; seed 28: its one-point
group against nine kernels).  Needs NVRTC (both plans are compiled), not
a GPU."""
import os
import sys
import tempfile
from pathlib import Path

src, kbc = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "bench"))
import nocliff  # noqa: E402

assert nocliff.parse_seeds("1:4") == [1, 2, 3]
assert nocliff.parse_seeds("3,36,200:203,36") == [3, 36, 200, 201, 202]
for bad in ("5:3", "4:4", "x", "1:y", ""):
    try:
        nocliff.parse_seeds(bad)
    except ValueError:
        continue
    raise AssertionError(f"parse_seeds({bad!r}) did not fail")

work = Path(tempfile.mkdtemp(prefix="test_nocliff."))
cases = nocliff.fuzz_cases([170, 28], work)
failed = nocliff.prewarm(kbc, cases, "fp32", "sm_90", 2)
assert not failed, failed
same = {c["key"]: c["same"] for c in cases}
assert same == {"fuzz/170": True, "fuzz/28": False}, same
print("nocliff tests: PASS")
