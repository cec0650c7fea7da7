"""The oracle's workloads: random float32 inputs and PyTorch float64 references.

Each workload is one function registered with ``@workload(axis=default, ...)``.
It receives the axis values and a seeded ``torch.Generator`` and returns
``(inputs, expected)``: name -> float32 tensor for the inputs (exactly the
names and shapes of the spec file of the same basename) and name -> float64
tensor for the outputs, computed by PyTorch itself — its modules, functional
ops and autograd — on the inputs upcast to float64.

Random data is uniform, scaled so that every intermediate is O(1):
activations have unit variance, weights variance 1/fan_in, biases are drawn
from [-0.5, 0.5] and LayerNorm affines from 1 ± 0.1 / ± 0.1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

Tensors = dict[str, torch.Tensor]
Axes = dict[str, int]
Builder = Callable[[Axes, torch.Generator], tuple[Tensors, Tensors]]


class AxisError(ValueError):
    """Axis values that the workload cannot be built for."""


@dataclass(frozen=True)
class Workload:
    """A registered workload: its name (the spec basename), default axes and builder."""

    name: str
    axes: Axes
    build: Builder
    summary: str


REGISTRY: dict[str, Workload] = {}


def workload(**default_axes: int) -> Callable[[Builder], Builder]:
    """Register the decorated builder under its function name with these default axes."""
    def register(build: Builder) -> Builder:
        summary = (build.__doc__ or build.__name__).strip().splitlines()[0]
        REGISTRY[build.__name__] = Workload(build.__name__, dict(default_axes), build, summary)
        return build
    return register


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AxisError(message)


# ---------------------------------------------------------------- random data

def uniform(g: torch.Generator, shape: tuple[int, ...], bound: float, center: float = 0.0) -> torch.Tensor:
    """float32 values uniform in [center - bound, center + bound), on the generator's device."""
    t = torch.rand(shape, generator=g, device=g.device, dtype=torch.float32)
    return t.mul_(2 * bound).add_(center - bound)


def data(g: torch.Generator, *shape: int) -> torch.Tensor:
    """Unit-variance activations."""
    return uniform(g, shape, math.sqrt(3.0))


def weight(g: torch.Generator, fan_in: int, *shape: int) -> torch.Tensor:
    """Weights of variance 1/fan_in (a layer keeps unit-variance activations O(1))."""
    return uniform(g, shape, math.sqrt(3.0 / fan_in))


def bias(g: torch.Generator, *shape: int) -> torch.Tensor:
    """Biases in [-0.5, 0.5)."""
    return uniform(g, shape, 0.5)


def norm_weight(g: torch.Generator, *shape: int) -> torch.Tensor:
    """LayerNorm scales in 1 ± 0.1."""
    return uniform(g, shape, 0.1, 1.0)


def norm_bias(g: torch.Generator, *shape: int) -> torch.Tensor:
    """LayerNorm shifts in ± 0.1."""
    return uniform(g, shape, 0.1)


def f64(t: torch.Tensor) -> torch.Tensor:
    """The float64 copy the reference computes on."""
    return t.to(torch.float64)


def load_module(module: nn.Module, state: Tensors) -> nn.Module:
    """Copy every parameter of ``module`` from ``state`` (strict: none may be left out)."""
    module.load_state_dict({k: f64(v) for k, v in state.items()}, strict=True)
    return module


# ------------------------------------------------------------- the three workloads

@workload(batch_size=2, in_channels=3, d=6, h=8, w=8)
def conv3d_min_softmax(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """KernelBench L2/24: softmax(min over depth of Conv3d(in_channels -> 24, k=3)(x), dim=1)."""
    b, c, d, h, w = (ax[k] for k in ("batch_size", "in_channels", "d", "h", "w"))
    _require(min(d, h, w) >= 3, "d, h and w must be >= 3 (valid 3x3x3 convolution)")
    cout, fan_in = 24, c * 27
    inputs = {"x": data(g, b, c, d, h, w),
              "weight": weight(g, fan_in, cout, c, 3, 3, 3),
              "bias": bias(g, cout)}
    conv = load_module(nn.Conv3d(c, cout, 3).double(), {"weight": inputs["weight"], "bias": inputs["bias"]})
    with torch.no_grad():
        out = torch.softmax(torch.min(conv(f64(inputs["x"])), dim=2)[0], dim=1)
    return inputs, {"out": out}


class CViTModel(nn.Module):
    """KernelBench L3/32 ConvolutionalVisionTransformer, reproduced verbatim."""

    def __init__(self, num_classes: int, embed_dim: int = 512, num_heads: int = 8, num_layers: int = 6,
                 mlp_ratio: float = 4.0, patch_size: int = 4, in_channels: int = 3, image_size: int = 32):
        super().__init__()
        self.patch_size = patch_size
        self.image_size = image_size
        self.embed_dim = embed_dim
        self.conv1 = nn.Conv2d(in_channels, embed_dim, kernel_size=patch_size, stride=patch_size)
        num_patches = (image_size // patch_size) ** 2
        self.linear_proj = nn.Linear(embed_dim * num_patches, embed_dim)
        self.transformer_layers = nn.ModuleList([
            nn.TransformerEncoderLayer(d_model=embed_dim, nhead=num_heads,
                                       dim_feedforward=int(embed_dim * mlp_ratio), dropout=0.0,
                                       batch_first=True)
            for _ in range(num_layers)])
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.fc_out = nn.Linear(embed_dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B = x.size(0)
        x = self.conv1(x)
        x = x.flatten(start_dim=1)
        x = self.linear_proj(x)
        cls_tokens = self.cls_token.expand(B, -1, -1)
        x = torch.cat((cls_tokens, x.unsqueeze(1)), dim=1)
        for layer in self.transformer_layers:
            x = layer(x)
        return self.fc_out(x[:, 0])


def cvit_state(inputs: Tensors) -> Tensors:
    """CViTModel's state dict from the spec's inputs (the per-layer tensors stacked on dim 0)."""
    e, layers = inputs["cls_token"].shape[0], inputs["attn_in_w"].shape[0]
    state = {"conv1.weight": inputs["conv_w"], "conv1.bias": inputs["conv_b"],
             "linear_proj.weight": inputs["proj_w"], "linear_proj.bias": inputs["proj_b"],
             "cls_token": inputs["cls_token"].view(1, 1, e),
             "fc_out.weight": inputs["fc_w"], "fc_out.bias": inputs["fc_b"]}
    per_layer = {"self_attn.in_proj_weight": "attn_in_w", "self_attn.in_proj_bias": "attn_in_b",
                 "self_attn.out_proj.weight": "attn_out_w", "self_attn.out_proj.bias": "attn_out_b",
                 "norm1.weight": "norm1_w", "norm1.bias": "norm1_b",
                 "norm2.weight": "norm2_w", "norm2.bias": "norm2_b",
                 "linear1.weight": "ff1_w", "linear1.bias": "ff1_b",
                 "linear2.weight": "ff2_w", "linear2.bias": "ff2_b"}
    for i in range(layers):
        for param, name in per_layer.items():
            state[f"transformer_layers.{i}.{param}"] = inputs[name][i]
    return state


@workload(batch_size=2, in_channels=3, image_size=32)
def cvit(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """KernelBench L3/32 ConvolutionalVisionTransformer (embed 128, 4 heads, 6 layers, ff 512, 1000 classes)."""
    b, c, s = ax["batch_size"], ax["in_channels"], ax["image_size"]
    e, heads, layers, ff, classes, patch = 128, 4, 6, 512, 1000, 4
    _require(s % patch == 0, f"image_size must be a multiple of the patch size {patch}")
    n_patches = (s // patch) ** 2
    inputs = {
        "x": data(g, b, c, s, s),
        "conv_w": weight(g, c * patch * patch, e, c, patch, patch), "conv_b": bias(g, e),
        "proj_w": weight(g, e * n_patches, e, e * n_patches), "proj_b": bias(g, e),
        "cls_token": data(g, e),
        "attn_in_w": weight(g, e, layers, 3 * e, e), "attn_in_b": bias(g, layers, 3 * e),
        "attn_out_w": weight(g, e, layers, e, e), "attn_out_b": bias(g, layers, e),
        "norm1_w": norm_weight(g, layers, e), "norm1_b": norm_bias(g, layers, e),
        "norm2_w": norm_weight(g, layers, e), "norm2_b": norm_bias(g, layers, e),
        "ff1_w": weight(g, e, layers, ff, e), "ff1_b": bias(g, layers, ff),
        "ff2_w": weight(g, ff, layers, e, ff), "ff2_b": bias(g, layers, e),
        "fc_w": weight(g, e, classes, e), "fc_b": bias(g, classes),
    }
    state = cvit_state(inputs)
    model = CViTModel(num_classes=classes, embed_dim=e, num_heads=heads, num_layers=layers, mlp_ratio=4.0,
                      patch_size=patch, in_channels=c, image_size=s).double()
    load_module(model, state)  # left in training mode, as KernelBench runs it (dropout is 0)
    x = f64(inputs["x"])
    with torch.no_grad():
        # The patch conv by hand: proves the module computes with our weights.
        patches = x.reshape(b, c, s // patch, patch, s // patch, patch)
        manual = torch.einsum("bcipjq,ecpq->beij", patches, f64(inputs["conv_w"]))
        manual += f64(inputs["conv_b"])[:, None, None]
        assert torch.allclose(model.conv1(x), manual, rtol=1e-12, atol=1e-12), "conv1 ignores conv_w/conv_b"
        out = model(x)
    return inputs, {"out": out}


def sam_rel_pos(q_size: int, k_size: int, rel_pos: torch.Tensor) -> torch.Tensor:
    """SAM's get_rel_pos: rel_pos rows by query-key offset, [q_size, k_size, C] (no resize needed)."""
    assert rel_pos.shape[0] == 2 * max(q_size, k_size) - 1
    q_coords = torch.arange(q_size)[:, None] * max(k_size / q_size, 1.0)
    k_coords = torch.arange(k_size)[None, :] * max(q_size / k_size, 1.0)
    relative_coords = (q_coords - k_coords) + (k_size - 1) * max(q_size / k_size, 1.0)
    return rel_pos[relative_coords.long()]


def sam_attention(x: torch.Tensor, qkv_weight: torch.Tensor, qkv_bias: torch.Tensor,
                  proj_weight: torch.Tensor, proj_bias: torch.Tensor, rel_pos_h: torch.Tensor,
                  rel_pos_w: torch.Tensor, scale: torch.Tensor, heads: int) -> torch.Tensor:
    """SAM(-HQ) image-encoder Attention.forward with use_rel_pos=True, x: [B, H, W, C]."""
    B, H, W, _ = x.shape
    qkv = F.linear(x, qkv_weight, qkv_bias).reshape(B, H * W, 3, heads, -1).permute(2, 0, 3, 1, 4)
    q, k, v = qkv.reshape(3, B * heads, H * W, -1).unbind(0)
    attn = (q * scale) @ k.transpose(-2, -1)
    # add_decomposed_rel_pos
    Rh, Rw = sam_rel_pos(H, H, rel_pos_h), sam_rel_pos(W, W, rel_pos_w)
    r_q = q.reshape(B * heads, H, W, -1)
    rel_h = torch.einsum("bhwc,hkc->bhwk", r_q, Rh)
    rel_w = torch.einsum("bhwc,wkc->bhwk", r_q, Rw)
    attn = (attn.view(-1, H, W, H, W) + rel_h[:, :, :, :, None] + rel_w[:, :, :, None, :]).view(-1, H * W, H * W)
    attn = attn.softmax(dim=-1)
    out = (attn @ v).view(B, heads, H, W, -1).permute(0, 2, 3, 1, 4).reshape(B, H, W, -1)
    return F.linear(out, proj_weight, proj_bias)


@workload(batch_size=1, height=4, width=4)
def sam_hq_attn_relpos_bwd(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """SOL-ExecBench L2/076: SAM-HQ attention with decomposed 2-D rel-pos, backward (autograd)."""
    b, h, w = ax["batch_size"], ax["height"], ax["width"]
    hidden, heads, head_dim = 768, 12, 64
    inputs = {"grad_output": data(g, b, h, w, hidden),
              "hidden_states": data(g, b, h, w, hidden),
              "qkv_weight": weight(g, hidden, 3 * hidden, hidden), "qkv_bias": bias(g, 3 * hidden),
              "proj_weight": weight(g, hidden, hidden, hidden), "proj_bias": bias(g, hidden),
              "rel_pos_h": weight(g, head_dim, 2 * h - 1, head_dim),
              "rel_pos_w": weight(g, head_dim, 2 * w - 1, head_dim),
              "scale": torch.tensor(head_dim ** -0.5, dtype=torch.float32)}
    wrt = ("hidden_states", "qkv_weight", "qkv_bias", "proj_weight", "proj_bias", "rel_pos_h", "rel_pos_w")
    leaves = {name: f64(inputs[name]).requires_grad_() for name in wrt}
    out = sam_attention(leaves["hidden_states"], leaves["qkv_weight"], leaves["qkv_bias"],
                        leaves["proj_weight"], leaves["proj_bias"], leaves["rel_pos_h"], leaves["rel_pos_w"],
                        f64(inputs["scale"]), heads)
    grads = torch.autograd.grad(out, [leaves[n] for n in wrt], f64(inputs["grad_output"]))
    return inputs, {f"grad_{name}": grad for name, grad in zip(wrt, grads)}


# ------------------------------------------------------------- example specs

@workload(m=5, k=7, n=6)
def matmul_bias_gelu(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """out = gelu(a @ w^T + bias) (exact erf GELU)."""
    m, k, n = ax["m"], ax["k"], ax["n"]
    inputs = {"a": data(g, m, k), "w": weight(g, k, n, k), "bias": bias(g, n)}
    out = F.gelu(F.linear(f64(inputs["a"]), f64(inputs["w"]), f64(inputs["bias"])))
    return inputs, {"out": out}


@workload(batch=3, m=4, k=5, n=6)
def batched_matmul(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """out = bmm(a, b)."""
    bt, m, k, n = ax["batch"], ax["m"], ax["k"], ax["n"]
    inputs = {"a": data(g, bt, m, k), "b": data(g, bt, k, n)}
    return inputs, {"out": torch.bmm(f64(inputs["a"]), f64(inputs["b"]))}


@workload(rows=6, cols=10)
def layernorm(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """out = layer_norm(x, (cols,), gamma, beta, eps=1e-5) over the last axis."""
    rows, cols = ax["rows"], ax["cols"]
    inputs = {"x": uniform(g, (rows, cols), math.sqrt(3.0), 1.0),  # off-centre: the mean matters
              "gamma": norm_weight(g, cols), "beta": norm_bias(g, cols)}
    out = F.layer_norm(f64(inputs["x"]), (cols,), f64(inputs["gamma"]), f64(inputs["beta"]), eps=1e-5)
    return inputs, {"out": out}


@workload(batch=2, cin=3, h=9, w=11)
def conv2d_strided(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """out = Conv2d(cin -> 8, kernel 3, stride 2)(x)."""
    b, c, h, w = ax["batch"], ax["cin"], ax["h"], ax["w"]
    _require(min(h, w) >= 3, "h and w must be >= 3 (valid 3x3 convolution)")
    inputs = {"x": data(g, b, c, h, w), "weight": weight(g, c * 9, 8, c, 3, 3), "bias": bias(g, 8)}
    conv = load_module(nn.Conv2d(c, 8, 3, stride=2).double(), {"weight": inputs["weight"], "bias": inputs["bias"]})
    with torch.no_grad():
        out = conv(f64(inputs["x"]))
    return inputs, {"out": out}


@workload(a=3, b=5, c=4)
def softmax_middle(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """out = softmax(x, dim=1) over the middle axis."""
    inputs = {"x": data(g, ax["a"], ax["b"], ax["c"])}
    return inputs, {"out": torch.softmax(f64(inputs["x"]), dim=1)}


def relpos_gather_ref(q: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """out[i, j] = sum_c q[i, c] * table[i - j + n - 1, c], by torch indexing."""
    n = q.shape[0]
    idx = torch.arange(n)[:, None] - torch.arange(n)[None, :] + (n - 1)
    return torch.einsum("ic,ijc->ij", q, table[idx])


@workload(n=5, d=8)
def relpos_gather(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """out[i, j] = sum_c q[i, c] * table[i - j + n - 1, c]."""
    n, d = ax["n"], ax["d"]
    inputs = {"q": data(g, n, d), "table": data(g, 2 * n - 1, d)}
    return inputs, {"out": relpos_gather_ref(f64(inputs["q"]), f64(inputs["table"]))}


@workload(n=5, d=8)
def relpos_scatter(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """grad_table = d(relpos_gather)/d(table) applied to grad (autograd; a scatter-add)."""
    n, d = ax["n"], ax["d"]
    inputs = {"q": data(g, n, d), "grad": data(g, n, n)}
    table = torch.zeros(2 * n - 1, d, dtype=torch.float64, requires_grad=True)
    out = relpos_gather_ref(f64(inputs["q"]), table)
    (grad_table,) = torch.autograd.grad(out, [table], f64(inputs["grad"]))
    return inputs, {"grad_table": grad_table}


@workload(batch=4, d_in=6, d_hidden=16, d_out=5)
def mlp_relu(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """out = linear(relu(linear(x, w1, b1)), w2, b2)."""
    b, di, dh, do = ax["batch"], ax["d_in"], ax["d_hidden"], ax["d_out"]
    inputs = {"x": data(g, b, di), "w1": weight(g, di, dh, di), "b1": bias(g, dh),
              "w2": weight(g, dh, do, dh), "b2": bias(g, do)}
    hidden = F.relu(F.linear(f64(inputs["x"]), f64(inputs["w1"]), f64(inputs["b1"])))
    return inputs, {"out": F.linear(hidden, f64(inputs["w2"]), f64(inputs["b2"]))}


def probabilities(g: torch.Generator, *shape: int) -> torch.Tensor:
    """Rows of positive values summing to 1 (soft targets)."""
    p = torch.rand(*shape, generator=g) + 0.05
    return p / p.sum(dim=-1, keepdim=True)


@workload(bsz=5, c=7)
def nll_loss(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """loss = -(t * logp).sum() / bsz: soft-target NLL, a rank-0 output."""
    b, c = ax["bsz"], ax["c"]
    logp = torch.log_softmax(data(g, b, c), dim=-1)
    inputs = {"t": probabilities(g, b, c), "logp": logp}
    return inputs, {"loss": -(f64(inputs["t"]) * f64(logp)).sum() / b}


@workload(bsz=5, c=7)
def cross_entropy(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """loss = F.cross_entropy(logits, t) with probabilities as the target (mean over the batch)."""
    b, c = ax["bsz"], ax["c"]
    inputs = {"logits": data(g, b, c), "t": probabilities(g, b, c)}
    return inputs, {"loss": F.cross_entropy(f64(inputs["logits"]), f64(inputs["t"]))}


@workload(rows=6, cols=9)
def global_norm(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """mean and largest deviation of all of x; y = scale * (x - mean) / peak."""
    _require(ax["rows"] * ax["cols"] >= 2, "x needs at least 2 elements (one element deviates by 0 from the mean)")
    inputs = {"x": data(g, ax["rows"], ax["cols"]), "scale": uniform(g, (), 1.0, 2.0)}
    x = f64(inputs["x"])
    mean = x.mean()
    peak = (x - mean).abs().max()
    return inputs, {"peak": peak, "y": f64(inputs["scale"]) * (x - mean) / peak}


@workload(n=2, c=3, h=5, w=3)
def pixel_shuffle(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """y = PixelShuffle(2)(x): channels c*4 unflattened into 2x2 blocks."""
    inputs = {"x": data(g, ax["n"], ax["c"] * 4, ax["h"], ax["w"])}
    return inputs, {"y": F.pixel_shuffle(f64(inputs["x"]), 2)}


@workload(m=5, d=12, ff=20)
def swiglu(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """y = w2(silu(w1 x) * w3 x), bias-free linear layers."""
    m, d, ff = ax["m"], ax["d"], ax["ff"]
    inputs = {"x": data(g, m, d), "w1": weight(g, d, ff, d), "w3": weight(g, d, ff, d), "w2": weight(g, ff, d, ff)}
    x, w1, w3, w2 = (f64(inputs[k]) for k in ("x", "w1", "w3", "w2"))
    return inputs, {"y": F.linear(F.silu(F.linear(x, w1)) * F.linear(x, w3), w2)}


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T + bias) v over the last two dimensions (bias -inf: masked)."""
    return torch.softmax(q @ k.transpose(-2, -1) + bias, dim=-1) @ v


@workload(batch=2, heads=3, seq=11)
def attention_causal(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """o = softmax(q k^T / 8, keys j <= query i) v per batch and head (SDPA with is_causal)."""
    b, h, s = ax["batch"], ax["heads"], ax["seq"]
    inputs = {n: data(g, b, h, s, 64) for n in ("q", "k", "v")}
    q, k, v = (f64(inputs[n]) for n in ("q", "k", "v"))
    mask = torch.full((s, s), float("-inf"), dtype=torch.float64, device=q.device).triu(1)
    return inputs, {"o": _attention(q / 8.0, k, v, mask)}


@workload(batch=2, heads=3, seq=11)
def attention_bwd(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """dq, dk, dv of o = softmax(q k^T / 8) v for the output gradient go (autograd)."""
    b, h, s = ax["batch"], ax["heads"], ax["seq"]
    inputs = {n: data(g, b, h, s, 64) for n in ("q", "k", "v", "go")}
    q, k, v = (f64(inputs[n]).requires_grad_() for n in ("q", "k", "v"))
    with torch.enable_grad():
        o = _attention(q / 8.0, k, v, torch.zeros((), dtype=torch.float64, device=q.device))
        dq, dk, dv = torch.autograd.grad(o, (q, k, v), f64(inputs["go"]))
    return inputs, {"dq": dq, "dk": dk, "dv": dv}


@workload(batch=2, heads=3, seq=11)
def attention_causal_bwd(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """dq, dk, dv of the causal o = softmax(q k^T / 8, keys j <= query i) v for the output gradient go."""
    b, h, s = ax["batch"], ax["heads"], ax["seq"]
    inputs = {n: data(g, b, h, s, 64) for n in ("q", "k", "v", "go")}
    q, k, v = (f64(inputs[n]).requires_grad_() for n in ("q", "k", "v"))
    mask = torch.full((s, s), float("-inf"), dtype=torch.float64, device=q.device).triu(1)
    with torch.enable_grad():
        dq, dk, dv = torch.autograd.grad(_attention(q / 8.0, k, v, mask), (q, k, v), f64(inputs["go"]))
    return inputs, {"dq": dq, "dk": dk, "dv": dv}


@workload(n=2, s=7)
def attention_vit(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """12 heads of 80 merged in the channel axis: out = the heads' softmax(q k^T / sqrt(80)) v, head-merged."""
    n, s = ax["n"], ax["s"]
    inputs = {t: data(g, n, s, 960) for t in ("q", "k", "v")}
    q, k, v = (f64(inputs[t]).view(n, s, 12, 80).transpose(1, 2) for t in ("q", "k", "v"))
    o = _attention(q / math.sqrt(80.0), k, v, torch.zeros((), dtype=torch.float64, device=q.device))
    return inputs, {"out": o.transpose(1, 2).reshape(n, s, 960)}


@workload(batch=2, heads=2, height=5, width=3)
def attention_relpos(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """SAM-style attention with decomposed 2-D relative-position bias; o head-merged [b, y, x, n, c], and
    the log-sum-exp of every query's scores."""
    b, n, hh, ww = ax["batch"], ax["heads"], ax["height"], ax["width"]
    inputs = {t: data(g, b, n, hh, ww, 32) for t in ("q", "k", "v")}
    inputs["rel_pos_h"] = data(g, 2 * hh - 1, 32)
    inputs["rel_pos_w"] = data(g, 2 * ww - 1, 32)
    inputs["scale"] = uniform(g, (), 0.1, 0.2)
    q, k, v, rh, rw = (f64(inputs[t]) for t in ("q", "k", "v", "rel_pos_h", "rel_pos_w"))
    ys = torch.arange(hh, device=q.device)
    xs = torch.arange(ww, device=q.device)
    Rh = rh[ys[:, None] - ys[None, :] + hh - 1]  # [y, ky, c]
    Rw = rw[xs[:, None] - xs[None, :] + ww - 1]  # [x, kx, c]
    rel_h = torch.einsum("bnyxc,ykc->bnyxk", q, Rh)
    rel_w = torch.einsum("bnyxc,xkc->bnyxk", q, Rw)
    s = f64(inputs["scale"]) * torch.einsum("bnyxc,bnklc->bnyxkl", q, k) + rel_h[..., :, None] + rel_w[..., None, :]
    s = s.reshape(b, n, hh, ww, hh * ww)
    o = torch.einsum("bnyxj,bnjc->byxnc", torch.softmax(s, dim=-1), v.reshape(b, n, hh * ww, 32))
    return inputs, {"o": o, "lse": torch.logsumexp(s, dim=-1)}


@workload(b=2, hw=7)
def group_norm(ax: Axes, g: torch.Generator) -> tuple[Tensors, Tensors]:
    """y = GroupNorm(4 groups, 12 channels, affine)(x) over [b, c, hw]."""
    b, hw = ax["b"], ax["hw"]
    inputs = {"x": uniform(g, (b, 12, hw), math.sqrt(3.0), 1.0), "gamma": norm_weight(g, 12), "beta": norm_bias(g, 12)}
    y = F.group_norm(f64(inputs["x"]), 4, f64(inputs["gamma"]), f64(inputs["beta"]), eps=1e-5)
    return inputs, {"y": y}
