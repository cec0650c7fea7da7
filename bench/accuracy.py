"""accuracy.py — how a result is judged against its float64 reference, for
bench/compare.py and bench/suite.py alike: per output, the relative L2
error and the largest absolute error, or why neither could be computed
(missing, wrong shape, NaN/Inf)."""
from __future__ import annotations

import torch

Tensors = dict[str, torch.Tensor]


def accuracy(outputs: Tensors, reference: Tensors) -> dict[str, dict[str, object]]:
    """Per output: relative L2 error and max abs error vs the float64 reference (computed in float64)."""
    result: dict[str, dict[str, object]] = {}
    for name, ref in reference.items():
        out = outputs.get(name)
        entry: dict[str, object] = {"rel_l2": None, "max_abs": None, "error": None}
        if out is None:
            entry["error"] = "missing"
        elif tuple(out.shape) != tuple(ref.shape):
            entry["error"] = f"shape {list(out.shape)}, expected {list(ref.shape)}"
        else:
            o = out.detach().to(device=ref.device, dtype=torch.float64)
            bad = int((~torch.isfinite(o)).sum())
            if bad:
                entry["error"] = f"{bad} NaN/Inf values"
            else:
                diff = o - ref
                norm = float(ref.norm())
                entry["rel_l2"] = float(diff.norm()) / norm if norm > 0 else float(diff.norm())
                entry["max_abs"] = float(diff.abs().max()) if diff.numel() else 0.0
            del o
        result[name] = entry
    return result
