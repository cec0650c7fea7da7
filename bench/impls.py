"""The implementations compared on each workload: PyTorch eager, torch.compile, kbc.

An ``Impl`` is built once per shape from the list of (identical) input sets;
building returns a runner, ``run(i) -> outputs`` on set ``i``.  PyTorch peers
that are modules get one module per set, holding that set's weights, so the
rotation over sets moves the same bytes for every implementation.
Compilation (torch.compile, kbc's JIT) happens in ``build`` or in the first
calls; compare.py times that phase and guards it with a deadline.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

import sam_reference
from switches import environment
from roofline import matmul_tf32
from workloads import REPO, Workload, conv3d_module, cvit_module

Tensors = dict[str, torch.Tensor]
Runner = Callable[[int], Tensors]
ContextFactory = Callable[[], contextlib.AbstractContextManager]


@dataclass
class Impl:
    """One row of the comparison for every shape of a workload."""

    label: str
    precision: str                                   # "fp32" or "tf32": threshold and compute ceiling
    family: str                                      # "eager", "compile" or "kbc"
    build: Callable[[list[Tensors]], Runner] | None  # None: not available (see skip)
    baseline: bool = False                           # the "PyTorch eager" that speedups are relative to
    skip: str | None = None                          # why it is N/A without trying
    note: str = ""
    variant: str | None = None                       # kbc: a KBC_VARIANTS name (its own program)


@dataclass
class Options:
    """What the command line selected."""

    compile_modes: list[str] = field(default_factory=lambda: ["default", "max-autotune"])
    no_compile: bool = False
    kbc_precisions: list[str] = field(default_factory=lambda: ["fp32", "tf32"])


# ------------------------------------------------------------------ contexts

def train_ctx() -> contextlib.AbstractContextManager:
    """KernelBench's mode: grad enabled (the module is left in training mode as built)."""
    return torch.enable_grad()


def infer_ctx() -> contextlib.AbstractContextManager:
    """Inference: no autograd graph."""
    return torch.no_grad()


def tf32_ctx() -> contextlib.AbstractContextManager:
    """TF32 cuBLAS matmuls."""
    return matmul_tf32(True)


# ------------------------------------------------------------------ torch.compile

def compile_unavailable() -> str | None:
    """Why torch.compile cannot be used here, or None."""
    if not hasattr(torch, "compile"):
        return f"torch.compile does not exist in torch {torch.__version__}"
    return None


def raise_recompile_limits(n: int) -> None:
    """Let dynamo keep one compiled entry per input set and shape instead of silently falling back to eager."""
    cfg = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                 "accumulated_cache_size_limit"):
        if hasattr(cfg, name):
            with contextlib.suppress(Exception):
                setattr(cfg, name, max(int(getattr(cfg, name)), n))


def compile_module(module: nn.Module, mode: str) -> nn.Module:
    """torch.compile with static shapes (each benchmark shape gets its own specialised code)."""
    return torch.compile(module, mode=mode, dynamic=False)


def dynamo_graph_count() -> int | None:
    """How many graphs dynamo has captured so far in this process (None without dynamo)."""
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return None
    return int(counters["stats"]["unique_graphs"])


def reset_compiler() -> None:
    """Drop compiled code and CUDA-graph pools between implementations and shapes."""
    if hasattr(torch, "_dynamo"):
        with contextlib.suppress(Exception):
            torch._dynamo.reset()


# ------------------------------------------------------------------ module-based PyTorch runners

class ModuleRunner:
    """One module per input set (optionally compiled), called under a context."""

    def __init__(self, sets: list[Tensors], make: Callable[[Tensors], nn.Module],
                 call: Callable[[nn.Module, nn.Module, Tensors], Tensors], ctx: ContextFactory,
                 eval_mode: bool = False, compile_mode: str | None = None):
        self.sets, self.call, self.ctx = sets, call, ctx
        self.modules = [make(s) for s in sets]
        if eval_mode:
            for m in self.modules:
                m.eval()
        if compile_mode:
            raise_recompile_limits(64 + 2 * len(sets))
        self.fns = [compile_module(m, compile_mode) if compile_mode else m for m in self.modules]

    def __call__(self, i: int) -> Tensors:
        with self.ctx():
            return self.call(self.fns[i], self.modules[i], self.sets[i])


def call_x(fn: nn.Module, module: nn.Module, inputs: Tensors) -> Tensors:
    """{"out": fn(x)} — CViT and conv3d."""
    return {"out": fn(inputs["x"])}


def call_sam(fn: nn.Module, module: nn.Module, inputs: Tensors) -> Tensors:
    """Autograd through fn (the module or its compiled form) w.r.t. x and the module's parameters."""
    return sam_reference.autograd_backward(fn, module.parameters_wrt(), inputs)


def module_impl(label: str, make: Callable[[Tensors], nn.Module], call: Callable, ctx: ContextFactory,
                eval_mode: bool = False, precision: str = "fp32", baseline: bool = False,
                note: str = "") -> Impl:
    """An eager module row."""
    return Impl(label, precision, "eager",
                lambda sets: ModuleRunner(sets, make, call, ctx, eval_mode), baseline=baseline, note=note)


def compiled_impls(label: str, make: Callable[[Tensors], nn.Module], call: Callable, ctx: ContextFactory,
                   eval_mode: bool, opts: Options, note: str = "") -> list[Impl]:
    """One torch.compile row per selected mode (N/A rows when compile is off or absent)."""
    rows = []
    for mode in opts.compile_modes:
        name = f"{label}" if mode == "default" else f"{label} {mode}"
        skip = "skipped (--no-compile)" if opts.no_compile else compile_unavailable()
        build = None if skip else (lambda sets, mode=mode: ModuleRunner(sets, make, call, ctx, eval_mode, mode))
        rows.append(Impl(name, "fp32", "compile", build, skip=skip, note=note))
    return rows


def function_impl(label: str, fn: Callable[[Tensors], Tensors], precision: str = "fp32",
                  ctx: ContextFactory = contextlib.nullcontext, note: str = "") -> Impl:
    """An eager function of the input dict."""
    def build(sets: list[Tensors]) -> Runner:
        def run(i: int) -> Tensors:
            with ctx():
                return fn(sets[i])
        return run
    return Impl(label, precision, "eager", build, note=note)


# ------------------------------------------------------------------ kbc

class KbcProvider:
    """``import kbc`` from <repo>/python once; one Program per (spec, precision), errors remembered."""

    def __init__(self, repo: Path = REPO):
        self.module = None
        self.error: str | None = None
        self.programs: dict[tuple[str, str], object] = {}
        self.program_errors: dict[tuple[str, str], str] = {}
        self.compile_s: dict[tuple[str, str], float] = {}
        where = repo / "python"
        if not ((where / "kbc.py").is_file() or (where / "kbc" / "__init__.py").is_file()):
            self.error = f"import kbc failed: no {where / 'kbc.py'} yet"
            return
        sys.path.insert(0, str(where))
        try:
            module = importlib.import_module("kbc")
        except Exception as exc:  # noqa: BLE001 — any failure makes kbc N/A
            self.error = f"import kbc failed: {type(exc).__name__}: {exc}"
            return
        if where.resolve() not in Path(getattr(module, "__file__", "") or "/").resolve().parents:
            self.error = f"import kbc found {getattr(module, '__file__', '?')}, not the one in {where}"
            return
        self.module = module

    def program(self, spec: Path, precision: str, variant: str | None = None) -> object:
        """The compiled program (raises RuntimeError with the reason when kbc cannot provide it);
        a variant (see KBC_VARIANTS) is a program of its own."""
        if self.module is None:
            raise RuntimeError(self.error)
        key = (str(spec), variant or precision)
        if key in self.program_errors:
            raise RuntimeError(self.program_errors[key])
        if key not in self.programs:
            start = time.perf_counter()
            try:
                self.programs[key] = self.module.Program(str(spec), precision=precision, target="auto")
            except Exception as exc:  # noqa: BLE001
                self.program_errors[key] = f"kbc.Program failed: {type(exc).__name__}: {exc}"
                raise RuntimeError(self.program_errors[key]) from None
            self.compile_s[key] = time.perf_counter() - start
        return self.programs[key]


# kbc variants timed as rows of their own: name -> (precision, environment
# while the program generates its code, which it does at its first run).
KBC_VARIANTS = {"fp32mma": ("fp32", {"KBC_FP32_MMA": "1"}),  # fp32 contractions as 3xTF32 on tensor cores
                "fp32generic": ("fp32", {"KBC_SPECIALIZE": "0"})}  # the code for any sizes, not specialized


class KbcRunner:
    """kbc on set i: the first call on a set allocates its outputs; later calls reuse them (outputs=)."""

    def __init__(self, program: object, sets: list[Tensors], env: dict[str, str] | None = None):
        self.program, self.sets, self.env = program, sets, env or {}
        self.outs: list[Tensors | None] = [None] * len(sets)

    def __call__(self, i: int) -> Tensors:
        if self.outs[i] is None:
            if "KBC_SPECIALIZE" in self.env:  # read when a program is compiled: set on the program itself
                self.program.set_specialize(int(self.env["KBC_SPECIALIZE"]))
            with environment(self.env):
                self.outs[i] = dict(self.program.run(self.sets[i]))
            return self.outs[i]
        result = self.program.run(self.sets[i], outputs=self.outs[i])
        return self.outs[i] if result is None else result

    def poisoned_run(self, i: int) -> Tensors:
        """Fill set i's preallocated outputs with NaN, run into them: unwritten elements stay NaN."""
        if self.outs[i] is None:
            self(i)
        for t in self.outs[i].values():
            t.fill_(float("nan"))
        result = self.program.run(self.sets[i], outputs=self.outs[i])
        return self.outs[i] if result is None else result


def kbc_impls(provider: KbcProvider, workload: Workload, opts: Options) -> list[Impl]:
    """One kbc row per requested precision."""
    rows = []
    for name in opts.kbc_precisions:
        precision, env = KBC_VARIANTS.get(name, (name, {}))
        variant = name if name in KBC_VARIANTS else None

        def build(sets: list[Tensors], precision: str = precision, variant: str | None = variant,
                  env: dict[str, str] = env) -> Runner:
            return KbcRunner(provider.program(workload.spec, precision, variant), sets, env)
        label = {"fp32mma": f"kbc {precision} (3xTF32)", "fp32generic": f"kbc {precision} (generic)"}.get(
            variant, f"kbc {precision}")
        note = f"kbc.Program({workload.spec.name}, precision={precision})"
        if env:
            note += ", " + " ".join(f"{k}={v}" for k, v in env.items())
        rows.append(Impl(label, precision, "kbc", build, skip=provider.error, note=note, variant=variant))
    return rows


# ------------------------------------------------------------------ the rows of each workload

def cvit_impls(opts: Options) -> list[Impl]:
    """CViT: eager as KernelBench times it (train mode, grad on) and in eval/no_grad; compile in eval/no_grad."""
    return [
        module_impl("eager", cvit_module, call_x, train_ctx, baseline=True,
                    note="module as constructed (train mode, dropout 0, grad enabled), as KernelBench times it"),
        module_impl("eager eval+no_grad", cvit_module, call_x, infer_ctx, eval_mode=True,
                    note="model.eval() under torch.no_grad() (nn.TransformerEncoderLayer fast path)"),
        *compiled_impls("compile eval+no_grad", cvit_module, call_x, infer_ctx, True, opts),
    ]


def conv3d_impls(opts: Options) -> list[Impl]:
    """Conv3d-min-softmax: eager as KernelBench times it and under no_grad; compile under no_grad."""
    return [
        module_impl("eager", conv3d_module, call_x, train_ctx, baseline=True,
                    note="KernelBench Model as constructed, grad enabled"),
        module_impl("eager no_grad", conv3d_module, call_x, infer_ctx, eval_mode=True),
        *compiled_impls("compile no_grad", conv3d_module, call_x, infer_ctx, True, opts),
    ]


def sam_impls(opts: Options) -> list[Impl]:
    """SAM-HQ backward: explicit reference math, autograd eager (fp32 and TF32 matmuls), autograd compiled."""
    make = sam_reference.SamAttention
    return [
        function_impl("reference math (explicit)", sam_reference.sam_backward_explicit,
                      note="SOL-ExecBench-style: forward recompute + explicit matmuls, no autograd"),
        module_impl("autograd eager", make, call_sam, contextlib.nullcontext, baseline=True,
                    note="autograd.grad over the forward"),
        module_impl("autograd eager (tf32 matmuls)", make, call_sam, tf32_ctx, precision="tf32",
                    note="torch.backends.cuda.matmul TF32 on"),
        *compiled_impls("autograd compile", make, call_sam, contextlib.nullcontext, False, opts,
                        note="torch.compile of the forward; autograd.grad runs its compiled backward"),
    ]


def impls_for(workload: Workload, opts: Options, kbc: KbcProvider) -> list[Impl]:
    """Every row for one workload, PyTorch peers first, kbc last."""
    peers = {"cvit": cvit_impls, "conv3d": conv3d_impls, "sam": sam_impls}[workload.key](opts)
    return peers + kbc_impls(kbc, workload, opts)
