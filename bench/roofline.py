"""Roofline ceilings (measured once per run) and the floor time of a problem.

Ceilings, measured through PyTorch on the benchmark device:

* bandwidth: a large device-to-device copy, ``dst.copy_(src)``; bytes read
  plus bytes written over the median time;
* fp32 and tf32 compute: ``torch.mm`` of two n×n fp32 matrices (n = 8192 on
  the GPU, smaller if one product takes over 100 ms; 1024 on the CPU), 2·n³
  FLOPs over the median time, with TF32 matmuls off and on.

Floor of a problem: ``max(flops / compute ceiling, min_bytes / bandwidth)``
where the compute ceiling is the fp32 one for fp32 rows and the tf32 one for
tf32 rows, and ``min_bytes`` counts each input read once and each output
written once.  An implementation's "% of floor" is ``floor / time``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import torch

from timing import TimingConfig, measure


def has_attr(obj: object, name: str) -> bool:
    """hasattr that also survives torch's flag modules raising AssertionError for unknown names."""
    try:
        getattr(obj, name)
        return True
    except Exception:  # noqa: BLE001
        return False


@contextmanager
def matmul_tf32(enabled: bool) -> Iterator[None]:
    """TF32 for fp32 cuBLAS matmuls on or off inside the block, restored after.

    Uses ``torch.backends.cuda.matmul.fp32_precision`` where it exists
    (torch >= 2.9, where mixing it with the legacy flag is an error) and
    ``allow_tf32`` before that.
    """
    flags = torch.backends.cuda.matmul
    if has_attr(flags, "fp32_precision"):
        old = flags.fp32_precision
        flags.fp32_precision = "tf32" if enabled else "ieee"
        try:
            yield
        finally:
            flags.fp32_precision = old
    else:
        old = flags.allow_tf32
        flags.allow_tf32 = enabled
        try:
            yield
        finally:
            flags.allow_tf32 = old


def precision_flags() -> dict[str, object]:
    """The fp32 precision settings PyTorch runs with (recorded in the JSON; unreadable ones as errors)."""
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    if has_attr(matmul, "fp32_precision"):
        getters = {"fp32_precision": lambda: torch.backends.fp32_precision,
                   "cuda.matmul.fp32_precision": lambda: matmul.fp32_precision,
                   "cudnn.conv.fp32_precision": lambda: cudnn.conv.fp32_precision}
    else:
        getters = {"float32_matmul_precision": torch.get_float32_matmul_precision,
                   "cuda.matmul.allow_tf32": lambda: matmul.allow_tf32,
                   "cudnn.allow_tf32": lambda: cudnn.allow_tf32}
    out: dict[str, object] = {}
    for name, get in getters.items():
        try:
            out[name] = get()
        except Exception as exc:  # noqa: BLE001
            out[name] = f"unreadable: {type(exc).__name__}"
    return out


@dataclass(frozen=True)
class Ceilings:
    """Measured ceilings: bytes/s of a copy and FLOP/s of fp32 and tf32 matmuls."""

    bandwidth_Bps: float
    fp32_flops: float
    tf32_flops: float
    copy_bytes: int
    matmul_n_fp32: int
    matmul_n_tf32: int
    note: str

    def compute(self, precision: str) -> float:
        """The compute ceiling for a row of this precision."""
        return self.tf32_flops if precision == "tf32" else self.fp32_flops

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields (plus TB/s and TFLOP/s for reading)."""
        d = asdict(self)
        d.update(bandwidth_TBps=self.bandwidth_Bps / 1e12, fp32_TFLOPs=self.fp32_flops / 1e12,
                 tf32_TFLOPs=self.tf32_flops / 1e12)
        return d


CEILING_TIMING = TimingConfig(warmup_calls=3, warmup_s=0.2, min_reps=20, min_reps_slow=10, max_reps=200,
                              target_s=1.0, max_seconds=10.0)


def measure_copy(device: torch.device, nbytes: int) -> float:
    """Bytes per second (read + written) of a device-to-device copy of ``nbytes``."""
    n = nbytes // 4
    src = torch.rand(n, device=device)
    dst = torch.empty_like(src)
    t = measure(lambda i: dst.copy_(src), 1, CEILING_TIMING, device)
    return 2.0 * n * 4 / (t.median_us * 1e-6)


def measure_matmul(device: torch.device, n: int, tf32: bool) -> tuple[float, int]:
    """FLOP/s of an n×n×n fp32 matmul (TF32 on or off); shrinks n while one product takes > 100 ms."""
    while True:
        a = torch.rand(n, n, device=device)
        b = torch.rand(n, n, device=device)
        out = torch.empty(n, n, device=device)
        with matmul_tf32(tf32):
            torch.mm(a, b, out=out)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            t = measure(lambda i: torch.mm(a, b, out=out), 1, CEILING_TIMING, device)
        if t.median_us <= 100e3 or n <= 512:
            return 2.0 * n ** 3 / (t.median_us * 1e-6), n
        n //= 2


def measure_ceilings(device: torch.device, quick: bool) -> Ceilings:
    """Measure the three ceilings once on ``device``."""
    if device.type == "cuda":
        copy_bytes, n = (256 if quick else 1024) << 20, 8192
        note = "device-to-device copy; torch.mm fp32 with TF32 off / on"
    else:
        copy_bytes, n = 64 << 20, 1024
        note = "CPU: memcpy-like copy; torch.mm fp32 (no TF32 on the CPU: tf32 = fp32)"
    bandwidth = measure_copy(device, copy_bytes)
    fp32, n32 = measure_matmul(device, n, tf32=False)
    if device.type == "cuda":
        tf32, ntf = measure_matmul(device, n, tf32=True)
    else:
        tf32, ntf = fp32, n32
    return Ceilings(bandwidth_Bps=bandwidth, fp32_flops=fp32, tf32_flops=tf32, copy_bytes=copy_bytes,
                    matmul_n_fp32=n32, matmul_n_tf32=ntf, note=note)


def floor_us(flops: int, nbytes: int, precision: str, ceilings: Ceilings) -> tuple[float, str]:
    """The floor time in µs and which term sets it ("compute" or "memory")."""
    compute_s = flops / ceilings.compute(precision)
    memory_s = nbytes / ceilings.bandwidth_Bps
    return max(compute_s, memory_s) * 1e6, ("compute" if compute_s >= memory_s else "memory")
