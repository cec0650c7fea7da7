#!/usr/bin/python3
"""SAM-HQ attention with decomposed 2-D relative position: the PyTorch peers.

* ``sam_backward_explicit`` — the SOL-ExecBench-style reference math: the
  forward recomputed and every gradient written out as explicit matrix
  products (no autograd), in whatever dtype the inputs have.
* ``SamAttention`` — the forward as an ``nn.Module`` with the weights as
  parameters, for the autograd peers (eager and torch.compile).  Same math
  as ``tools/oracle_workloads.sam_attention`` (SAM's ``Attention.forward``
  with ``use_rel_pos``), except that the relative-position indices are a
  device buffer built once instead of a CPU ``arange`` per call.

``python3 bench/sam_reference.py --selftest`` checks both against autograd
over the oracle's forward in float64 (relative L2 error <= 1e-10 for every
gradient) on small shapes, including non-square ones.

Notation: B batch, H×W positions (S = H·W tokens), C hidden, n heads of
d = C/n channels, BN = B·n.  Score position (y, x) attends to (ky, kx);
``rel_h[bn, y, x, ky] = q[bn, y, x, :] · Rh[y, ky, :]`` with
``Rh[y, ky] = rel_pos_h[y - ky + H - 1]`` (likewise w), from the unscaled q.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import oracle_workloads as ow  # noqa: E402  (the oracle: tools/oracle_workloads.py)

Tensors = dict[str, torch.Tensor]

HIDDEN, HEADS = 768, 12
WRT = ("hidden_states", "qkv_weight", "qkv_bias", "proj_weight", "proj_bias", "rel_pos_h", "rel_pos_w")
OUTPUTS = tuple(f"grad_{name}" for name in WRT)


@functools.lru_cache(maxsize=64)
def rel_index(size: int, device: torch.device) -> torch.Tensor:
    """idx[i, j] = i - j + size - 1: the table row for query i and key j (int64, on ``device``)."""
    ar = torch.arange(size, device=device)
    return ar[:, None] - ar[None, :] + (size - 1)


def per_row(t: torch.Tensor, axis: int) -> torch.Tensor:
    """[BN, H, W, K] -> [size of axis, BN * other, K]: batch the matmuls over the y (1) or x (2) axis."""
    moved = t.movedim(axis, 0)
    return moved.reshape(moved.shape[0], -1, moved.shape[-1])


def un_row(t: torch.Tensor, axis: int, bn: int, h: int, w: int) -> torch.Tensor:
    """Inverse of ``per_row`` for a result [size of axis, BN * other, K] -> [BN, H, W, K]."""
    other = w if axis == 1 else h
    return t.reshape(t.shape[0], bn, other, t.shape[-1]).movedim(0, axis)


def sam_backward_explicit(inputs: Tensors, heads: int = HEADS) -> Tensors:
    """All seven gradients of SAM attention by explicit matmuls (forward recompute, then backward)."""
    x, go = inputs["hidden_states"], inputs["grad_output"]
    w_qkv, b_qkv = inputs["qkv_weight"], inputs["qkv_bias"]
    w_proj, scale = inputs["proj_weight"], inputs["scale"]
    B, H, W, C = x.shape
    S, d, BN = H * W, C // heads, B * heads
    idx_h, idx_w = rel_index(H, x.device), rel_index(W, x.device)
    Rh, Rw = inputs["rel_pos_h"][idx_h], inputs["rel_pos_w"][idx_w]          # [H, H, d], [W, W, d]

    # ---- forward recompute
    X = x.reshape(B * S, C)
    qkv = torch.addmm(b_qkv, X, w_qkv.t())                                    # [B*S, 3C]
    q, k, v = qkv.view(B, S, 3, heads, d).permute(2, 0, 3, 1, 4).reshape(3, BN, S, d).unbind(0)
    q4 = q.reshape(BN, H, W, d)
    rel_h = un_row(torch.bmm(per_row(q4, 1), Rh.transpose(1, 2)), 1, BN, H, W)   # [BN, H, W, H]
    rel_w = un_row(torch.bmm(per_row(q4, 2), Rw.transpose(1, 2)), 2, BN, H, W)   # [BN, H, W, W]
    scores = torch.bmm(q, k.transpose(1, 2)) * scale                          # [BN, S, S]
    scores = scores.view(BN, H, W, H, W) + rel_h[..., :, None] + rel_w[..., None, :]
    P = torch.softmax(scores.view(BN, S, S), dim=-1)
    O = torch.bmm(P, v)                                                       # [BN, S, d]
    O_flat = O.view(B, heads, S, d).permute(0, 2, 1, 3).reshape(B * S, C)

    # ---- output projection
    G = go.reshape(B * S, C)
    grad_proj_bias = G.sum(0)
    grad_proj_weight = G.t() @ O_flat
    dO = (G @ w_proj).view(B, S, heads, d).permute(0, 2, 1, 3).reshape(BN, S, d)

    # ---- attention: dV, dP, dS = P * (dP - rowsum(dO * O)), dQ, dK
    dV = torch.bmm(P.transpose(1, 2), dO)
    dP = torch.bmm(dO, v.transpose(1, 2))
    dS = P * (dP - (dO * O).sum(-1, keepdim=True))
    dQ = torch.bmm(dS, k) * scale
    dK = torch.bmm(dS.transpose(1, 2), q) * scale

    # ---- relative-position bias: grh sums dS over kx, grw over ky
    dS5 = dS.view(BN, H, W, H, W)
    grh, grw = dS5.sum(-1), dS5.sum(-2)                                       # [BN, H, W, H], [BN, H, W, W]
    dQ = dQ + (un_row(torch.bmm(per_row(grh, 1), Rh), 1, BN, H, W)
               + un_row(torch.bmm(per_row(grw, 2), Rw), 2, BN, H, W)).reshape(BN, S, d)
    dRh = torch.bmm(per_row(grh, 1).transpose(1, 2), per_row(q4, 1))          # [H, H, d]
    dRw = torch.bmm(per_row(grw, 2).transpose(1, 2), per_row(q4, 2))          # [W, W, d]
    grad_rel_pos_h = torch.zeros_like(inputs["rel_pos_h"]).index_add_(0, idx_h.reshape(-1), dRh.reshape(-1, d))
    grad_rel_pos_w = torch.zeros_like(inputs["rel_pos_w"]).index_add_(0, idx_w.reshape(-1), dRw.reshape(-1, d))

    # ---- qkv projection
    dqkv = torch.stack((dQ, dK, dV)).view(3, B, heads, S, d).permute(1, 3, 0, 2, 4).reshape(B * S, 3 * C)
    return {"grad_hidden_states": (dqkv @ w_qkv).view(B, H, W, C),
            "grad_qkv_weight": dqkv.t() @ X,
            "grad_qkv_bias": dqkv.sum(0),
            "grad_proj_weight": grad_proj_weight,
            "grad_proj_bias": grad_proj_bias,
            "grad_rel_pos_h": grad_rel_pos_h,
            "grad_rel_pos_w": grad_rel_pos_w}


class SamAttention(nn.Module):
    """SAM Attention (use_rel_pos=True) with its weights as parameters; input x: [B, H, W, C]."""

    def __init__(self, inputs: Tensors, heads: int = HEADS):
        super().__init__()
        self.heads = heads
        for name in WRT[1:]:
            setattr(self, name, nn.Parameter(inputs[name].detach().clone()))
        self.register_buffer("scale", inputs["scale"].detach().clone())
        H, W = inputs["hidden_states"].shape[1:3]
        device = inputs["hidden_states"].device
        self.register_buffer("idx_h", rel_index(H, device).clone())
        self.register_buffer("idx_w", rel_index(W, device).clone())

    def parameters_wrt(self) -> list[nn.Parameter]:
        """The six parameters in the order of WRT[1:]."""
        return [getattr(self, name) for name in WRT[1:]]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, H, W, _ = x.shape
        qkv = F.linear(x, self.qkv_weight, self.qkv_bias).reshape(B, H * W, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.reshape(3, B * self.heads, H * W, -1).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        Rh, Rw = self.rel_pos_h[self.idx_h], self.rel_pos_w[self.idx_w]
        r_q = q.reshape(B * self.heads, H, W, -1)
        rel_h = torch.einsum("bhwc,hkc->bhwk", r_q, Rh)
        rel_w = torch.einsum("bhwc,wkc->bhwk", r_q, Rw)
        attn = (attn.view(-1, H, W, H, W) + rel_h[:, :, :, :, None] + rel_w[:, :, :, None, :]).view(-1, H * W, H * W)
        attn = attn.softmax(dim=-1)
        out = (attn @ v).view(B, self.heads, H, W, -1).permute(0, 2, 3, 1, 4).reshape(B, H, W, -1)
        return F.linear(out, self.proj_weight, self.proj_bias)


def autograd_backward(module: nn.Module, params: list[torch.Tensor], inputs: Tensors) -> Tensors:
    """The seven gradients by autograd through ``module`` (possibly compiled) at the set's inputs."""
    with torch.enable_grad():
        x = inputs["hidden_states"].detach().requires_grad_()
        out = module(x)
        grads = torch.autograd.grad(out, [x, *params], inputs["grad_output"])
    return dict(zip(OUTPUTS, grads))


def oracle_backward(inputs: Tensors, heads: int = HEADS) -> Tensors:
    """The oracle: autograd over tools/oracle_workloads.sam_attention, in float64."""
    with torch.enable_grad():
        leaves = {name: inputs[name].detach().to(torch.float64).requires_grad_() for name in WRT}
        out = ow.sam_attention(leaves["hidden_states"], leaves["qkv_weight"], leaves["qkv_bias"],
                               leaves["proj_weight"], leaves["proj_bias"], leaves["rel_pos_h"],
                               leaves["rel_pos_w"], inputs["scale"].to(torch.float64), heads)
        grads = torch.autograd.grad(out, [leaves[n] for n in WRT], inputs["grad_output"].to(torch.float64))
    return dict(zip(OUTPUTS, grads))


# ------------------------------------------------------------------ self-test

def random_inputs(b: int, h: int, w: int, hidden: int, heads: int, seed: int) -> Tensors:
    """float64 inputs in the oracle's distributions (any hidden size / head count)."""
    g = torch.Generator().manual_seed(seed)
    d = hidden // heads
    t = {"grad_output": ow.data(g, b, h, w, hidden), "hidden_states": ow.data(g, b, h, w, hidden),
         "qkv_weight": ow.weight(g, hidden, 3 * hidden, hidden), "qkv_bias": ow.bias(g, 3 * hidden),
         "proj_weight": ow.weight(g, hidden, hidden, hidden), "proj_bias": ow.bias(g, hidden),
         "rel_pos_h": ow.weight(g, d, 2 * h - 1, d), "rel_pos_w": ow.weight(g, d, 2 * w - 1, d),
         "scale": torch.tensor(d ** -0.5)}
    return {k: v.to(torch.float64) for k, v in t.items()}


def rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    """||a - b|| / ||b|| (absolute when ||b|| = 0)."""
    ref = float(b.norm())
    err = float((a - b).norm())
    return err / ref if ref > 0 else err


SELFTEST_CASES = [  # (batch, height, width, hidden, heads)
    (1, 4, 4, HIDDEN, HEADS), (2, 5, 3, HIDDEN, HEADS), (1, 7, 7, HIDDEN, HEADS),
    (1, 1, 1, 32, 4), (2, 3, 5, 32, 4), (3, 6, 2, 48, 2), (1, 8, 8, 64, 8),
]


def selftest(tol: float = 1e-10) -> bool:
    """Explicit backward and autograd through SamAttention vs autograd over the oracle, float64."""
    ok = True
    for seed, (b, h, w, hidden, heads) in enumerate(SELFTEST_CASES):
        inputs = random_inputs(b, h, w, hidden, heads, seed)
        want = oracle_backward(inputs, heads)
        explicit = sam_backward_explicit(inputs, heads)
        module = SamAttention(inputs, heads)
        via_module = autograd_backward(module, module.parameters_wrt(), inputs)
        worst_e = max(rel_l2(explicit[n], want[n]) for n in OUTPUTS)
        worst_m = max(rel_l2(via_module[n], want[n]) for n in OUTPUTS)
        good = worst_e <= tol and worst_m <= tol and all(explicit[n].shape == want[n].shape for n in OUTPUTS)
        ok &= good
        print(f"  B={b} H={h} W={w} hidden={hidden} heads={heads}: explicit {worst_e:.2e}, "
              f"module autograd {worst_m:.2e}  {'ok' if good else 'FAIL'}")
    print(f"sam_reference selftest: {'PASS' if ok else 'FAIL'} (float64, tol {tol:g})")
    return ok


def main() -> int:
    """CLI: --selftest."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--selftest", action="store_true", help="check against autograd in float64")
    args = parser.parse_args()
    if not args.selftest:
        parser.print_help()
        return 2
    return 0 if selftest() else 1


if __name__ == "__main__":
    sys.exit(main())
