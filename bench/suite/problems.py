"""The KernelBench suite: one entry per ported problem.

Each problem is a kbc spec in this folder (``<level>_<number>_<short>.kb``,
KernelBench's number and name in its header comment) and, here:

* ``axes``: the sizes at KernelBench's scale (its ``get_inputs`` /
  ``get_init_inputs`` constants, as of ScalingIntelligence/KernelBench
  commit 423217d);
* ``small``: a binding small enough for kbc's CPU interpreter (CI);
* ``make_inputs(ax, g)``: every input of the spec, by name, float32, drawn
  from the generator ``g`` on its device.  Parameters (weights, biases, norm
  affines) are inputs too;
* ``reference(t)``: the PyTorch computation on the same named tensors,
  returning the spec's outputs by name.  It follows the KernelBench model
  (written anew here with torch.nn.functional), works in any float dtype
  (suite.py computes the correctness reference in float64) and is what
  PyTorch eager and torch.compile run.

Inputs are well conditioned: activations are uniform with unit variance,
weights have variance 1/fan_in, biases lie in [-0.5, 0.5], norm scales in
1 +- 0.1 and shifts in +-0.1 (as tools/oracle_workloads.py draws them); a few
problems need their own draws (probabilities, +-1 targets, class indices).
KernelBench's constructor constants (scaling factors, eps, slopes, kernel
sizes, strides) are constants of the spec.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
# the input draws the oracle tests use (uniform, data, weight, bias, norm_weight, norm_bias)
sys.path.insert(0, str(HERE.parent.parent / "tools"))
from oracle_workloads import bias, data, norm_bias, norm_weight, uniform, weight  # noqa: E402,F401

Tensors = dict[str, torch.Tensor]
Axes = dict[str, int]


@dataclass(frozen=True)
class Problem:
    """One ported KernelBench problem."""

    level: int
    number: int
    name: str                                            # KernelBench's name
    spec: str                                            # file name in bench/suite/
    category: str
    axes: Axes                                           # KernelBench scale
    small: Axes                                          # CPU-checkable binding
    make_inputs: Callable[[Axes, torch.Generator], Tensors]
    reference: Callable[[Tensors], Tensors]
    note: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)

    @property
    def key(self) -> str:
        """``L1/19`` (``X/1``: beyond KernelBench, level 0)."""
        return f"L{self.level}/{self.number}" if self.level else f"X/{self.number}"

    @property
    def path(self) -> Path:
        """The spec file."""
        return HERE / self.spec


PROBLEMS: list[Problem] = []


def problem(level: int, number: int, name: str, spec: str, category: str, axes: Axes, small: Axes,
            ref: Callable[[Tensors], Tensors], note: str = "") -> Callable:
    """Register the decorated input maker as a problem."""
    def register(make: Callable[[Axes, torch.Generator], Tensors]) -> Callable:
        PROBLEMS.append(Problem(level, number, name, spec, category, dict(axes), dict(small), make, ref, note))
        return make
    return register


# ------------------------------------------------------------------ random inputs (on the generator's device)

def probabilities(g: torch.Generator, rows: int, cols: int) -> torch.Tensor:
    """Rows of a softmax of unit-variance logits (every entry positive)."""
    return torch.softmax(data(g, rows, cols), dim=-1)


def class_indices(g: torch.Generator, n: int, classes: int) -> torch.Tensor:
    """Class indices in [0, classes), as float32 (kbc has no integer tensors)."""
    return torch.randint(0, classes, (n,), generator=g, device=g.device).to(torch.float32)


def signs(g: torch.Generator, n: int) -> torch.Tensor:
    """+-1 values."""
    return torch.randint(0, 2, (n,), generator=g, device=g.device).to(torch.float32) * 2 - 1


def square(g: torch.Generator, n: int, symmetric: bool = False, tri: str = "") -> torch.Tensor:
    """An [n, n] matrix of unit-variance values (symmetric, or upper/lower triangular)."""
    a = data(g, n, n)
    if symmetric:
        a = (a + a.T) / 2
    if tri == "upper":
        a = torch.triu(a)
    elif tri == "lower":
        a = torch.tril(a)
    return a.contiguous()


# ------------------------------------------------------------------ small reference helpers

def out(t: torch.Tensor) -> Tensors:
    """The single output 'out'."""
    return {"out": t}


def loss(t: torch.Tensor) -> Tensors:
    """The single rank-0 output 'loss'."""
    return {"loss": t}


def mish(x: torch.Tensor) -> torch.Tensor:
    """x * tanh(softplus(x)) (F.mish, written out so it runs in float64 everywhere)."""
    return x * torch.tanh(F.softplus(x))


def hardswish(x: torch.Tensor) -> torch.Tensor:
    """F.hardswish: x * relu6(x + 3) / 6."""
    return x * torch.clamp(x + 3, 0, 6) / 6


def batchnorm_train(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """BatchNorm as a freshly built module runs it (training mode: batch statistics)."""
    return F.batch_norm(x, None, None, w, b, training=True, eps=eps)


# ================================================================== level 1: matrix products

MM = "matmul"


@problem(1, 1, "Square_matrix_multiplication_", "1_1_square_matmul.kb", MM,
         dict(n=4096), dict(n=13), lambda t: out(t["a"] @ t["b"]))
def _(ax, g):
    return {"a": data(g, ax["n"], ax["n"]), "b": data(g, ax["n"], ax["n"])}


def _mk_mm(ax, g):
    return {"a": data(g, ax["m"], ax["k"]), "b": data(g, ax["k"], ax["n"])}


problem(1, 2, "Standard_matrix_multiplication_", "1_2_matmul.kb", MM, dict(m=2048, k=8192, n=4096),
        dict(m=7, k=19, n=11), lambda t: out(t["a"] @ t["b"]))(_mk_mm)


@problem(1, 3, "Batched_matrix_multiplication", "1_3_batched_matmul.kb", MM,
         dict(batch=128, m=512, k=1024, n=2048), dict(batch=3, m=5, k=9, n=7), lambda t: out(torch.bmm(t["a"], t["b"])))
def _(ax, g):
    return {"a": data(g, ax["batch"], ax["m"], ax["k"]), "b": data(g, ax["batch"], ax["k"], ax["n"])}


@problem(1, 4, "Matrix_vector_multiplication_", "1_4_matvec.kb", MM, dict(m=2048, k=1048576), dict(m=9, k=301),
         lambda t: out(t["a"] @ t["b"]))
def _(ax, g):
    return {"a": data(g, ax["m"], ax["k"]), "b": data(g, ax["k"], 1)}


@problem(1, 5, "Matrix_scalar_multiplication", "1_5_matrix_scalar.kb", MM, dict(m=65536, n=16384), dict(m=6, n=10),
         lambda t: out(t["a"] * t["s"]))
def _(ax, g):
    return {"a": data(g, ax["m"], ax["n"]), "s": torch.tensor(3.14, device=g.device)}


problem(1, 6, "Matmul_with_large_K_dimension_", "1_6_matmul_large_k.kb", MM, dict(m=256, k=524288, n=256),
        dict(m=4, k=777, n=5), lambda t: out(t["a"] @ t["b"]))(_mk_mm)
problem(1, 7, "Matmul_with_small_K_dimension_", "1_7_matmul_small_k.kb", MM, dict(m=32768, k=64, n=32768),
        dict(m=33, k=4, n=29), lambda t: out(t["a"] @ t["b"]))(_mk_mm)
problem(1, 8, "Matmul_with_irregular_shapes_", "1_8_matmul_irregular.kb", MM, dict(m=8205, k=2949, n=5921),
        dict(m=17, k=13, n=11), lambda t: out(t["a"] @ t["b"]))(_mk_mm)


@problem(1, 9, "Tall_skinny_matrix_multiplication_", "1_9_tall_skinny_matmul.kb", MM, dict(m=32768, n=32),
         dict(m=37, n=3), lambda t: out(t["a"] @ t["b"]))
def _(ax, g):
    return {"a": data(g, ax["m"], ax["n"]), "b": data(g, ax["n"], ax["m"])}


@problem(1, 10, "3D_tensor_matrix_multiplication", "1_10_tensor3d_matmul.kb", MM, dict(n=16, m=1024, k=2048, l=768),
         dict(n=2, m=5, k=7, l=6), lambda t: out(torch.matmul(t["a"], t["b"])))
def _(ax, g):
    return {"a": data(g, ax["n"], ax["m"], ax["k"]), "b": data(g, ax["k"], ax["l"])}


@problem(1, 11, "4D_tensor_matrix_multiplication", "1_11_tensor4d_matmul.kb", MM,
         dict(b=8, i=256, j=512, l=256, k=768), dict(b=2, i=3, j=4, l=5, k=6),
         lambda t: out(torch.einsum("bijl,lk->bijk", t["a"], t["w"])))
def _(ax, g):
    return {"a": data(g, ax["b"], ax["i"], ax["j"], ax["l"]), "w": data(g, ax["l"], ax["k"])}


@problem(1, 12, "Matmul_with_diagonal_matrices_", "1_12_diag_matmul.kb", MM, dict(n=4096, m=4096), dict(n=7, m=9),
         lambda t: out(t["a"].unsqueeze(1) * t["b"]))
def _(ax, g):
    return {"a": data(g, ax["n"]), "b": data(g, ax["n"], ax["m"])}


@problem(1, 13, "Matmul_for_symmetric_matrices", "1_13_symmetric_matmul.kb", MM, dict(n=4096), dict(n=12),
         lambda t: out(t["a"] @ t["b"]))
def _(ax, g):
    return {"a": square(g, ax["n"], symmetric=True), "b": square(g, ax["n"], symmetric=True)}


@problem(1, 14, "Matmul_for_upper_triangular_matrices", "1_14_triu_matmul.kb", MM, dict(n=4096), dict(n=11),
         lambda t: out(torch.triu(t["a"] @ t["b"])))
def _(ax, g):
    return {"a": square(g, ax["n"], tri="upper"), "b": square(g, ax["n"], tri="upper")}


@problem(1, 15, "Matmul_for_lower_triangular_matrices", "1_15_tril_matmul.kb", MM, dict(m=4096), dict(m=10),
         lambda t: out(torch.tril(t["a"] @ t["b"])))
def _(ax, g):
    return {"a": square(g, ax["m"], tri="lower"), "b": square(g, ax["m"], tri="lower")}


@problem(1, 16, "Matmul_with_transposed_A", "1_16_matmul_transposed_a.kb", MM, dict(m=2048, k=8192, n=4096),
         dict(m=6, k=15, n=8), lambda t: out(t["a"].T @ t["b"]))
def _(ax, g):
    return {"a": data(g, ax["k"], ax["m"]), "b": data(g, ax["k"], ax["n"])}


@problem(1, 17, "Matmul_with_transposed_B", "1_17_matmul_transposed_b.kb", MM, dict(m=2048, k=8192, n=4096),
         dict(m=6, k=15, n=8), lambda t: out(t["a"] @ t["b"].T))
def _(ax, g):
    return {"a": data(g, ax["m"], ax["k"]), "b": data(g, ax["n"], ax["k"])}


@problem(1, 18, "Matmul_with_transposed_both", "1_18_matmul_transposed_both.kb", MM, dict(m=2048, k=8192, n=4096),
         dict(m=6, k=15, n=8), lambda t: out(t["a"].T @ t["b"].T))
def _(ax, g):
    return {"a": data(g, ax["k"], ax["m"]), "b": data(g, ax["n"], ax["k"])}


def _sdpa_math(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v, for a torch without F.scaled_dot_product_attention (< 2.0)."""
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if is_causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


_sdpa = getattr(F, "scaled_dot_product_attention", _sdpa_math)


@problem(1, 97, "ScaledDotProductAttention", "1_97_sdpa.kb", MM,
         dict(batch_size=32, num_heads=32, seq=512, head_dim=1024), dict(batch_size=2, num_heads=3, seq=7, head_dim=16),
         lambda t: out(_sdpa(t["q"], t["k"], t["v"])))
def _(ax, g):
    shape = (ax["batch_size"], ax["num_heads"], ax["seq"], ax["head_dim"])
    return {"q": data(g, *shape), "k": data(g, *shape), "v": data(g, *shape)}


# ================================================================== level 1: activations

ACT = "activation"
ACT_AXES, ACT_SMALL = dict(batch_size=4096, dim=393216), dict(batch_size=5, dim=37)


def _mk_x(ax, g):
    return {"x": data(g, ax["batch_size"], ax["dim"])}


def _act(number: int, name: str, spec: str, fn: Callable[[torch.Tensor], torch.Tensor], category: str = ACT,
         axes: Axes = ACT_AXES, small: Axes = ACT_SMALL) -> None:
    problem(1, number, name, spec, category, axes, small, lambda t: out(fn(t["x"])))(_mk_x)


_act(19, "ReLU", "1_19_relu.kb", torch.relu)
_act(20, "LeakyReLU", "1_20_leaky_relu.kb", lambda x: F.leaky_relu(x, negative_slope=0.01))
_act(21, "Sigmoid", "1_21_sigmoid.kb", torch.sigmoid)
_act(22, "Tanh", "1_22_tanh.kb", torch.tanh)
_act(23, "Softmax", "1_23_softmax.kb", lambda x: torch.softmax(x, dim=1), "softmax")
_act(24, "LogSoftmax", "1_24_log_softmax.kb", lambda x: torch.log_softmax(x, dim=1), "softmax")
_act(25, "Swish", "1_25_swish.kb", lambda x: x * torch.sigmoid(x))
_act(26, "GELU_", "1_26_gelu.kb", F.gelu)
_act(27, "SELU_", "1_27_selu.kb", torch.selu)
_act(28, "HardSigmoid", "1_28_hardsigmoid.kb", F.hardsigmoid)
_act(29, "Softplus", "1_29_softplus.kb", F.softplus)
_act(30, "Softsign", "1_30_softsign.kb", lambda x: x / (1 + torch.abs(x)))
_act(31, "ELU", "1_31_elu.kb", lambda x: F.elu(x, alpha=1.0))
_act(32, "HardTanh", "1_32_hardtanh.kb", lambda x: F.hardtanh(x, min_val=-1.0, max_val=1.0))
_act(88, "MinGPTNewGelu", "1_88_mingpt_new_gelu.kb",
     lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0)))),
     axes=dict(batch_size=8192, dim=8192))


# ================================================================== level 1: normalization

NORM = "norm"
NCHW_AXES, NCHW_SMALL = dict(batch_size=112, features=64, dim1=512, dim2=512), dict(batch_size=3, features=5, dim1=4, dim2=6)


def _mk_nchw(ax, g):
    return {"x": data(g, ax["batch_size"], ax["features"], ax["dim1"], ax["dim2"])}


@problem(1, 33, "BatchNorm", "1_33_batchnorm.kb", NORM, dict(batch_size=64, features=64, dim1=512, dim2=512), NCHW_SMALL,
         lambda t: out(batchnorm_train(t["x"], t["weight"], t["bias"])),
         note="training mode (batch statistics), as KernelBench's freshly built module runs")
def _(ax, g):
    x = uniform(g, (ax["batch_size"], ax["features"], ax["dim1"], ax["dim2"]), math.sqrt(3.0), 1.0)  # off-centre
    return {"x": x, "weight": norm_weight(g, ax["features"]), "bias": norm_bias(g, ax["features"])}


problem(1, 34, "InstanceNorm", "1_34_instancenorm.kb", NORM, NCHW_AXES, NCHW_SMALL,
        lambda t: out(F.instance_norm(t["x"], eps=1e-5)))(_mk_nchw)


@problem(1, 35, "GroupNorm_", "1_35_groupnorm.kb", NORM, dict(NCHW_AXES, num_groups=8),
         dict(batch_size=2, features=16, num_groups=2, dim1=3, dim2=5),
         lambda t: out(F.group_norm(t["x"], t["x"].shape[1] // 8, t["weight"], t["bias"], eps=1e-5)),
         note="8 groups of 8 channels at KernelBench's shape; the spec fixes 8 channels per group")
def _(ax, g):
    c = ax["features"]
    return {"x": data(g, ax["batch_size"], c, ax["dim1"], ax["dim2"]), "weight": norm_weight(g, c), "bias": norm_bias(g, c)}


problem(1, 36, "RMSNorm_", "1_36_rmsnorm.kb", NORM, NCHW_AXES, NCHW_SMALL,
        lambda t: out(t["x"] / torch.sqrt(torch.mean(t["x"] ** 2, dim=1, keepdim=True) + 1e-5)))(_mk_nchw)
problem(1, 37, "FrobeniusNorm_", "1_37_frobenius_norm.kb", NORM, NCHW_AXES, NCHW_SMALL,
        lambda t: out(t["x"] / torch.norm(t["x"], p="fro")))(_mk_nchw)
problem(1, 38, "L1Norm_", "1_38_l1_norm.kb", NORM, dict(batch_size=32768, dim=65535), dict(batch_size=4, dim=33),
        lambda t: out(t["x"] / torch.mean(torch.abs(t["x"]), dim=1, keepdim=True)))(_mk_x)
problem(1, 39, "L2Norm_", "1_39_l2_norm.kb", NORM, dict(batch_size=32768, dim=65535), dict(batch_size=4, dim=33),
        lambda t: out(t["x"] / torch.norm(t["x"], p=2, dim=1, keepdim=True)))(_mk_x)


@problem(1, 40, "LayerNorm", "1_40_layernorm.kb", NORM, dict(batch_size=16, features=64, dim1=256, dim2=256), NCHW_SMALL,
         lambda t: out(F.layer_norm(t["x"], t["x"].shape[1:], t["weight"], t["bias"], eps=1e-5)))
def _(ax, g):
    shape = (ax["features"], ax["dim1"], ax["dim2"])
    x = uniform(g, (ax["batch_size"], *shape), math.sqrt(3.0), 1.0)
    return {"x": x, "weight": norm_weight(g, *shape), "bias": norm_bias(g, *shape)}


# ================================================================== level 1: pooling

POOL = "pooling"


def _mk_pool(*names: str):
    def make(ax, g):
        return {"x": data(g, *(ax[n] for n in names))}
    return make


problem(1, 41, "Max_Pooling_1D", "1_41_maxpool1d.kb", POOL, dict(batch_size=64, features=192, seq=65536),
        dict(batch_size=2, features=3, seq=30),
        lambda t: out(F.max_pool1d(t["x"], 8, stride=1, padding=4, dilation=3)))(_mk_pool("batch_size", "features", "seq"))
problem(1, 42, "Max_Pooling_2D", "1_42_maxpool2d.kb", POOL, dict(batch_size=32, channels=64, height=512, width=512),
        dict(batch_size=2, channels=3, height=7, width=9),
        lambda t: out(F.max_pool2d(t["x"], 4, stride=1, padding=1, dilation=1)))(
            _mk_pool("batch_size", "channels", "height", "width"))
problem(1, 43, "Max_Pooling_3D", "1_43_maxpool3d.kb", POOL, dict(batch_size=16, channels=32, dim1=128, dim2=128, dim3=128),
        dict(batch_size=2, channels=2, dim1=9, dim2=8, dim3=11),
        lambda t: out(F.max_pool3d(t["x"], 3, stride=2, padding=1, dilation=3)))(
            _mk_pool("batch_size", "channels", "dim1", "dim2", "dim3"))
problem(1, 44, "Average_Pooling_1D", "1_44_avgpool1d.kb", POOL, dict(batch_size=64, in_channels=128, length=65536),
        dict(batch_size=2, in_channels=3, length=21),
        lambda t: out(F.avg_pool1d(t["x"], 8, stride=1, padding=4)))(_mk_pool("batch_size", "in_channels", "length"))
problem(1, 45, "Average_Pooling_2D", "1_45_avgpool2d.kb", POOL, dict(batch_size=16, channels=64, height=2048, width=2048),
        dict(batch_size=2, channels=2, height=25, width=34),
        lambda t: out(F.avg_pool2d(t["x"], 11)))(_mk_pool("batch_size", "channels", "height", "width"))
problem(1, 46, "Average_Pooling_3D", "1_46_avgpool3d.kb", POOL,
        dict(batch_size=16, channels=32, depth=128, height=128, width=256),
        dict(batch_size=2, channels=2, depth=5, height=6, width=9),
        lambda t: out(F.avg_pool3d(t["x"], 3, stride=2, padding=1)))(
            _mk_pool("batch_size", "channels", "depth", "height", "width"))


# ================================================================== level 1: reductions over a dimension

RED = "reduction"
RED_AXES, RED_SMALL = dict(batch_size=128, dim1=4096, dim2=4095), dict(batch_size=3, dim1=17, dim2=5)
_mk_red = _mk_pool("batch_size", "dim1", "dim2")
problem(1, 47, "Sum_reduction_over_a_dimension", "1_47_sum_dim.kb", RED, RED_AXES, RED_SMALL,
        lambda t: out(torch.sum(t["x"], dim=1, keepdim=True)))(_mk_red)
problem(1, 48, "Mean_reduction_over_a_dimension", "1_48_mean_dim.kb", RED, RED_AXES, RED_SMALL,
        lambda t: out(torch.mean(t["x"], dim=1)))(_mk_red)
problem(1, 49, "Max_reduction_over_a_dimension", "1_49_max_dim.kb", RED, RED_AXES, RED_SMALL,
        lambda t: out(torch.max(t["x"], dim=1)[0]))(_mk_red)
problem(1, 53, "Min_reduction_over_a_dimension", "1_53_min_dim.kb", RED, RED_AXES, RED_SMALL,
        lambda t: out(torch.min(t["x"], dim=1)[0]))(_mk_red)


# ================================================================== level 1: convolutions

CONV = "conv"


def _mk_conv(shape_names: tuple[str, ...], weight_shape: Callable[[Axes], tuple[int, ...]], fan_in: Callable[[Axes], int],
             with_bias: int | None = None):
    """x from the named axes, weight of the given shape (variance 1/fan_in), optional bias of that many channels."""
    def make(ax, g):
        t = {"x": data(g, *(ax[n] for n in shape_names)), "weight": weight(g, fan_in(ax), *weight_shape(ax))}
        if with_bias is not None:
            t["bias"] = bias(g, with_bias)
        return t
    return make


@problem(1, 50, "conv_standard_2D__square_input__square_kernel", "1_50_conv2d_alexnet.kb", CONV,
         dict(batch_size=256, in_channels=3, height=224, width=224), dict(batch_size=1, in_channels=2, height=17, width=15),
         lambda t: out(F.conv2d(t["x"], t["weight"], t["bias"], stride=4, padding=2)))
def _(ax, g):
    c = ax["in_channels"]
    return {"x": data(g, ax["batch_size"], c, ax["height"], ax["width"]), "weight": weight(g, c * 121, 96, c, 11, 11),
            "bias": bias(g, 96)}


NCHW = ("batch_size", "in_channels", "height", "width")
NCL = ("batch_size", "in_channels", "length")
NCDHW = ("batch_size", "in_channels", "d", "h", "w")

problem(1, 54, "conv_standard_3D__square_input__square_kernel", "1_54_conv3d.kb", CONV,
        dict(batch_size=16, in_channels=3, out_channels=64, d=64, h=64, w=64),
        dict(batch_size=2, in_channels=2, out_channels=3, d=5, h=4, w=6),
        lambda t: out(F.conv3d(t["x"], t["weight"])))(
            _mk_conv(NCDHW, lambda a: (a["out_channels"], a["in_channels"], 3, 3, 3), lambda a: a["in_channels"] * 27))
problem(1, 55, "conv_standard_2D__asymmetric_input__square_kernel", "1_55_conv2d_asym_input.kb", CONV,
        dict(batch_size=8, in_channels=64, out_channels=128, height=512, width=1024),
        dict(batch_size=2, in_channels=3, out_channels=4, height=6, width=9),
        lambda t: out(F.conv2d(t["x"], t["weight"])))(
            _mk_conv(NCHW, lambda a: (a["out_channels"], a["in_channels"], 3, 3), lambda a: a["in_channels"] * 9))
problem(1, 56, "conv_standard_2D__asymmetric_input__asymmetric_kernel", "1_56_conv2d_asym_kernel.kb", CONV,
        dict(batch_size=8, in_channels=64, out_channels=128, height=512, width=256),
        dict(batch_size=2, in_channels=3, out_channels=4, height=8, width=10),
        lambda t: out(F.conv2d(t["x"], t["weight"])))(
            _mk_conv(NCHW, lambda a: (a["out_channels"], a["in_channels"], 5, 7), lambda a: a["in_channels"] * 35))
problem(1, 59, "conv_standard_3D__asymmetric_input__square_kernel", "1_59_conv3d_kernel_331.kb", CONV,
        dict(batch_size=16, in_channels=3, out_channels=64, h=256, w=256, d=10),
        dict(batch_size=2, in_channels=2, out_channels=3, h=5, w=6, d=3),
        lambda t: out(F.conv3d(t["x"], t["weight"])))(
            _mk_conv(("batch_size", "in_channels", "h", "w", "d"), lambda a: (a["out_channels"], a["in_channels"], 3, 3, 1),
                     lambda a: a["in_channels"] * 9))
problem(1, 63, "conv_standard_2D__square_input__square_kernel", "1_63_conv2d.kb", CONV,
        dict(batch_size=16, in_channels=16, out_channels=128, height=1024, width=1024),
        dict(batch_size=2, in_channels=3, out_channels=5, height=7, width=7),
        lambda t: out(F.conv2d(t["x"], t["weight"])))(
            _mk_conv(NCHW, lambda a: (a["out_channels"], a["in_channels"], 3, 3), lambda a: a["in_channels"] * 9))
problem(1, 66, "conv_standard_3D__asymmetric_input__asymmetric_kernel", "1_66_conv3d_asym.kb", CONV,
        dict(batch_size=8, in_channels=3, out_channels=64, d=16, h=128, w=128),
        dict(batch_size=1, in_channels=2, out_channels=3, d=4, h=6, w=8),
        lambda t: out(F.conv3d(t["x"], t["weight"])))(
            _mk_conv(NCDHW, lambda a: (a["out_channels"], a["in_channels"], 3, 5, 7), lambda a: a["in_channels"] * 105))
problem(1, 67, "conv_standard_1D", "1_67_conv1d.kb", CONV,
        dict(batch_size=32, in_channels=64, out_channels=128, length=131072),
        dict(batch_size=2, in_channels=3, out_channels=4, length=12),
        lambda t: out(F.conv1d(t["x"], t["weight"])))(
            _mk_conv(NCL, lambda a: (a["out_channels"], a["in_channels"], 3), lambda a: a["in_channels"] * 3))
problem(1, 76, "conv_standard_1D_dilated_strided__", "1_76_conv1d_dilated_strided.kb", CONV,
        dict(batch_size=64, in_channels=64, out_channels=128, length=524280),
        dict(batch_size=2, in_channels=3, out_channels=4, length=31),
        lambda t: out(F.conv1d(t["x"], t["weight"], stride=3, dilation=4)))(
            _mk_conv(NCL, lambda a: (a["out_channels"], a["in_channels"], 3), lambda a: a["in_channels"] * 3))
problem(1, 80, "conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__", "1_80_conv2d_dilated_padded.kb",
        CONV, dict(batch_size=8, in_channels=32, out_channels=64, height=512, width=512),
        dict(batch_size=1, in_channels=2, out_channels=3, height=10, width=27),
        lambda t: out(F.conv2d(t["x"], t["weight"], padding=(2, 4), dilation=(2, 3))))(
            _mk_conv(NCHW, lambda a: (a["out_channels"], a["in_channels"], 5, 9), lambda a: a["in_channels"] * 45))
problem(1, 82, "conv_depthwise_2D_square_input_square_kernel", "1_82_depthwise_conv2d.kb", CONV,
        dict(batch_size=16, in_channels=64, height=512, width=512), dict(batch_size=2, in_channels=3, height=6, width=7),
        lambda t: out(F.conv2d(t["x"], t["weight"], groups=t["x"].shape[1])))(
            _mk_conv(NCHW, lambda a: (a["in_channels"], 1, 3, 3), lambda a: 9))
problem(1, 83, "conv_depthwise_2D_square_input_asymmetric_kernel", "1_83_depthwise_conv2d_k3x1.kb", CONV,
        dict(batch_size=64, in_channels=8, height=512, width=512), dict(batch_size=2, in_channels=3, height=6, width=7),
        lambda t: out(F.conv2d(t["x"], t["weight"], groups=t["x"].shape[1])))(
            _mk_conv(NCHW, lambda a: (a["in_channels"], 1, 3, 1), lambda a: 3))
problem(1, 85, "conv_depthwise_2D_asymmetric_input_asymmetric_kernel", "1_85_depthwise_conv2d_asym.kb", CONV,
        dict(batch_size=32, in_channels=128, height=128, width=256), dict(batch_size=2, in_channels=3, height=6, width=11),
        lambda t: out(F.conv2d(t["x"], t["weight"], groups=t["x"].shape[1])))(
            _mk_conv(NCHW, lambda a: (a["in_channels"], 1, 3, 7), lambda a: 21))


@problem(1, 86, "conv_depthwise_separable_2D", "1_86_depthwise_separable_conv2d.kb", CONV,
         dict(batch_size=16, in_channels=64, out_channels=128, height=512, width=512),
         dict(batch_size=2, in_channels=3, out_channels=4, height=5, width=6),
         lambda t: out(F.conv2d(F.conv2d(t["x"], t["dw_weight"], padding=1, groups=t["x"].shape[1]), t["pw_weight"])))
def _(ax, g):
    c, co = ax["in_channels"], ax["out_channels"]
    return {"x": data(g, ax["batch_size"], c, ax["height"], ax["width"]), "dw_weight": weight(g, 9, c, 1, 3, 3),
            "pw_weight": weight(g, c, co, c, 1, 1)}


problem(1, 87, "conv_pointwise_2D", "1_87_pointwise_conv2d.kb", CONV,
        dict(batch_size=16, in_channels=64, out_channels=128, height=1024, width=1024),
        dict(batch_size=2, in_channels=3, out_channels=4, height=5, width=6),
        lambda t: out(F.conv2d(t["x"], t["weight"])))(
            _mk_conv(NCHW, lambda a: (a["out_channels"], a["in_channels"], 1, 1), lambda a: a["in_channels"]))

# transposed convolutions (weights [in_channels, out_channels / groups, k...])
CONVT = "conv_transpose"
problem(1, 57, "conv_transposed_2D__square_input__square_kernel", "1_57_conv_transpose2d.kb", CONVT,
        dict(batch_size=8, in_channels=64, out_channels=64, height=1024, width=1024),
        dict(batch_size=2, in_channels=3, out_channels=4, height=5, width=6),
        lambda t: out(F.conv_transpose2d(t["x"], t["weight"])))(
            _mk_conv(NCHW, lambda a: (a["in_channels"], a["out_channels"], 3, 3), lambda a: a["in_channels"] * 9))
problem(1, 64, "conv_transposed_1D", "1_64_conv_transpose1d.kb", CONVT,
        dict(batch_size=64, in_channels=128, out_channels=128, length=65536),
        dict(batch_size=2, in_channels=3, out_channels=4, length=9),
        lambda t: out(F.conv_transpose1d(t["x"], t["weight"])))(
            _mk_conv(NCL, lambda a: (a["in_channels"], a["out_channels"], 3), lambda a: a["in_channels"] * 3))
problem(1, 73, "conv_transposed_3D_asymmetric_input_square_kernel__strided_padded__grouped",
        "1_73_conv_transpose3d_grouped.kb", CONVT,
        dict(batch_size=4, in_channels=32, groups=4, d=32, h=64, w=128),
        dict(batch_size=1, in_channels=16, groups=2, d=3, h=4, w=5),
        lambda t: out(F.conv_transpose3d(t["x"], t["weight"], stride=2, padding=1, groups=t["x"].shape[1] // 8)),
        note="groups = in_channels / 8 (4 at KernelBench's 32 channels)")(
            _mk_conv(NCDHW, lambda a: (a["in_channels"], 8, 3, 3, 3), lambda a: 8 * 27))
problem(1, 74, "conv_transposed_1D_dilated", "1_74_conv_transpose1d_dilated.kb", CONVT,
        dict(batch_size=32, in_channels=32, out_channels=64, length=131072),
        dict(batch_size=2, in_channels=3, out_channels=4, length=9),
        lambda t: out(F.conv_transpose1d(t["x"], t["weight"], dilation=3)))(
            _mk_conv(NCL, lambda a: (a["in_channels"], a["out_channels"], 5), lambda a: a["in_channels"] * 5))
problem(1, 75, "conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__",
        "1_75_conv_transpose2d_grouped.kb", CONVT,
        dict(batch_size=16, in_channels=32, groups=4, height=128, width=256),
        dict(batch_size=1, in_channels=16, groups=2, height=4, width=5),
        lambda t: out(F.conv_transpose2d(t["x"], t["weight"], stride=(2, 3), padding=(1, 2), dilation=(2, 1),
                                         groups=t["x"].shape[1] // 8)),
        note="groups = in_channels / 8 (4 at KernelBench's 32 channels), 16 output channels per group")(
            _mk_conv(NCHW, lambda a: (a["in_channels"], 16, 3, 5), lambda a: 8 * 15))
problem(1, 77, "conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__",
        "1_77_conv_transpose3d_dilated.kb", CONVT,
        dict(batch_size=16, in_channels=32, out_channels=64, d=16, h=32, w=32),
        dict(batch_size=1, in_channels=2, out_channels=3, d=3, h=4, w=5),
        lambda t: out(F.conv_transpose3d(t["x"], t["weight"], stride=2, padding=1, dilation=2)))(
            _mk_conv(NCDHW, lambda a: (a["in_channels"], a["out_channels"], 3, 3, 3), lambda a: a["in_channels"] * 27))
problem(1, 79, "conv_transposed_1D_asymmetric_input_square_kernel___padded____strided____dilated__",
        "1_79_conv_transpose1d_strided.kb", CONVT,
        dict(batch_size=16, in_channels=32, out_channels=64, length=131072),
        dict(batch_size=2, in_channels=3, out_channels=4, length=9),
        lambda t: out(F.conv_transpose1d(t["x"], t["weight"], stride=2, padding=1, dilation=2)))(
            _mk_conv(NCL, lambda a: (a["in_channels"], a["out_channels"], 3), lambda a: a["in_channels"] * 3))


# ================================================================== level 1: losses

LOSS = "loss"


@problem(1, 94, "MSELoss", "1_94_mse_loss.kb", LOSS, dict(batch_size=32768, dim=32768), dict(batch_size=4, dim=9),
         lambda t: loss(torch.mean((t["predictions"] - t["targets"]) ** 2)))
def _(ax, g):
    return {"predictions": data(g, ax["batch_size"], ax["dim"]), "targets": data(g, ax["batch_size"], ax["dim"])}


@problem(1, 95, "CrossEntropyLoss", "1_95_cross_entropy.kb", LOSS, dict(batch_size=32768, num_classes=4096),
         dict(batch_size=6, num_classes=11), lambda t: loss(F.cross_entropy(t["predictions"], t["targets"].long())),
         note="class indices passed as float32 (no integer tensors in kbc)")
def _(ax, g):
    return {"predictions": data(g, ax["batch_size"], ax["num_classes"]),
            "targets": class_indices(g, ax["batch_size"], ax["num_classes"])}


@problem(1, 96, "HuberLoss", "1_96_huber_loss.kb", LOSS, dict(batch_size=32768, dim=32768), dict(batch_size=4, dim=9),
         lambda t: loss(F.smooth_l1_loss(t["predictions"], t["targets"])))
def _(ax, g):
    # spread so that both branches (|d| < 1 and |d| >= 1) are taken
    return {"predictions": data(g, ax["batch_size"], ax["dim"]), "targets": data(g, ax["batch_size"], ax["dim"])}


@problem(1, 98, "KLDivLoss", "1_98_kl_div_loss.kb", LOSS, dict(batch_size=16384, dim=16384), dict(batch_size=4, dim=9),
         lambda t: loss(F.kl_div(torch.log(t["predictions"]), t["targets"], reduction="batchmean")))
def _(ax, g):
    return {"predictions": probabilities(g, ax["batch_size"], ax["dim"]),
            "targets": probabilities(g, ax["batch_size"], ax["dim"])}


@problem(1, 99, "TripletMarginLoss", "1_99_triplet_margin_loss.kb", LOSS, dict(batch_size=32768, dim=8192),
         dict(batch_size=7, dim=5),
         lambda t: loss(F.triplet_margin_loss(t["anchor"], t["positive"], t["negative"], margin=1.0)))
def _(ax, g):
    b, d = ax["batch_size"], ax["dim"]
    return {"anchor": data(g, b, d), "positive": data(g, b, d), "negative": data(g, b, d)}


@problem(1, 100, "HingeLoss", "1_100_hinge_loss.kb", LOSS, dict(batch_size=32768, dim=32768), dict(batch_size=5, dim=8),
         lambda t: loss(torch.mean(torch.clamp(1 - t["predictions"] * t["targets"], min=0))),
         note="targets broadcast along the last axis, as in KernelBench (batch_size == dim there)")
def _(ax, g):
    return {"predictions": data(g, ax["batch_size"], ax["dim"]), "targets": signs(g, ax["dim"])}


# ================================================================== level 2: GEMM chains

GEMM = "gemm_fusion"
G_AXES = dict(batch_size=1024, in_features=8192, out_features=8192)
G_SMALL = dict(batch_size=4, in_features=9, out_features=7)


def lin(t: Tensors) -> torch.Tensor:
    """The chain's Linear layer."""
    return F.linear(t["x"], t["weight"], t.get("bias"))


def _mk_gemm(extra: Callable | None = None, with_bias: bool = True, in_key: str = "in_features",
             out_key: str = "out_features"):
    """x, weight (+ bias) of a Linear layer, plus extra(ax, g, out_features) tensors."""
    def make(ax, g):
        i, o = ax[in_key], ax[out_key]
        t = {"x": data(g, ax["batch_size"], i), "weight": weight(g, i, o, i)}
        if with_bias:
            t["bias"] = bias(g, o)
        if extra:
            t.update(extra(ax, g, o))
        return t
    return make


def _bn_params(ax, g, o):
    return {"bn_weight": norm_weight(g, o), "bn_bias": norm_bias(g, o)}


def _gn_params(ax, g, o):
    return {"gn_weight": norm_weight(g, o), "gn_bias": norm_bias(g, o)}


def _gemm(number, name, spec, ref, axes=G_AXES, small=G_SMALL, make=None, note=""):
    problem(2, number, name, spec, GEMM, axes, small, ref, note)(make or _mk_gemm())


_gemm(9, "Matmul_Subtract_Multiply_ReLU", "2_9_gemm_sub_mul_relu.kb", lambda t: out(torch.relu((lin(t) - 2.0) * 1.5)))
_gemm(12, "Gemm_Multiply_LeakyReLU", "2_12_gemm_mul_leaky_relu.kb",
      lambda t: out(F.leaky_relu(lin(t) * 2.0, negative_slope=0.1)))
_gemm(14, "Gemm_Divide_Sum_Scaling", "2_14_gemm_div_sum_scale.kb",
      lambda t: out(torch.sum(torch.matmul(t["x"], t["weight"].T) / 2, dim=1, keepdim=True) * 1.5),
      axes=dict(batch_size=1024, input_size=8192, hidden_size=8192), small=dict(batch_size=4, input_size=9, hidden_size=7),
      make=_mk_gemm(with_bias=False, in_key="input_size", out_key="hidden_size"))


def _ref_18(t):
    x = torch.sum(lin(t), dim=1, keepdim=True)
    x = torch.max(x, dim=1, keepdim=True)[0]
    x = torch.mean(x, dim=1, keepdim=True)
    x = torch.logsumexp(x, dim=1, keepdim=True)
    return out(torch.logsumexp(x, dim=1, keepdim=True))


_gemm(18, "Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp", "2_18_gemm_sum_lse.kb", _ref_18)


def _ref_22(t):
    x = lin(t) * 2.0
    x = torch.clamp(x + x, -10.0, 10.0)
    x = torch.logsumexp(x, dim=1, keepdim=True)
    return out(x * mish(x))


_gemm(22, "Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish", "2_22_gemm_scale_clamp_lse_mish.kb", _ref_22)
_gemm(29, "Matmul_Mish_Mish", "2_29_gemm_mish_mish.kb", lambda t: out(mish(mish(lin(t)))))
_gemm(30, "Gemm_GroupNorm_Hardtanh", "2_30_gemm_groupnorm_hardtanh.kb",
      lambda t: out(F.hardtanh(F.group_norm(lin(t), t["weight"].shape[0] // 512,
                                            t["gn_weight"], t["gn_bias"], eps=1e-5), -2.0, 2.0)),
      axes=dict(G_AXES, num_groups=16), small=dict(batch_size=3, in_features=5, out_features=1024, num_groups=2),
      make=_mk_gemm(_gn_params), note="512 features per group (16 groups at KernelBench's 8192)")
_gemm(33, "Gemm_Scale_BatchNorm", "2_33_gemm_scale_batchnorm.kb",
      lambda t: out(batchnorm_train(lin(t) * t["scale"], t["bn_weight"], t["bn_bias"])),
      make=_mk_gemm(lambda ax, g, o: {"scale": uniform(g, (o,), 1.0), **_bn_params(ax, g, o)}),
      note="BatchNorm1d in training mode (batch statistics)")
_gemm(37, "Matmul_Swish_Sum_GroupNorm", "2_37_gemm_swish_bias_groupnorm.kb",
      lambda t: out(F.group_norm(F.silu(lin(t)) + t["add_bias"], t["weight"].shape[0] // 64, t["gn_weight"],
                                 t["gn_bias"], eps=1e-5)),
      axes=dict(batch_size=32768, in_features=1024, out_features=4096, num_groups=64),
      small=dict(batch_size=3, in_features=5, out_features=128, num_groups=2),
      make=_mk_gemm(lambda ax, g, o: {"add_bias": bias(g, o), **_gn_params(ax, g, o)}),
      note="64 features per group")
_gemm(40, "Matmul_Scaling_ResidualAdd", "2_40_gemm_scale_residual.kb",
      lambda t: out((lambda y: y * 0.5 + y.clone().detach())(lin(t))),
      axes=dict(batch_size=16384, in_features=4096, out_features=4096))
_gemm(41, "Gemm_BatchNorm_GELU_ReLU", "2_41_gemm_batchnorm_gelu_relu.kb",
      lambda t: out(torch.relu(F.gelu(batchnorm_train(lin(t), t["bn_weight"], t["bn_bias"])))),
      axes=dict(batch_size=16384, in_features=4096, out_features=4096), make=_mk_gemm(_bn_params),
      note="BatchNorm1d in training mode")


@problem(2, 45, "Gemm_Sigmoid_LogSumExp", "2_45_gemm_sigmoid_gemm_lse.kb", GEMM,
         dict(batch_size=16384, input_size=2048, hidden_size=4096, output_size=1024),
         dict(batch_size=4, input_size=6, hidden_size=9, output_size=5),
         lambda t: out(torch.logsumexp(F.linear(torch.sigmoid(F.linear(t["x"], t["w1"], t["b1"])), t["w2"], t["b2"]),
                                       dim=1)))
def _(ax, g):
    i, h, o = ax["input_size"], ax["hidden_size"], ax["output_size"]
    return {"x": data(g, ax["batch_size"], i), "w1": weight(g, i, h, i), "b1": bias(g, h),
            "w2": weight(g, h, o, h), "b2": bias(g, o)}


_gemm(56, "Matmul_Sigmoid_Sum", "2_56_gemm_sigmoid_sum.kb",
      lambda t: out(torch.sum(torch.sigmoid(lin(t)), dim=1, keepdim=True)),
      axes=dict(batch_size=128, input_size=32768, hidden_size=32768), small=dict(batch_size=4, input_size=9, hidden_size=7),
      make=_mk_gemm(in_key="input_size", out_key="hidden_size"))
_gemm(59, "Matmul_Swish_Scaling", "2_59_gemm_swish_scale.kb",
      lambda t: out((lambda y: y * torch.sigmoid(y) * 2.0)(lin(t))),
      axes=dict(batch_size=128, in_features=32768, out_features=32768))
_gemm(63, "Gemm_ReLU_Divide", "2_63_gemm_relu_div.kb", lambda t: out(torch.relu(lin(t)) / 2.0))
_gemm(76, "Gemm_Add_ReLU", "2_76_gemm_add_relu.kb",
      lambda t: out(torch.relu(torch.matmul(t["x"], t["weight"].T) + t["bias"])),
      note="the Linear has no bias; 'bias' is the separate parameter")
_gemm(84, "Gemm_BatchNorm_Scaling_Softmax", "2_84_gemm_batchnorm_scale_softmax.kb",
      lambda t: out(torch.softmax(t["scale"] * batchnorm_train(lin(t), t["bn_weight"], t["bn_bias"]), dim=1)),
      make=_mk_gemm(lambda ax, g, o: {**_bn_params(ax, g, o), "scale": uniform(g, (1,), 0.5, 1.0)}),
      note="BatchNorm1d in training mode")
_gemm(86, "Matmul_Divide_GELU", "2_86_gemm_div_gelu.kb", lambda t: out(F.gelu(lin(t) / 10.0)))


def _ref_88(t):
    x = F.group_norm(lin(t), t["weight"].shape[0] // 32, t["gn_weight"], t["gn_bias"], eps=1e-5)
    x = x * torch.sigmoid(x) * t["multiply_weight"]
    return out(x * torch.sigmoid(x))


_gemm(88, "Gemm_GroupNorm_Swish_Multiply_Swish", "2_88_gemm_groupnorm_swish_mul_swish.kb", _ref_88,
      axes=dict(G_AXES, num_groups=256), small=dict(batch_size=3, in_features=5, out_features=64, num_groups=2),
      make=_mk_gemm(lambda ax, g, o: {**_gn_params(ax, g, o), "multiply_weight": uniform(g, (o,), 1.0)}),
      note="32 features per group")
_gemm(99, "Matmul_GELU_Softmax", "2_99_gemm_gelu_softmax.kb", lambda t: out(torch.softmax(F.gelu(lin(t)), dim=1)))


# ================================================================== level 2: convolution chains

CONVF = "conv_fusion"
C_SMALL = dict(batch_size=2, in_channels=3, out_channels=4, height=8, width=9)


def conv(t: Tensors, **kw) -> torch.Tensor:
    """The chain's convolution (2-D or 3-D by the input's rank)."""
    f = F.conv3d if t["x"].dim() == 5 else F.conv2d
    return f(t["x"], t["conv_weight"], t["conv_bias"], **kw)


def _mk_cv(dims: tuple[str, ...] = ("height", "width"), k: int = 3, extra: Callable | None = None,
           transposed: bool = False, x_dims: Callable[[Axes], tuple[int, ...]] | None = None):
    """x, conv_weight, conv_bias, plus extra(ax, g, out_channels) tensors."""
    def make(ax, g):
        ci, co = ax["in_channels"], ax["out_channels"]
        spatial = x_dims(ax) if x_dims else tuple(ax[d] for d in dims)
        ks = (k,) * len(spatial)
        t = {"x": data(g, ax["batch_size"], ci, *spatial),
             "conv_weight": weight(g, ci * k ** len(spatial), *((ci, co) if transposed else (co, ci)), *ks),
             "conv_bias": bias(g, co)}
        if extra:
            t.update(extra(ax, g, co))
        return t
    return make


def _chan_bias(name: str):
    return lambda ax, g, o: {name: bias(g, o)}


def _cv(number, name, spec, ref, axes, small=C_SMALL, make=None, note=""):
    problem(2, number, name, spec, CONVF, axes, small, ref, note)(make or _mk_cv())


def _c(t: Tensors, name: str) -> torch.Tensor:
    """A per-channel parameter broadcast over the spatial axes."""
    p = t[name]
    return p.view(-1, *([1] * (t["x"].dim() - 2)))


_cv(1, "Conv2D_ReLU_BiasAdd", "2_1_conv2d_relu_bias.kb", lambda t: out(torch.relu(conv(t)) + _c(t, "bias")),
    dict(batch_size=128, in_channels=64, out_channels=128, height=128, width=128), make=_mk_cv(extra=_chan_bias("bias")))


def _ref_2(t):
    y = F.conv_transpose2d(t["x"], t["conv_weight"], t["conv_bias"], stride=2, padding=1, output_padding=1)
    y = torch.clamp(y + _c(t, "bias"), min=0.0, max=1.0) * 2.0
    return out(torch.clamp(y, min=0.0, max=1.0) / 2.0)


_cv(2, "ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide", "2_2_conv_transpose2d_bias_clamp_scale.kb", _ref_2,
    dict(batch_size=128, in_channels=64, out_channels=64, height=128, width=128),
    make=_mk_cv(transposed=True, extra=_chan_bias("bias")))
_cv(4, "Conv2d_Mish_Mish", "2_4_conv2d_mish_mish.kb", lambda t: out(mish(mish(conv(t)))),
    dict(batch_size=64, in_channels=64, out_channels=128, height=256, width=256))
_cv(6, "Conv3d_Softmax_MaxPool_MaxPool", "2_6_conv3d_softmax_maxpool_maxpool.kb",
    lambda t: out(F.max_pool3d(F.max_pool3d(torch.softmax(conv(t), dim=1), 2), 2)),
    dict(batch_size=128, in_channels=3, out_channels=16, od=14, oh=30, ow=30),
    dict(batch_size=2, in_channels=2, out_channels=3, od=8, oh=9, ow=4),
    make=_mk_cv(x_dims=lambda a: (a["od"] + 2, a["oh"] + 2, a["ow"] + 2)),
    note="KernelBench's input 16 x 32 x 32 is bound through the convolution's output sizes (14 x 30 x 30)")
_cv(17, "Conv2d_InstanceNorm_Divide", "2_17_conv2d_instancenorm_div.kb",
    lambda t: out(F.instance_norm(conv(t), eps=1e-5) / 2.0),
    dict(batch_size=128, in_channels=64, out_channels=128, height=128, width=128))
C3_SMALL = dict(batch_size=2, in_channels=2, out_channels=6, num_groups=2, d=4, h=5, w=5)
_cv(23, "Conv3d_GroupNorm_Mean", "2_23_conv3d_groupnorm_mean.kb",
    lambda t: out(F.group_norm(conv(t), t["conv_weight"].shape[0] // 3, t["gn_weight"], t["gn_bias"], eps=1e-5)
                  .mean(dim=[1, 2, 3, 4])),
    dict(batch_size=128, in_channels=3, out_channels=24, num_groups=8, d=24, h=32, w=32), C3_SMALL,
    make=_mk_cv(("d", "h", "w"), extra=_gn_params), note="3 channels per group")
_cv(24, "Conv3d_Min_Softmax", "2_24_conv3d_min_softmax.kb",
    lambda t: out(torch.softmax(torch.min(conv(t), dim=2)[0], dim=1)),
    dict(batch_size=128, in_channels=3, out_channels=24, d=24, h=32, w=32),
    dict(batch_size=2, in_channels=2, out_channels=5, d=4, h=5, w=6), make=_mk_cv(("d", "h", "w")))
_cv(35, "Conv2d_Subtract_HardSwish_MaxPool_Mish", "2_35_conv2d_sub_hardswish_maxpool_mish.kb",
    lambda t: out(mish(F.max_pool2d(hardswish(conv(t) - 0.5), 2))),
    dict(batch_size=128, in_channels=64, out_channels=128, height=128, width=128))
_cv(46, "Conv2d_Subtract_Tanh_Subtract_AvgPool", "2_46_conv2d_sub_tanh_sub_avgpool.kb",
    lambda t: out(F.avg_pool2d(torch.tanh(conv(t) - 0.5) - 0.2, 2)),
    dict(batch_size=128, in_channels=64, out_channels=128, height=128, width=128))
_cv(52, "Conv2d_Activation_BatchNorm", "2_52_conv2d_activation_batchnorm.kb",
    lambda t: out((lambda y: batchnorm_train(torch.tanh(F.softplus(y)) * y, t["bn_weight"], t["bn_bias"]))(conv(t))),
    dict(batch_size=64, in_channels=64, out_channels=128, height=128, width=128), make=_mk_cv(extra=_bn_params),
    note="BatchNorm2d in training mode")
_cv(67, "Conv2d_GELU_GlobalAvgPool", "2_67_conv2d_gelu_global_avgpool.kb",
    lambda t: out(F.adaptive_avg_pool2d(F.gelu(conv(t)), 1).squeeze(-1).squeeze(-1)),
    dict(batch_size=128, in_channels=8, out_channels=64, height=256, width=256))
_cv(73, "Conv2d_BatchNorm_Scaling", "2_73_conv2d_batchnorm_scale.kb",
    lambda t: out(batchnorm_train(conv(t), t["bn_weight"], t["bn_bias"]) * 2.0),
    dict(batch_size=128, in_channels=8, out_channels=64, height=128, width=128), make=_mk_cv(extra=_bn_params),
    note="BatchNorm2d in training mode")
_cv(82, "Conv2d_Tanh_Scaling_BiasAdd_Max", "2_82_conv2d_tanh_scale_bias_maxpool.kb",
    lambda t: out(F.max_pool2d(torch.tanh(conv(t)) * 2.0 + _c(t, "bias"), 4)),
    dict(batch_size=128, in_channels=8, out_channels=64, height=256, width=256),
    dict(batch_size=2, in_channels=3, out_channels=4, height=10, width=11), make=_mk_cv(extra=_chan_bias("bias")))


def _ref_92(t):
    c = conv(t)
    n = F.group_norm(c, t["conv_weight"].shape[0] // 4, t["gn_weight"], t["gn_bias"], eps=1e-5)
    return out(torch.logsumexp(c + hardswish(torch.tanh(n)), dim=1, keepdim=True))


_cv(92, "Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp", "2_92_conv2d_groupnorm_tanh_hardswish_residual_lse.kb",
    _ref_92, dict(batch_size=128, in_channels=8, out_channels=64, num_groups=16, height=128, width=128),
    dict(batch_size=2, in_channels=3, out_channels=8, num_groups=2, height=6, width=7), make=_mk_cv(extra=_gn_params),
    note="4 channels per group")
_cv(100, "ConvTranspose3d_Clamp_Min_Divide", "2_100_conv_transpose3d_clamp_div.kb",
    lambda t: out(torch.clamp(F.conv_transpose3d(t["x"], t["conv_weight"], t["conv_bias"], stride=2, padding=1),
                              min=-1.0) / 2.0),
    dict(batch_size=16, in_channels=64, out_channels=128, d=24, h=48, w=48),
    dict(batch_size=1, in_channels=2, out_channels=3, d=3, h=4, w=3), make=_mk_cv(("d", "h", "w"), transposed=True))


# ================================================================== beyond KernelBench: attention as users write it
# Level 0 ("X/n" keys): not KernelBench problems, so never in the default
# selection; run them by key, stem or category (`--problems attention`).
# The eager row is PyTorch's F.scaled_dot_product_attention (its fused
# kernels), the peer the attention family must match at fp32.

ATTN = "attention"
_EXAMPLES = "../../specs/examples/"


def _mk_qkv(*names: str):
    """q, k, v of the shape named by axes (an int: a constant of the spec)."""
    def make(ax, g):
        shape = tuple(n if isinstance(n, int) else ax[n] for n in names)
        return {"q": data(g, *shape), "k": data(g, *shape), "v": data(g, *shape)}
    return make


def _vit_ref(t: Tensors, heads: int = 12) -> Tensors:
    n, s, e = t["q"].shape
    split = [x.reshape(n, s, heads, e // heads).transpose(1, 2) for x in (t["q"], t["k"], t["v"])]
    return out(_sdpa(*split).transpose(1, 2).reshape(n, s, e))


def _relpos_ref(t: Tensors) -> Tensors:
    q, k, v, rh, rw = t["q"], t["k"], t["v"], t["rel_pos_h"], t["rel_pos_w"]
    b, n, hh, ww, d = q.shape
    iy, ix = torch.arange(hh, device=q.device), torch.arange(ww, device=q.device)
    rel_h = torch.einsum("bnyxc,yhc->bnyxh", q, rh[iy[:, None] - iy[None, :] + hh - 1])
    rel_w = torch.einsum("bnyxc,xwc->bnyxw", q, rw[ix[:, None] - ix[None, :] + ww - 1])
    s = t["scale"] * torch.einsum("bnyxc,bnhwc->bnyxhw", q, k) + rel_h[..., :, None] + rel_w[..., None, :]
    s = s.reshape(b, n, hh, ww, hh * ww)
    lse = torch.logsumexp(s, dim=-1)
    o = torch.einsum("bnyxj,bnjc->bnyxc", torch.softmax(s, dim=-1), v.reshape(b, n, hh * ww, d))
    return {"o": o.permute(0, 2, 3, 1, 4).contiguous(), "lse": lse}


def _attn_bwd_ref(t: Tensors) -> Tensors:
    """dq, dk, dv of F.scaled_dot_product_attention(q, k, v) for the gradient go (forward and backward)."""
    with torch.enable_grad():
        q, k, v = (t[n].detach().requires_grad_() for n in ("q", "k", "v"))
        dq, dk, dv = torch.autograd.grad(_sdpa(q, k, v), (q, k, v), t["go"])
    return {"dq": dq, "dk": dk, "dv": dv}


def _mk_relpos(ax, g):
    shape = (ax["batch"], ax["heads"], ax["height"], ax["width"], 32)
    t = {"q": data(g, *shape), "k": data(g, *shape), "v": data(g, *shape),
         "rel_pos_h": data(g, 2 * ax["height"] - 1, 32), "rel_pos_w": data(g, 2 * ax["width"] - 1, 32)}
    t["scale"] = torch.tensor(32 ** -0.5, device=g.device)
    return t


for _n, (_name, _spec, _axes, _small, _make, _ref) in enumerate([
        ("SDPA, head_dim 64", "1_97_sdpa.kb", dict(batch_size=16, num_heads=16, seq=1024, head_dim=64),
         dict(batch_size=2, num_heads=3, seq=37, head_dim=64), _mk_qkv("batch_size", "num_heads", "seq", "head_dim"),
         lambda t: out(_sdpa(t["q"], t["k"], t["v"]))),
        ("SDPA, head_dim 128, 4096 tokens", "1_97_sdpa.kb", dict(batch_size=2, num_heads=8, seq=4096, head_dim=128),
         dict(batch_size=1, num_heads=2, seq=29, head_dim=128), _mk_qkv("batch_size", "num_heads", "seq", "head_dim"),
         lambda t: out(_sdpa(t["q"], t["k"], t["v"]))),
        ("causal attention (where mask)", _EXAMPLES + "attention_causal.kb", dict(batch=16, heads=16, seq=1024),
         dict(batch=2, heads=3, seq=37), _mk_qkv("batch", "heads", "seq", 64),
         lambda t: {"o": _sdpa(t["q"], t["k"], t["v"], is_causal=True)}),
        ("ViT attention, heads merged (12 x 80)", _EXAMPLES + "attention_vit.kb", dict(n=8, s=197),
         dict(n=2, s=13), lambda ax, g: {k: data(g, ax["n"], ax["s"], 960) for k in ("q", "k", "v")}, _vit_ref),
        ("SAM attention forward, 2-D relative position", _EXAMPLES + "attention_relpos.kb",
         dict(batch=4, heads=12, height=64, width=64), dict(batch=1, heads=2, height=5, width=3), _mk_relpos,
         _relpos_ref),
        ("attention backward (SDPA forward + backward)", _EXAMPLES + "attention_bwd.kb",
         dict(batch=16, heads=1, seq=1024), dict(batch=2, heads=3, seq=37),
         lambda ax, g: {**_mk_qkv("batch", "heads", "seq", 64)(ax, g),
                        "go": data(g, ax["batch"], ax["heads"], ax["seq"], 64)},
         _attn_bwd_ref)], start=1):
    PROBLEMS.append(Problem(0, _n, _name, _spec, ATTN, dict(_axes), dict(_small), _make, _ref))


# ------------------------------------------------------------------ lookup

def by_key() -> dict[str, Problem]:
    """Problems by ``L1/19`` key."""
    return {p.key: p for p in PROBLEMS}


def select(patterns: list[str] | None) -> list[Problem]:
    """Problems whose key, spec stem or category matches one of the comma-separated patterns (all when None)."""
    import fnmatch
    ordered = sorted(PROBLEMS, key=lambda p: (p.level == 0, p.level, p.number))
    if not patterns:
        return [p for p in ordered if p.level]
    chosen = []
    for p in ordered:
        names = (p.key, p.key.replace("/", "_"), Path(p.spec).stem, p.category)
        if any(fnmatch.fnmatch(n, pat) for pat in patterns for n in names):
            chosen.append(p)
    return chosen
