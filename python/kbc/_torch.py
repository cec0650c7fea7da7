"""PyTorch integration: kbc programs as autograd functions and custom ops.

``autograd(forward, backward)`` pairs a forward spec with its backward
spec.  The backward spec's inputs are named after the forward's inputs and
outputs, and ``grad_<output>`` for the gradient flowing into forward output
<output>.  Its outputs are ``grad_<input>`` for each forward input it
differentiates; inputs it has no gradient for get None.  SAM-HQ's
attention backward (specs/sam_hq_attn_relpos_bwd.kb: grad_output in,
grad_hidden_states, grad_qkv_weight, ... out) follows this convention.

``op(program)`` registers a program as the custom op
``torch.ops.kbc.<name>`` (torch.library): the CPU and CUDA kernels call
Program.run, and a fake (meta) kernel gives the outputs' shapes from the
inputs' shapes alone, so the op runs inside torch.compile graphs without a
graph break (torch 2.4 or later; older torch: eager only)."""
from __future__ import annotations

import re
from typing import Callable, Dict, Sequence, Union

ProgramOrSpec = Union["Program", str]  # noqa: F821


def _program(p, precision, target, device):
    from . import Program, compile as kbc_compile
    return p if isinstance(p, Program) else kbc_compile(p, precision=precision, target=target, device=device)


def autograd(forward: ProgramOrSpec, backward: ProgramOrSpec, precision: str = "fp32", target: str = "auto",
             device: int = 0) -> Callable:
    """A function running ``forward`` whose gradient runs ``backward``:
    ``f(*inputs)`` (in the forward spec's input order) or ``f(**inputs)``
    returns the forward's outputs (a tensor when there is one, else a
    tuple in declaration order).  Specs may be paths, spec text or
    Programs.  The names are checked here: a backward input that is not a
    forward input, a forward output or grad_<output>, or a backward output
    that is not grad_<input>, is a ValueError."""
    import torch

    fwd = _program(forward, precision, target, device)
    bwd = _program(backward, precision, target, device)
    ins = [n for n, _ in fwd.inputs]
    outs = [n for n, _ in fwd.outputs]
    allowed = set(ins) | set(outs) | {"grad_" + o for o in outs}
    for n, _ in bwd.inputs:
        if n not in allowed:
            raise ValueError(f"kbc.autograd: backward input {n!r} is neither an input nor an output of "
                             f"{fwd.name} nor grad_<output> (the outputs: {', '.join(outs)})")
    for n, _ in bwd.outputs:
        if not n.startswith("grad_") or n[5:] not in ins:
            raise ValueError(f"kbc.autograd: backward output {n!r} is not grad_<input> for an input of "
                             f"{fwd.name} (the inputs: {', '.join(ins)})")
    need = [n for n, _ in bwd.inputs]
    saved_names = [n for n in ins + outs if n in need]

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            named = dict(zip(ins, args))
            with torch.no_grad():
                result = fwd.run({k: v.contiguous() for k, v in named.items()})
            env = dict(named)
            env.update(result)
            ctx.save_for_backward(*[env[n] for n in saved_names])
            return tuple(result[o] for o in outs) if len(outs) > 1 else result[outs[0]]

        @staticmethod
        def backward(ctx, *grads):
            env = dict(zip(saved_names, ctx.saved_tensors))
            for o, g in zip(outs, grads):
                if "grad_" + o in need:
                    ref = env.get(o)
                    env["grad_" + o] = (g if g is not None else torch.zeros_like(ref)).contiguous()
            with torch.no_grad():
                result = bwd.run({n: env[n] for n in need})
            return tuple(result.get("grad_" + n) for n in ins)

    Function.__name__ = f"kbc_{fwd.name}"

    def apply(*args, **kwargs):
        if kwargs:
            if args:
                raise TypeError("kbc.autograd: pass the inputs by position or by name, not both")
            missing = [n for n in ins if n not in kwargs]
            extra = [n for n in kwargs if n not in ins]
            if missing or extra:
                raise TypeError(f"kbc.autograd: {fwd.name} takes {', '.join(ins)}" +
                                (f"; missing {', '.join(missing)}" if missing else "") +
                                (f"; unexpected {', '.join(extra)}" if extra else ""))
            args = tuple(kwargs[n] for n in ins)
        if len(args) != len(ins):
            raise TypeError(f"kbc.autograd: {fwd.name} takes {len(ins)} inputs ({', '.join(ins)}), got {len(args)}")
        return Function.apply(*args)

    apply.forward_program, apply.backward_program = fwd, bwd
    return apply


_registered: Dict[str, Callable] = {}
_library = None


def op(program: ProgramOrSpec, name: str = None, precision: str = "fp32", target: str = "auto",
       device: int = 0) -> Callable:
    """Registers the program as ``torch.ops.kbc.<name>`` (default: the
    spec's kernel name) taking its inputs in order and returning its
    outputs (a tensor, or a tuple of them); returns that op."""
    import torch

    prog = _program(program, precision, target, device)
    name = name or prog.name
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"kbc.op: {name!r} is not a valid op name")
    if name in _registered:
        return _registered[name]
    global _library
    if _library is None:
        _library = torch.library.Library("kbc", "DEF")
    ins = [n for n, _ in prog.inputs]
    outs = [n for n, _ in prog.outputs]
    ret = "Tensor" if len(outs) == 1 else "(" + ", ".join("Tensor" for _ in outs) + ")"
    _library.define(f"{name}({', '.join('Tensor ' + n for n in ins)}) -> {ret}")

    def kernel(*args):
        result = prog.run({n: a.contiguous() for n, a in zip(ins, args)})
        return result[outs[0]] if len(outs) == 1 else tuple(result[o] for o in outs)

    def fake(*args):
        shapes = prog.output_shapes(dict(zip(ins, args)))
        made = [args[0].new_empty(shapes[o]) for o in outs]
        return made[0] if len(outs) == 1 else tuple(made)

    for key in ("CPU", "CUDA"):
        _library.impl(name, kernel, key)
    register_fake = getattr(torch.library, "register_fake", None) or getattr(torch.library, "impl_abstract", None)
    if register_fake is not None:
        register_fake(f"kbc::{name}", lib=_library)(fake)
    else:  # older torch: shapes on the meta device
        _library.impl(name, fake, "Meta")
    fn = getattr(torch.ops.kbc, name)
    _registered[name] = fn
    return fn
