#!/usr/bin/env python3
"""Contractions with few rows beside PyTorch: kbc and torch (eager, IEEE
fp32 matmuls) on the same rotating input sets, timed by bench/timing.py,
each output checked against float64.  The cases group.c's small_rule
decides (KBC_GEMM_SMALL): an MLP at batch 4-32, SwiGLU at 8 rows, linears
of 8 and 20 rows.  Usage: small_vs_torch.py [--max-seconds S]."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))
import kbc  # noqa: E402
from timing import TimingConfig, measure  # noqa: E402

SPECS = HERE.parent / "specs" / "examples"


def mlp(b, di=1024, dh=4096, do=1024):
    def make(g):
        return {"x": torch.randn(b, di, generator=g), "w1": torch.randn(dh, di, generator=g) / di ** 0.5,
                "b1": torch.rand(dh, generator=g) - 0.5, "w2": torch.randn(do, dh, generator=g) / dh ** 0.5,
                "b2": torch.rand(do, generator=g) - 0.5}
    return (f"mlp_relu b{b} {di}-{dh}-{do}", "mlp_relu.kb", make, "out",
            lambda t: F.linear(torch.relu(F.linear(t["x"], t["w1"], t["b1"])), t["w2"], t["b2"]))


def swiglu(m, d=1024, ff=2816):
    def make(g):
        return {"x": torch.randn(m, d, generator=g), "w1": torch.randn(ff, d, generator=g) / d ** 0.5,
                "w3": torch.randn(ff, d, generator=g) / d ** 0.5, "w2": torch.randn(d, ff, generator=g) / ff ** 0.5}
    return (f"swiglu m{m} {d}x{ff}", "swiglu.kb", make, "y",
            lambda t: F.linear(F.silu(F.linear(t["x"], t["w1"])) * F.linear(t["x"], t["w3"]), t["w2"]))


def linear_gelu(m, k, n):
    def make(g):
        return {"a": torch.randn(m, k, generator=g), "w": torch.randn(n, k, generator=g) / k ** 0.5,
                "bias": torch.rand(n, generator=g) - 0.5}
    return (f"matmul_bias_gelu {m}x{k}x{n}", "matmul_bias_gelu.kb", make, "out",
            lambda t: F.gelu(F.linear(t["a"], t["w"], t["bias"])))


CASES = [mlp(4), mlp(8), mlp(12), mlp(32), swiglu(8), linear_gelu(8, 1024, 4096), linear_gelu(20, 512, 256)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-seconds", type=float, default=4.0)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    cfg = TimingConfig(max_seconds=args.max_seconds, target_s=1.0)
    print(f"{'case':34s} {'torch us':>10s} {'kbc us':>10s} {'torch/kbc':>10s} {'kbc err':>9s}")
    for name, spec, make, out, ref in CASES:
        g = torch.Generator().manual_seed(1)
        sets = [{k: v.to(dev) for k, v in make(g).items()} for _ in range(4)]
        prog = kbc.compile(str(SPECS / spec))
        want = ref({k: v.double() for k, v in sets[0].items()})
        got = prog.run(sets[0])[out]
        err = ((got.double() - want).norm() / want.norm()).item()
        t_torch = measure(lambda i: ref(sets[i]), len(sets), cfg, dev).median_us
        t_kbc = measure(lambda i: prog.run(sets[i]), len(sets), cfg, dev).median_us
        print(f"{name:34s} {t_torch:10.1f} {t_kbc:10.1f} {t_torch / t_kbc:10.2f} {err:9.1e}"
              + ("" if err <= 1e-5 else "  FAIL"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
