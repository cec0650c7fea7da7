"""test_bench_merge.py SRCDIR — bench/compare.py --merge on results files:
a later run's row replaces an earlier one's, a row the later run skipped by
option keeps the earlier one, rows of one workload and shape stay together,
and the SAM-HQ mean says how many shapes it covers; and --headline's
shapes (workloads.shapes_for) are the headline ones.  Exit 77 (skip) without torch."""
import copy
import json
import os
import sys

src = sys.argv[1]
try:
    import torch  # noqa: F401  (report.py imports it)
except ImportError:
    print("SKIP: no torch for", sys.executable)
    sys.exit(77)
sys.path.insert(0, os.path.join(src, "bench"))
import report  # noqa: E402
import workloads  # noqa: E402

with open(os.path.join(src, "docs/results/2026-11-29-session3.json")) as f:
    base = json.load(f)
later = copy.deepcopy(base)
rows = {(r["workload"], r["shape"], r["impl"]): r for r in later["results"]}
compiled = rows[("sam", "7x7 b1", "autograd compile")]
assert compiled["status"] == "ok" and compiled["median_us"]
compiled.update(status="N/A", reason="skipped (--no-compile)", median_us=None)
kbc = rows[("sam", "7x7 b1", "kbc fp32")]
kbc["median_us"] = 123.0
later["results"].append(dict(copy.deepcopy(kbc), shape="7x7 b1", impl="kbc new row", median_us=99.0))

doc = report.merge_documents([base, later], ["base", "later"])
got = {(r["workload"], r["shape"], r["impl"]): r for r in doc["results"]}
assert got[("sam", "7x7 b1", "autograd compile")]["status"] == "ok", "a skipped row replaced a measured one"
assert got[("sam", "7x7 b1", "kbc fp32")]["median_us"] == 123.0, "a later measured row did not replace"
# rows of a shape together: the appended row sits with the other 7x7 b1 rows
order = [(r["workload"], r["shape"]) for r in doc["results"]]
first = order.index(("sam", "7x7 b1"))
assert all(k == ("sam", "7x7 b1") for k in order[first:first + order.count(("sam", "7x7 b1"))]), "shape split"
means = {s["impl"]: s for s in doc["summary"] if s.get("workload") == "sam"}
assert means, "no SAM-HQ means"

assert means["kbc fp32"]["label"] == "mean of 16", means["kbc fp32"]

# a merge that lacks a shape says so in the mean's label
partial = copy.deepcopy(base)
partial["results"] = [r for r in partial["results"] if r["shape"] != "64x64 b4"]
doc = report.merge_documents([partial], ["partial"])
for s in doc["summary"]:
    if s.get("workload") == "sam":
        assert s["label"] == "mean of 15" and s["n_shapes"] == 15, s
print("bench merge: ok")

# --headline: the headline shapes only (as --quick), on a GPU device
cuda = torch.device("cuda")
for key, want in (("cvit", ["b10"]), ("conv3d", ["b128 3x24x32x32"]), ("sam", ["7x7 b1", "32x32 b2", "64x64 b4"])):
    got = [sh.label for sh in workloads.shapes_for(key, cuda, False, None, headline=True)]
    assert got == want, (key, got)
    assert len(workloads.shapes_for(key, cuda, False, None)) > len(want), key
print("bench headline shapes: ok")
