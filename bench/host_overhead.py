#!/usr/bin/env python3
"""Where a small program's time goes on the host: kbc's Python call
(Program.run), the C launch alone (kbc_program_launch with a prebuilt
argument array), and PyTorch eager, each with the same input set every call
(kbc replays its graph) and with four sets in turn (kbc updates its graph's
arguments).  Per case: host microseconds per call (perf_counter over N calls
queued without a synchronize, the GPU kept ahead of nothing), and the CUDA
event time per call as bench/timing.py measures it.  Then a cProfile of
Program.run.  Usage: host_overhead.py [--calls N] [--python DIR] ($KBC_LIB
names the library; --python the folder holding the kbc package, default
the checkout's python/: an older build's pair times the change)."""

from __future__ import annotations

import argparse
import cProfile
import ctypes
import pstats
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
PYDIR = sys.argv[sys.argv.index("--python") + 1] if "--python" in sys.argv else str(HERE.parent / "python")
sys.path.insert(0, PYDIR)
import kbc  # noqa: E402

SPECS = HERE.parent / "specs" / "examples"
SUITE = HERE / "suite"


def cases():
    def relu(g):
        return {"x": torch.randn(256, 1024, generator=g)}
    def lin(g):
        return {"a": torch.randn(8, 1024, generator=g), "w": torch.randn(4096, 1024, generator=g) / 32,
                "bias": torch.rand(4096, generator=g)}
    def ln(g):
        return {"x": torch.randn(32, 1024, generator=g), "gamma": torch.rand(1024, generator=g),
                "beta": torch.rand(1024, generator=g)}
    def mlp(g):
        return {"x": torch.randn(8, 1024, generator=g), "w1": torch.randn(4096, 1024, generator=g) / 32,
                "b1": torch.rand(4096, generator=g), "w2": torch.randn(1024, 4096, generator=g) / 64,
                "b2": torch.rand(1024, generator=g)}
    return [("relu 256x1024", SUITE / "1_19_relu.kb", relu, lambda t: torch.relu(t["x"])),
            ("linear+gelu 8x1024x4096", SPECS / "matmul_bias_gelu.kb", lin,
             lambda t: F.gelu(F.linear(t["a"], t["w"], t["bias"]))),
            ("layernorm 32x1024", SPECS / "layernorm.kb", ln,
             lambda t: F.layer_norm(t["x"], (1024,), t["gamma"], t["beta"])),
            ("mlp b8 1024-4096-1024", SPECS / "mlp_relu.kb", mlp,
             lambda t: F.linear(torch.relu(F.linear(t["x"], t["w1"], t["b1"])), t["w2"], t["b2"]))]


def host_us(fn, n):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(n):
        fn(i)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


def event_us(fn, n):
    st = torch.cuda.current_stream()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    torch.cuda.synchronize()
    for i in range(n):
        ev[i][0].record(st)
        fn(i)
        ev[i][1].record(st)
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) * 1e3 for a, b in ev)
    return t[len(t) // 2]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--python", default=PYDIR)
    args = ap.parse_args()
    n = args.calls
    dev = torch.device("cuda")
    print(f"{'case':26s} {'impl':22s} {'host us/call':>12s} {'event us':>9s}")
    profiled = None
    for name, spec, make, ref in cases():
        g = torch.Generator().manual_seed(1)
        sets = [{k: v.to(dev) for k, v in make(g).items()} for _ in range(4)]
        prog = kbc.compile(str(spec))
        outs = [prog.run(s) for s in sets]
        lib, handle = prog._lib, prog._handle
        raw = []
        for s, o in zip(sets, outs):
            every = dict(s)
            every.update(o)
            arr, keep = prog._args(every)
            raw.append((arr, keep, len(every)))
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        rows = [("torch eager, 1 set", lambda i: ref(sets[0])), ("torch eager, 4 sets", lambda i: ref(sets[i % 4])),
                ("kbc run, 1 set", lambda i: prog.run(sets[0])), ("kbc run, 4 sets", lambda i: prog.run(sets[i % 4])),
                ("kbc run outputs=, 4", lambda i: prog.run(sets[i % 4], outs[i % 4])),
                ("C launch, 1 set", lambda i: lib.kbc_program_launch(handle, raw[0][0], raw[0][2], stream)),
                ("C launch, 4 sets", lambda i: lib.kbc_program_launch(handle, raw[i % 4][0], raw[i % 4][2], stream))]
        for label, fn in rows:
            for i in range(50):
                fn(i)
            h = host_us(fn, n)
            e = event_us(fn, min(n, 500))
            print(f"{name:26s} {label:22s} {h:12.1f} {e:9.1f}", flush=True)
        if profiled is None:
            profiled = (name, prog, sets)
    name, prog, sets = profiled
    pr = cProfile.Profile()
    pr.enable()
    for i in range(n):
        prog.run(sets[i % 4])
    pr.disable()
    torch.cuda.synchronize()
    print(f"\ncProfile of Program.run ({name}, 4 sets, {n} calls):")
    pstats.Stats(pr).sort_stats("tottime").print_stats(18)
    return 0


if __name__ == "__main__":
    sys.exit(main())
