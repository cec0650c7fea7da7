#!/usr/bin/env python3
"""act_probe.py — one pointwise op a call through Program.run at the suite's small
binding (5 x 37), 32 rotating sets and one: ReLU, Swish, GELU, SELU (session
37: Swish and GELU had taken 6 us more a call than ReLU in the small suite)."""
import sys, torch, ctypes, os
sys.path.insert(0, "bench"); sys.path.insert(0, "python")
import kbc
from timing import TimingConfig, measure
dev = torch.device("cuda")
cfg = TimingConfig.make(True, 0.5)
for spec in ["1_19_relu", "1_25_swish", "1_26_gelu", "1_27_selu"]:
    prog = kbc.compile(f"bench/suite/{spec}.kb")
    sets = [{"x": torch.randn(5, 37, device=dev)} for _ in range(32)]
    outs = [prog.run(s) for s in sets]
    t = measure(lambda i: prog.run(sets[i]), len(sets), cfg, dev)
    t1 = measure(lambda i: prog.run(sets[0]), 1, cfg, dev)
    os.environ["KBC_DEBUG"] = "0"
    print(f"{spec:12s} 32 sets {t.median_us:6.1f} us   1 set {t1.median_us:6.1f} us  kernels {prog.num_kernels}", flush=True)
