"""test_nocliff.py SRCDIR KBC — bench/nocliff.py without a GPU: --fuzz's seed
lists (A:B, and comma-separated seeds and ranges, each seed once; a range
that is empty or text that is not seeds is an error), and the cases whose
chosen and plain plans are one and the same kernel text, which it does not
time (fuzz seed 170: one statement, nothing to fuse; seed 28: its one-point
group against nine kernels); and its timing loop against a stand-in kbc
(short cases timed again back to back, a cliff again in the other
order, the JSON it writes).  Needs NVRTC (both plans are compiled), not a
GPU."""
import json
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

assert nocliff.env_arg("KBC_ATTN_ALWAYS=1,KBC_UNROLL=8") == {"KBC_ATTN_ALWAYS": "1", "KBC_UNROLL": "8"}
assert nocliff.env_arg("") == {}
for bad in ("KBC_X", "PATH=/bin", "=1"):
    try:
        nocliff.env_arg(bad)
    except nocliff.argparse.ArgumentTypeError:
        continue
    raise AssertionError(f"env_arg({bad!r}) did not fail")

work = Path(tempfile.mkdtemp(prefix="test_nocliff."))
cases = nocliff.fuzz_cases([170, 28], work)
failed = nocliff.prewarm(kbc, cases, "fp32", "sm_90", 2)
assert not failed, failed
same = {c["key"]: c["same"] for c in cases}
assert same == {"fuzz/170": True, "fuzz/28": False}, same
print("nocliff tests: PASS")

# The timing loop against a stand-in kbc (a script answering `compile` and `bench --batch`): the
# chosen plan of spec "slow" takes 3x the plain one's time (a cliff, timed again in the other order),
# spec "fast" 0.5x; both are short, so each is timed again back to back, 25 samples of launches
# enough for 200 us of the slower plan (7 of 30 us, 20 of 10 us), the cliff a third time so in the
# other order.
fake = work / "kbc"
log = work / "iters.log"
fake.write_text(f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
plain = os.environ.get("KBC_NO_FUSE") == "1"
if args[0] == "compile":
    print("kernel text", "plain" if plain else "chosen", args[1])
    sys.exit(0)
for line in sys.stdin:
    words = line.split()
    iters = words[words.index("--iters") + 1]
    if "--repeat" in words:
        iters += "x" + words[words.index("--repeat") + 1]
    with open({str(log)!r}, "a") as f:
        f.write(f"{{'plain' if plain else 'chosen'}} {{os.path.basename(words[0])}} {{iters}}\\n")
    slow = "slow" in words[0]
    us = 10.0 if plain else (30.0 if slow else 5.0)
    print(json.dumps({{"median_us": us, "kernels": 1 if plain else 2}}), flush=True)
""")
fake.chmod(0o755)
for name in ("slow", "fast"):
    (work / f"{name}.kb").write_text("kernel k\\n")
cases = [{"key": n, "spec": str(work / f"{n}.kb"), "axes": {}} for n in ("slow", "fast")]
args = nocliff.argparse.Namespace(iters=30, precision="fp32", threshold=1.25, min_us=1.0, max_seconds=0,
                                  json=work / "out.json", kbc=str(fake), chosen_env={},
                                  plain_env=nocliff.PLAIN_ENV)
failed = nocliff.prewarm(str(fake), cases, "fp32", "sm_90", 2)
assert not failed and not any(c["same"] for c in cases), (failed, cases)
assert nocliff.time_cases(args, cases, failed) == 1  # a cliff
out = json.loads((work / "out.json").read_text())
ratios = {r["key"]: (r["ratio"], r["cliff"]) for r in out["rows"]}
assert ratios == {"slow": (3.0, True), "fast": (0.5, False)}, ratios
seen = log.read_text().split("\n")
assert seen == ["chosen slow.kb 30", "plain slow.kb 30", "chosen slow.kb 25x7", "plain slow.kb 25x7",
                "plain slow.kb 25x7", "chosen slow.kb 25x7", "chosen fast.kb 30", "plain fast.kb 30",
                "chosen fast.kb 25x20", "plain fast.kb 25x20", ""], seen
print("nocliff timing loop: PASS")
