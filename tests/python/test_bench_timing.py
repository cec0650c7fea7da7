"""test_bench_timing.py SRCDIR — bench/timing.py's warm-up waits for the
device after every call, so that its time budget counts device time: a
simulated asynchronous device (each call queues 50 ms of work and returns
at once; synchronize() waits for the queue) must be warmed up in a few
calls, not in as many as the host can queue before its budget runs out
(unsynchronized, the loop queued ~1,000 calls of a 17 ms kernel on the
H200: 17 s under a 1 s budget).  Exit 77 (skip) without torch."""
import os
import sys
import time

src = sys.argv[1]
try:
    import torch
except ImportError:
    print("SKIP: no torch for", sys.executable)
    sys.exit(77)
sys.path.insert(0, os.path.join(src, "bench"))
import timing  # noqa: E402

CALL_S = 0.05
queue_end = [0.0]   # when the simulated device finishes what it was given


def run(i):
    now = time.perf_counter()
    queue_end[0] = max(queue_end[0], now) + CALL_S   # asynchronous: returns at once
    if queue_end[0] - now > 2.0:
        raise AssertionError("the warm-up queued over 2 s of device work: it ran ahead of the device")


def synchronize(device):
    left = queue_end[0] - time.perf_counter()
    if left > 0:
        time.sleep(left)


timing.synchronize = synchronize
cfg = timing.TimingConfig.make(quick=True, max_seconds=1.0)   # warm-up: 3 calls and 0.1 s, capped at 0.25 s
start = time.perf_counter()
calls, spent, per_call = timing.warm_up(run, 1, cfg, torch.device("cpu"))
wall = time.perf_counter() - start
# 0.1 s of device time is 2 calls (3 at least), then a burst of 3: ~6 calls, ~0.3 s.
assert calls <= 12, f"warm-up made {calls} calls of {CALL_S} s each: it ran ahead of the device"
assert wall < 1.0, f"warm-up took {wall:.2f} s under a budget of {cfg.max_seconds} s"
assert abs(per_call - CALL_S) < 0.02, f"per-call estimate {per_call:.3f} s, the call takes {CALL_S}"
print(f"ok: warm-up {calls} calls, {wall:.2f} s, {per_call * 1e3:.1f} ms a call")
