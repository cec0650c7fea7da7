"""demo_gpu.py BUILD — the main job on a GPU (tools/demo.sh calls it where
kbc sees a device and this python has CUDA torch): the three workloads
compiled for the device, run at their benchmark shapes beside PyTorch eager
in one process (bench/compare.py --quick: CViT b10, conv3d b128, SAM-HQ
7x7 b1, 32x32 b2 and 64x64 b4), every output checked against float64, then
one short table: launches per call, kbc's median time at fp32 and tf32,
eager's, the speedup and the error.  Exit status 1 when a kbc row failed
its check.  Arguments after BUILD go to bench/compare.py (for a try without
a GPU: --device cpu --workloads conv3d)."""
import json
import os
import subprocess
import sys
import tempfile

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/release")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
env = dict(os.environ, KBC_LIB=os.path.join(build, "libkbc.so"))
with tempfile.TemporaryDirectory(prefix="kbc_demo_") as tmp:
    out = os.path.join(tmp, "demo.json")
    cmd = [sys.executable, os.path.join(root, "bench", "compare.py"), "--quick", "--no-compile",
           "--kbc-precisions", "fp32,tf32", "--json", out] + sys.argv[2:]
    print("demo: " + " ".join(cmd[1:]), flush=True)
    r = subprocess.run(cmd, env=env, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0 or not os.path.exists(out):
        sys.stdout.write(r.stdout[-4000:])
        sys.exit(f"demo: bench/compare.py failed (exit status {r.returncode})")
    with open(out) as f:
        data = json.load(f)

rows = {}
for row in data["results"]:
    rows.setdefault((row["workload"], row["shape"]), {})[row["impl"]] = row


def us(row):
    return f"{row['median_us']:,.1f}" if row and row.get("median_us") is not None else "-"


info = data.get("environment", {})
commit = ((info.get("kbc") or {}).get("commit") or "?")[:12]
timer = next((r["timing"]["timer"] for r in data["results"] if r.get("timing")), "?")
print(f"\n{info.get('gpu') or info.get('device')}, torch {info.get('torch', '?')}, kbc {commit}; medians ({timer}), "
      "every output against float64 (fp32: rel. L2 <= 1e-5, tf32: <= 2e-3)\n")
head = f"{'workload':<8} {'shape':<16} {'kernels':>7} {'eager us':>10} {'kbc fp32 us':>12} {'speedup':>8} " \
       f"{'fp32 err':>12} {'kbc tf32 us':>12} {'tf32 err':>12}"
print(head)
print("-" * len(head))
failed = False
for (workload, shape), impls in rows.items():
    eager = impls.get("eager")
    fp32, tf32 = impls.get("kbc fp32"), impls.get("kbc tf32")
    for k in (fp32, tf32):
        failed |= bool(k) and k.get("status") != "ok"
    speed = (f"{eager['median_us'] / fp32['median_us']:.2f}x"
             if eager and fp32 and eager.get("median_us") and fp32.get("median_us") else "-")

    def err(k):
        if not k:
            return "-"
        rel = f"{k['rel_err']:.1e}" if k.get("rel_err") is not None else ""
        if k.get("status") != "ok":  # (the error that failed, where one was measured)
            return f"{k.get('status', '?')} {rel}".strip()
        return rel or "-"
    kernels = (fp32 or {}).get("kernels") or (tf32 or {}).get("kernels") or "-"
    print(f"{workload:<8} {shape:<16} {kernels!s:>7} {us(eager):>10} {us(fp32):>12} {speed:>8} {err(fp32):>12} "
          f"{us(tf32):>12} {err(tf32):>12}")
if failed:
    sys.exit("demo: a kbc row failed its check (above)")
