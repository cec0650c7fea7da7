"""The three benchmark workloads: shapes, inputs, float64 references and work counts.

Inputs are drawn exactly as the oracle (tools/oracle_workloads.py) draws
them — same helpers, same order, so the same seed gives the same tensors —
but without the oracle's CPU float64 reference, which is too slow at the
benchmark shapes.  The reference is computed instead with the oracle's own
modules and functions (``CViTModel``, ``nn.Conv3d`` via ``load_module``,
``sam_attention`` + autograd) in float64 on the benchmark device.
``check_against_oracle`` proves the two paths agree (identical inputs,
references within 1e-12) at the oracle's small default shapes.

Work counts (2 FLOPs per multiply-add; elementwise work — bias, softmax,
layernorm, min, exp — is not counted):

* conv3d:  2·B·24·C·27·D'·H'·W'  (D' = D-2 etc.)
* CViT:    patch conv 2·B·E·(C·P²)·G² + projection 2·B·(E·G²)·E
           + per layer [qkv 2·B·T·E·3E + scores and context 2·2·B·T²·E
           + out-proj 2·B·T·E² + feed-forward 2·2·B·T·E·F] · L + classifier 2·B·E·K
           (E 128, T 2 tokens, F 512, L 6, K 1000, P 4, G = image/P)
* SAM-HQ backward (N = B·S tokens, S = H·W, BN = B·heads, d 64, C 768):
           projections 22·N·C²  (qkv forward 6NC², grad_proj_weight 2NC²,
           dO = g·Wp 2NC², grad_qkv_weight 6NC², grad_hidden 6NC²; the
           forward's output projection is not needed and not counted)
           + attention 12·BN·S²·d  (q·kᵀ, P·V, dP, dV, dQ, dK)
           + relative position 6·BN·S·(H+W)·d  (rel_h/rel_w, their dq terms,
           the table gradients).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import oracle_workloads as ow  # noqa: E402  (the oracle)

import sam_reference  # noqa: E402

Tensors = dict[str, torch.Tensor]
Axes = dict[str, int]

CVIT = {"embed": 128, "heads": 4, "layers": 6, "ff": 512, "classes": 1000, "patch": 4, "tokens": 2}
CONV_OUT = 24


@dataclass(frozen=True)
class Shape:
    """One benchmark shape: its label, the oracle's axes, and whether it is the headline shape."""

    label: str
    axes: Axes
    primary: bool = False


@dataclass(frozen=True)
class Workload:
    """A benchmark workload (the spec's basename is ``name``)."""

    key: str
    name: str
    title: str
    make_inputs: Callable[[Axes, torch.Generator], Tensors]
    reference: Callable[[Tensors], Tensors]
    flops: Callable[[Axes], int]

    @property
    def spec(self) -> Path:
        """The spec file kbc compiles."""
        return REPO / "specs" / f"{self.name}.kb"


# ------------------------------------------------------------------ shapes

SAM_SHAPES = [(7, 7, 1), (7, 7, 64), (14, 14, 1), (14, 14, 2), (14, 14, 8), (16, 16, 1), (16, 16, 32),
              (28, 28, 4), (32, 32, 1), (32, 32, 2), (32, 32, 4), (32, 32, 8), (48, 48, 1), (48, 48, 2),
              (56, 56, 1), (64, 64, 4)]
SAM_QUICK = [(7, 7, 1), (32, 32, 2), (64, 64, 4)]
SAM_CPU = [(7, 7, 1), (5, 3, 2)]


def sam_shape(h: int, w: int, b: int) -> Shape:
    """A SAM-HQ shape labelled HxW bB."""
    return Shape(f"{h}x{w} b{b}", {"batch_size": b, "height": h, "width": w})


def cvit_shape(b: int, primary: bool = False) -> Shape:
    """A CViT shape (3×32×32 images)."""
    return Shape(f"b{b}", {"batch_size": b, "in_channels": 3, "image_size": 32}, primary)


def conv3d_shape(b: int, d: int = 24, h: int = 32, w: int = 32, primary: bool = False) -> Shape:
    """A conv3d shape (3 input channels)."""
    label = f"b{b} 3x{d}x{h}x{w}"
    return Shape(label, {"batch_size": b, "in_channels": 3, "d": d, "h": h, "w": w}, primary)


def parse_sam_list(text: str) -> list[tuple[int, int, int]]:
    """'64x64x4,7x7x1' -> [(64, 64, 4), (7, 7, 1)] (H x W x batch)."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        m = re.fullmatch(r"(\d+)x(\d+)x(\d+)", item)
        if not m:
            raise ValueError(f"--sam-shapes: {item!r} is not HxWxB")
        out.append(tuple(int(g) for g in m.groups()))
    return out


def shapes_for(key: str, device: torch.device, quick: bool, sam_shapes: str | None = None,
               headline: bool = False) -> list[Shape]:
    """The shapes to run: GPU benchmark shapes (quick or headline: headline only), or small ones on the CPU."""
    quick = quick or headline
    if key == "cvit":
        if device.type != "cuda":
            return [cvit_shape(2, primary=True)]
        return [cvit_shape(10, True)] + ([] if quick else [cvit_shape(1), cvit_shape(64)])
    if key == "conv3d":
        if device.type != "cuda":
            return [conv3d_shape(2, 6, 8, 8, primary=True)]
        return [conv3d_shape(128, primary=True)] + ([] if quick else [conv3d_shape(16)])
    if key == "sam":
        if sam_shapes:
            chosen = SAM_SHAPES if sam_shapes == "all" else parse_sam_list(sam_shapes)
        elif device.type != "cuda":
            chosen = SAM_CPU
        else:
            chosen = SAM_QUICK if quick else SAM_SHAPES
        return [sam_shape(*s) for s in chosen]
    raise KeyError(key)


# ------------------------------------------------------------------ inputs (mirroring the oracle's draws)

def conv3d_inputs(ax: Axes, g: torch.Generator) -> Tensors:
    """x, weight, bias as oracle_workloads.conv3d_min_softmax draws them."""
    b, c, d, h, w = (ax[k] for k in ("batch_size", "in_channels", "d", "h", "w"))
    return {"x": ow.data(g, b, c, d, h, w), "weight": ow.weight(g, c * 27, CONV_OUT, c, 3, 3, 3),
            "bias": ow.bias(g, CONV_OUT)}


def cvit_inputs(ax: Axes, g: torch.Generator) -> Tensors:
    """The CViT inputs as oracle_workloads.cvit draws them."""
    b, c, s = ax["batch_size"], ax["in_channels"], ax["image_size"]
    e, layers, ff, classes, patch = (CVIT[k] for k in ("embed", "layers", "ff", "classes", "patch"))
    n_patches = (s // patch) ** 2
    return {
        "x": ow.data(g, b, c, s, s),
        "conv_w": ow.weight(g, c * patch * patch, e, c, patch, patch), "conv_b": ow.bias(g, e),
        "proj_w": ow.weight(g, e * n_patches, e, e * n_patches), "proj_b": ow.bias(g, e),
        "cls_token": ow.data(g, e),
        "attn_in_w": ow.weight(g, e, layers, 3 * e, e), "attn_in_b": ow.bias(g, layers, 3 * e),
        "attn_out_w": ow.weight(g, e, layers, e, e), "attn_out_b": ow.bias(g, layers, e),
        "norm1_w": ow.norm_weight(g, layers, e), "norm1_b": ow.norm_bias(g, layers, e),
        "norm2_w": ow.norm_weight(g, layers, e), "norm2_b": ow.norm_bias(g, layers, e),
        "ff1_w": ow.weight(g, e, layers, ff, e), "ff1_b": ow.bias(g, layers, ff),
        "ff2_w": ow.weight(g, ff, layers, e, ff), "ff2_b": ow.bias(g, layers, e),
        "fc_w": ow.weight(g, e, classes, e), "fc_b": ow.bias(g, classes),
    }


def sam_inputs(ax: Axes, g: torch.Generator) -> Tensors:
    """The SAM-HQ backward inputs as oracle_workloads.sam_hq_attn_relpos_bwd draws them."""
    b, h, w = ax["batch_size"], ax["height"], ax["width"]
    hidden, d = sam_reference.HIDDEN, sam_reference.HIDDEN // sam_reference.HEADS
    return {"grad_output": ow.data(g, b, h, w, hidden), "hidden_states": ow.data(g, b, h, w, hidden),
            "qkv_weight": ow.weight(g, hidden, 3 * hidden, hidden), "qkv_bias": ow.bias(g, 3 * hidden),
            "proj_weight": ow.weight(g, hidden, hidden, hidden), "proj_bias": ow.bias(g, hidden),
            "rel_pos_h": ow.weight(g, d, 2 * h - 1, d), "rel_pos_w": ow.weight(g, d, 2 * w - 1, d),
            "scale": torch.tensor(d ** -0.5, dtype=torch.float32)}


# ------------------------------------------------------------------ PyTorch modules (peers and references)

class Conv3dMinSoftmax(nn.Module):
    """KernelBench L2/24 ``Model``: Conv3d(in, 24, 3) -> min over depth -> softmax over channels."""

    def __init__(self, in_channels: int, out_channels: int = CONV_OUT, kernel_size: int = 3, dim: int = 2):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = torch.min(x, dim=self.dim)[0]
        return torch.softmax(x, dim=1)


def conv3d_module(inputs: Tensors, dtype: torch.dtype = torch.float32) -> nn.Module:
    """The KernelBench model on the inputs' device, holding a copy of the set's weights."""
    device = inputs["x"].device
    model = Conv3dMinSoftmax(inputs["x"].shape[1]).to(device=device, dtype=dtype)
    return ow.load_module(model, {"conv.weight": inputs["weight"], "conv.bias": inputs["bias"]}).to(dtype)


def cvit_module(inputs: Tensors, dtype: torch.dtype = torch.float32) -> nn.Module:
    """The oracle's CViTModel (KernelBench L3/32, verbatim), left in training mode as constructed."""
    x = inputs["x"]
    model = ow.CViTModel(num_classes=CVIT["classes"], embed_dim=CVIT["embed"], num_heads=CVIT["heads"],
                         num_layers=CVIT["layers"], mlp_ratio=CVIT["ff"] / CVIT["embed"],
                         patch_size=CVIT["patch"], in_channels=x.shape[1], image_size=x.shape[-1])
    model = model.to(device=x.device, dtype=dtype)
    return ow.load_module(model, ow.cvit_state(inputs)).to(dtype)


# ------------------------------------------------------------------ float64 references (oracle functions)

def conv3d_reference(inputs: Tensors) -> Tensors:
    """softmax(min_z(Conv3d(x)), dim=1) in float64 with the oracle's nn.Conv3d."""
    model = conv3d_module(inputs, torch.float64)
    with torch.no_grad():
        return {"out": model(ow.f64(inputs["x"]))}


def cvit_reference(inputs: Tensors) -> Tensors:
    """The oracle's CViTModel in float64 (training mode as built; dropout is 0)."""
    model = cvit_module(inputs, torch.float64)
    with torch.no_grad():
        return {"out": model(ow.f64(inputs["x"]))}


def sam_reference_grads(inputs: Tensors) -> Tensors:
    """Autograd over the oracle's sam_attention in float64."""
    return sam_reference.oracle_backward(inputs, sam_reference.HEADS)


# ------------------------------------------------------------------ FLOPs (see the module docstring)

def conv3d_flops(ax: Axes) -> int:
    """2·B·24·C·27·D'·H'·W'."""
    b, c, d, h, w = (ax[k] for k in ("batch_size", "in_channels", "d", "h", "w"))
    return 2 * b * CONV_OUT * c * 27 * (d - 2) * (h - 2) * (w - 2)


def cvit_flops(ax: Axes) -> int:
    """Every linear / conv / attention contraction of the CViT forward."""
    b, c, s = ax["batch_size"], ax["in_channels"], ax["image_size"]
    e, ff, L, k, p, t = (CVIT[n] for n in ("embed", "ff", "layers", "classes", "patch", "tokens"))
    g2 = (s // p) ** 2
    patch_conv = 2 * b * e * (c * p * p) * g2
    projection = 2 * b * (e * g2) * e
    layer = (2 * b * t * e * 3 * e      # qkv in-projection
             + 2 * 2 * b * t * t * e    # scores q·kᵀ and context p·v (all heads)
             + 2 * b * t * e * e        # out-projection
             + 2 * 2 * b * t * e * ff)  # feed-forward, two linears
    classifier = 2 * b * e * k
    return patch_conv + projection + L * layer + classifier


def sam_flops(ax: Axes) -> int:
    """22·N·C² + 12·BN·S²·d + 6·BN·S·(H+W)·d."""
    b, h, w = ax["batch_size"], ax["height"], ax["width"]
    c, heads = sam_reference.HIDDEN, sam_reference.HEADS
    d, s = c // heads, h * w
    n, bn = b * s, b * heads
    return 22 * n * c * c + 12 * bn * s * s * d + 6 * bn * s * (h + w) * d


WORKLOADS = {
    "cvit": Workload("cvit", "cvit", "CViT (KernelBench L3/32)", cvit_inputs, cvit_reference, cvit_flops),
    "conv3d": Workload("conv3d", "conv3d_min_softmax", "Conv3d-min-softmax (KernelBench L2/24)",
                       conv3d_inputs, conv3d_reference, conv3d_flops),
    "sam": Workload("sam", "sam_hq_attn_relpos_bwd", "SAM-HQ attention backward (SOL-ExecBench L2/076)",
                    sam_inputs, sam_reference_grads, sam_flops),
}


def tensor_bytes(tensors: Tensors, itemsize: int | None = None) -> int:
    """Bytes of a dict of tensors (at ``itemsize`` bytes per element if given, e.g. 4 for fp32 outputs)."""
    return sum(t.numel() * (itemsize or t.element_size()) for t in tensors.values())


# ------------------------------------------------------------------ consistency with the oracle and the specs

def spec_inputs(spec: Path) -> list[str]:
    """The ``input`` names a spec file declares, in order."""
    return re.findall(r"^input\s+(\w+)", spec.read_text(), flags=re.M)


def check_against_oracle(seed: int = 20261) -> list[str]:
    """Problems found (empty when fine): inputs vs the oracle's and the spec's, references vs the oracle's."""
    problems = []
    for w in WORKLOADS.values():
        oracle = ow.REGISTRY[w.name]
        want_in, want_out = oracle.build(dict(oracle.axes), torch.Generator().manual_seed(seed))
        mine = w.make_inputs(dict(oracle.axes), torch.Generator().manual_seed(seed))
        if list(mine) != list(want_in) or list(mine) != spec_inputs(w.spec):
            problems.append(f"{w.key}: input names {list(mine)} vs oracle {list(want_in)} / "
                            f"spec {spec_inputs(w.spec)}")
            continue
        if not all(torch.equal(mine[k], want_in[k]) for k in mine):
            problems.append(f"{w.key}: inputs drawn differently from the oracle's")
            continue
        got = w.reference(mine)
        for name, exp in want_out.items():
            err = float((got[name] - exp).norm()) / max(float(exp.norm()), 1e-300)
            if name not in got or err > 1e-12:
                problems.append(f"{w.key}: reference {name} differs from the oracle's by {err:.2e}")
    return problems
