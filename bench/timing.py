"""Timing for bench/compare.py: warm-up, per-call timers, medians, deadlines.

Every implementation is timed the same way:

* ``run(i)`` executes the implementation on input set ``i`` (the sets are
  copies of one another, rotated so that small problems are not timed from
  the L2 cache alone);
* warm-up: at least ``warmup_calls`` calls (and at least three passes over
  all the sets, so per-set CUDA graphs are recorded) and at least
  ``warmup_s`` seconds, each call synchronized so that the loop measures
  the device and cannot queue far ahead of it (unsynchronized, it queued a
  thousand calls of a 17 ms kernel: 17 s of warm-up under a 1 s budget);
* then ``reps`` timed calls, each between its own pair of CUDA events on the
  current stream (host ``perf_counter`` on the CPU), one synchronize at the
  end, and the median (plus p10/p90/min/mean) of the per-call times.

``reps`` is at least ``min_reps`` (100) for calls up to ``slow_s`` (10 ms)
and ``min_reps_slow`` (20) above it, grown towards ``target_s`` seconds of
measurement (at most ``max_reps``), and always capped so that warm-up plus
measurement stays within ``max_seconds`` per implementation.
"""

from __future__ import annotations

import math
import signal
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import torch

Runner = Callable[[int], object]


@dataclass(frozen=True)
class TimingConfig:
    """How long to warm up and how many timed calls to make."""

    warmup_calls: int = 10
    warmup_s: float = 1.0
    min_reps: int = 100
    min_reps_slow: int = 20
    slow_s: float = 10e-3
    max_reps: int = 1000
    target_s: float = 3.0
    max_seconds: float = 20.0

    @classmethod
    def make(cls, quick: bool, max_seconds: float) -> TimingConfig:
        """The full configuration, or the smoke-run one for ``--quick``."""
        if quick:
            return cls(warmup_calls=3, warmup_s=0.1, min_reps=20, min_reps_slow=5, max_reps=100,
                       target_s=0.5, max_seconds=min(max_seconds, 5.0))
        return cls(max_seconds=max_seconds)


@dataclass(frozen=True)
class TimingResult:
    """Per-call times of one implementation, in microseconds."""

    median_us: float
    p10_us: float
    p90_us: float
    min_us: float
    mean_us: float
    reps: int
    warmup_calls: int
    timer: str
    capped: bool          # fewer reps than the minimum, because of --max-seconds

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields."""
        return asdict(self)


def synchronize(device: torch.device) -> None:
    """Wait for all queued device work (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted values."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def plan_reps(per_call_s: float, warmup_spent_s: float, cfg: TimingConfig) -> int:
    """How many timed calls: the minimum for the call's duration, towards the target, under the cap."""
    per_call_s = max(per_call_s, 1e-7)
    minimum = cfg.min_reps if per_call_s <= cfg.slow_s else cfg.min_reps_slow
    reps = max(minimum, min(cfg.max_reps, int(cfg.target_s / per_call_s)))
    budget = max(cfg.max_seconds - warmup_spent_s, 0.0)
    return max(3, min(reps, int(budget / per_call_s)))


def warm_up(run: Runner, n_sets: int, cfg: TimingConfig, device: torch.device) -> tuple[int, float, float]:
    """Warm up; return (calls made, seconds spent, estimated seconds per call)."""
    need_calls = max(cfg.warmup_calls, 3 * n_sets)
    cap_s = max(cfg.max_seconds / 4.0, cfg.warmup_s)
    calls, start = 0, time.perf_counter()
    while True:
        run(calls % n_sets)
        synchronize(device)
        calls += 1
        elapsed = time.perf_counter() - start
        if calls >= need_calls and elapsed >= cfg.warmup_s:
            break
        if elapsed >= cap_s and calls >= n_sets:
            break
    spent = time.perf_counter() - start
    # Estimate from a short burst, synchronized once: it includes the queueing between calls.
    burst = min(max(n_sets, 3), 10)
    t0 = time.perf_counter()
    for i in range(burst):
        run((calls + i) % n_sets)
    synchronize(device)
    per_call = (time.perf_counter() - t0) / burst
    return calls + burst, spent + per_call * burst, per_call


def time_cuda(run: Runner, reps: int, n_sets: int, device: torch.device) -> list[float]:
    """Per-call times (µs) between CUDA events on the current stream, one synchronize at the end."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    stream = torch.cuda.current_stream(device)
    for r in range(reps):
        starts[r].record(stream)
        run(r % n_sets)
        ends[r].record(stream)
    torch.cuda.synchronize(device)
    return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]


def time_host(run: Runner, reps: int, n_sets: int) -> list[float]:
    """Per-call times (µs) by the host clock (CPU execution is synchronous)."""
    times = []
    for r in range(reps):
        t0 = time.perf_counter()
        run(r % n_sets)
        times.append((time.perf_counter() - t0) * 1e6)
    return times


def measure(run: Runner, n_sets: int, cfg: TimingConfig, device: torch.device) -> TimingResult:
    """Warm up, then time ``reps`` calls rotating over ``n_sets`` input sets."""
    warm_calls, spent, per_call = warm_up(run, n_sets, cfg, device)
    reps = plan_reps(per_call, spent, cfg)
    minimum = cfg.min_reps if per_call <= cfg.slow_s else cfg.min_reps_slow
    if device.type == "cuda":
        times, timer = time_cuda(run, reps, n_sets, device), "cuda-events"
    else:
        times, timer = time_host(run, reps, n_sets), "host-perf_counter"
    ordered = sorted(times)
    return TimingResult(median_us=statistics.median(ordered), p10_us=quantile(ordered, 0.1),
                        p90_us=quantile(ordered, 0.9), min_us=ordered[0], mean_us=statistics.fmean(ordered),
                        reps=reps, warmup_calls=warm_calls, timer=timer, capped=reps < minimum)


# ------------------------------------------------------------------ deadlines

class DeadlineExceeded(BaseException):
    """Raised (from SIGALRM) when a guarded region runs past its budget.

    A BaseException, so that library code catching ``Exception`` (compilers
    often do) cannot swallow it.
    """


@contextmanager
def deadline(seconds: float | None, what: str) -> Iterator[None]:
    """Raise DeadlineExceeded in this (main) thread if the block runs longer than ``seconds``.

    Where SIGALRM is unavailable (not the main thread, not POSIX) the block
    runs unguarded; the caller still compares the elapsed time afterwards.
    """
    usable = (seconds is not None and seconds > 0 and hasattr(signal, "SIGALRM")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise DeadlineExceeded(f"{what} exceeded {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)
