"""kbc — run kbc specs on PyTorch tensors, through libkbc's C API (ctypes).

This package loads the shared library ``libkbc.so``: the one ``$KBC_LIB``
names, else the one bundled in the package (``pip install ./python``),
else the repository's ``build*/`` folders (running from a checkout), else
an installed kbc's (``cmake --install``: PREFIX/lib next to
PREFIX/share/kbc/python), else the system loader's.  Tensors are passed by
their ``data_ptr()``; kernels run on ``torch.cuda.current_stream()``.

    import kbc, torch
    prog = kbc.compile("specs/examples/softmax_middle.kb")    # a path or spec text
    x = torch.randn(3, 5, 4, device="cuda")
    out = prog.run({"x": x})["out"]          # outputs allocated by run
    prog.run({"x": x}, outputs={"out": out}) # into preallocated outputs

CPU tensors run on the reference interpreter (double accumulation).
Errors raise ``kbc.Error`` with the library's message (for a bad spec, its
``file:line:col: error:`` diagnostics); a missing spec file raises
FileNotFoundError.  ``kbc.autograd`` pairs a forward spec with its
backward spec as a ``torch.autograd.Function``; ``kbc.op`` registers a
program as a ``torch.library`` custom op (torch.compile graphs).
"""
from __future__ import annotations

import ctypes
import glob
import os
from typing import Dict, Optional

__all__ = ["Program", "Error", "compile", "autograd", "op", "library_path", "version", "__version__"]

# The package's version; the library's own (kbc_version(), version()) must
# be the same (tests/python/test_binding.py checks it).
__version__ = "0.1.0"

_STATUS = ["KBC_OK", "KBC_ERROR_SPEC", "KBC_ERROR_ARGUMENT", "KBC_ERROR_IO",
           "KBC_ERROR_NO_DEVICE", "KBC_ERROR_CUDA", "KBC_ERROR_INTERNAL"]


class Error(RuntimeError):
    """A failed kbc call: ``status`` is the kbc_status name."""

    def __init__(self, status: int, message: str):
        self.status = _STATUS[status] if 0 <= status < len(_STATUS) else str(status)
        super().__init__(f"{self.status}: {message}")


class _Options(ctypes.Structure):
    _fields_ = [("target", ctypes.c_char_p), ("precision", ctypes.c_int), ("device", ctypes.c_int),
                ("config", ctypes.c_char_p)]


class _Arg(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("rank", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("dtype", ctypes.c_int)]


def _arg_array(shapes):
    """The C argument array for (name, shape) pairs, no data pointers yet,
    and the shape arrays that must stay alive with it."""
    arr = (_Arg * max(len(shapes), 1))()
    keep = []
    for i, (name, shape) in enumerate(shapes):
        dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        keep.append(dims)
        arr[i] = _Arg(name.encode(), None, len(shape), dims, 0)
    return arr, keep


class _ArgInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("role", ctypes.c_int), ("dtype", ctypes.c_int), ("rank", ctypes.c_int)]


def library_path() -> str:
    """The libkbc.so this module loads."""
    env = os.environ.get("KBC_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(here, "libkbc.so")]
    repo = os.path.dirname(os.path.dirname(here))  # <repo>/python/kbc
    for d in ("build/release", "build", "build/debug", "build*"):
        candidates += sorted(glob.glob(os.path.join(repo, d, "libkbc.so")))
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(here))))  # PREFIX/share/kbc/python/kbc
    candidates += sorted(glob.glob(os.path.join(prefix, "lib*", "libkbc.so"))) + \
        sorted(glob.glob(os.path.join(prefix, "lib*", "*", "libkbc.so")))
    for c in candidates:
        if os.path.exists(c):
            return c
    return "libkbc.so"


_lib = None


def _load():
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise OSError(f"kbc: cannot load the kbc library ({e}); build it (cmake --build build/release), "
                      f"install the package (pip install ./python), or set KBC_LIB to the path of "
                      f"libkbc.so") from e
    lib.kbc_last_error.restype = ctypes.c_char_p
    lib.kbc_version.restype = ctypes.c_char_p
    lib.kbc_compile_file.argtypes = [ctypes.c_char_p, ctypes.POINTER(_Options), ctypes.POINTER(ctypes.c_void_p)]
    lib.kbc_compile_string.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_Options),
                                       ctypes.POINTER(ctypes.c_void_p)]
    lib.kbc_program_destroy.argtypes = [ctypes.c_void_p]
    lib.kbc_program_destroy.restype = None
    lib.kbc_program_num_args.argtypes = [ctypes.c_void_p]
    lib.kbc_program_arg_info.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(_ArgInfo)]
    lib.kbc_program_num_kernels.argtypes = [ctypes.c_void_p]
    lib.kbc_program_name.argtypes = [ctypes.c_void_p]
    lib.kbc_program_name.restype = ctypes.c_char_p
    lib.kbc_program_bind_axis.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64]
    lib.kbc_program_set_specialize.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.kbc_program_launch.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Arg), ctypes.c_size_t, ctypes.c_void_p]
    lib.kbc_program_run_cpu.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Arg), ctypes.c_size_t]
    lib.kbc_program_output_shape.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Arg), ctypes.c_size_t,
                                             ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64),
                                             ctypes.POINTER(ctypes.c_int)]
    lib.kbc_program_emit.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.POINTER(ctypes.c_size_t)]
    lib.kbc_free.argtypes = [ctypes.c_void_p]
    lib.kbc_free.restype = None
    _lib = lib
    return lib


def _check(status: int) -> None:
    if status != 0:
        raise Error(status, _load().kbc_last_error().decode(errors="replace"))


class Program:
    """A compiled spec: a spec file's path (``Program(path)``) or, with
    ``source=``, spec text (``Program(source=text, name="attn")``; see also
    ``kbc.compile``).  ``precision`` is "fp32" (default) or "tf32";
    ``target`` "auto" (the device's) or "sm_80" ... "sm_90a"; ``device``
    the CUDA device ordinal its GPU launches use; ``config`` code generation
    switches, "KBC_GEMM_STAGES=3 KBC_GEMM_WGMMA=0", instead of a ``kbc tune``
    record (kbc_options.config; the environment's switches still win)."""

    def __init__(self, spec_path: Optional[str] = None, precision: str = "fp32", target: str = "auto",
                 device: int = 0, *, source: Optional[str] = None, name: Optional[str] = None,
                 config: Optional[str] = None):
        if precision not in ("fp32", "tf32"):
            raise ValueError(f"precision must be 'fp32' or 'tf32', not {precision!r}")
        if (spec_path is None) == (source is None):
            raise TypeError("Program takes a spec file's path or source= spec text (one of them)")
        if spec_path is not None and not os.path.isfile(spec_path):
            raise FileNotFoundError(f"kbc: no spec file {spec_path!r}")
        lib = _load()
        self._lib = lib
        self._handle = ctypes.c_void_p()
        opt = _Options(target.encode(), 0 if precision == "fp32" else 1, device,
                       config.encode() if config is not None else None)
        if source is not None:
            _check(lib.kbc_compile_string(source.encode(), (name or "spec.kb").encode(), ctypes.byref(opt),
                                          ctypes.byref(self._handle)))
        else:
            _check(lib.kbc_compile_file(os.fspath(spec_path).encode(), ctypes.byref(opt), ctypes.byref(self._handle)))
        self.precision = precision
        self.device = device
        self.inputs, self.outputs = [], []
        for i in range(lib.kbc_program_num_args(self._handle)):
            info = _ArgInfo()
            _check(lib.kbc_program_arg_info(self._handle, i, ctypes.byref(info)))
            (self.inputs if info.role == 0 else self.outputs).append((info.name.decode(), info.rank))
        self.name = lib.kbc_program_name(self._handle).decode()
        self._layouts = {}

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.kbc_program_destroy(handle)
            self._handle = None

    @property
    def num_kernels(self) -> int:
        """Kernels per launch (after the first GPU run; -1 before)."""
        return self._lib.kbc_program_num_kernels(self._handle)

    def set_specialize(self, max_bindings: int) -> None:
        """Code made for the exact sizes of the first max_bindings distinct
        bindings this program runs (0: generic code only); the default is
        $KBC_SPECIALIZE, else 16 (kbc_program_set_specialize)."""
        _check(self._lib.kbc_program_set_specialize(self._handle, int(max_bindings)))

    def bind_axis(self, axis: str, value: int) -> None:
        _check(self._lib.kbc_program_bind_axis(self._handle, axis.encode(), value))

    def emit(self, what: str = "cuda") -> bytes:
        """The IR ("ir"), CUDA C ("cuda"), PTX ("ptx") or cubin ("cubin")."""
        out, n = ctypes.c_void_p(), ctypes.c_size_t()
        _check(self._lib.kbc_program_emit(self._handle, what.encode(), ctypes.byref(out), ctypes.byref(n)))
        try:
            return ctypes.string_at(out, n.value)
        finally:
            self._lib.kbc_free(out)

    def _args(self, tensors: Dict[str, "object"], shapes_only: bool = False):
        """The C argument array (and what must stay alive while it is used).
        shapes_only: no data pointers (fake tensors, shape inference)."""
        import torch
        for name, t in tensors.items():
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"kbc: '{name}': expected a torch.Tensor, got {type(t).__name__}")
            if t.dtype != torch.float32:
                raise Error(2, f"'{name}' has dtype {t.dtype}, but kbc specs take float32 (pass t.float())")
            if not shapes_only and not t.is_contiguous():
                raise Error(2, f"'{name}' is not contiguous; pass t.contiguous()")
        arr, keep = _arg_array([(name, tuple(t.shape)) for name, t in tensors.items()])
        if not shapes_only:
            for i, t in enumerate(tensors.values()):
                arr[i].data = t.data_ptr()
        return arr, keep

    def _check_inputs(self, inputs: Dict[str, "object"]) -> None:
        if not inputs:
            names = ", ".join(n for n, _ in self.inputs) or "none"
            raise Error(2, f"no inputs given; {self.name} takes {names}")

    def output_shapes(self, inputs: Dict[str, "object"]) -> Dict[str, tuple]:
        """The outputs' shapes for these inputs (only their shapes are read)."""
        self._check_inputs(inputs)
        arr, _keep = self._args(inputs, shapes_only=True)
        shapes = {}
        for name, _rank in self.outputs:
            shape, rank = (ctypes.c_int64 * 8)(), ctypes.c_int()
            _check(self._lib.kbc_program_output_shape(self._handle, arr, len(inputs), name.encode(), shape,
                                                      ctypes.byref(rank)))
            shapes[name] = tuple(shape[i] for i in range(rank.value))
        return shapes

    # The most argument layouts (names and shapes) run remembers: past it,
    # it forgets them all and starts again.
    _MAX_LAYOUTS = 64

    def _layout(self, key: tuple, inputs: Dict[str, "object"], outputs: Optional[Dict[str, "object"]]):
        """For the arguments' names and shapes (key): the C argument array,
        inputs then outputs, its pointers filled in by each call, and the
        outputs' shapes when run allocates them; made once per layout."""
        layout = self._layouts.get(key)
        if layout is None:
            out_shapes = self.output_shapes(inputs) if outputs is None else None
            shapes = [(n, tuple(t.shape)) for n, t in inputs.items()]
            shapes += list(out_shapes.items()) if outputs is None else [(n, tuple(t.shape)) for n, t in outputs.items()]
            arr, keep = _arg_array(shapes)
            if len(self._layouts) >= self._MAX_LAYOUTS:
                self._layouts.clear()
            layout = self._layouts[key] = (arr, keep, out_shapes)
        return layout

    def run(self, inputs: Dict[str, "object"], outputs: Optional[Dict[str, "object"]] = None) -> Dict[str, "object"]:
        """Runs the spec; returns the outputs (allocated unless given).  CUDA
        tensors launch on torch.cuda.current_stream() of the program's
        device; CPU tensors run on the reference interpreter.  Gradients are
        not recorded: an input that requires grad (outside torch.no_grad())
        is an error — pair the spec with its backward spec in kbc.autograd.
        One program's runs must not overlap (as kbc_program_launch's): the
        argument array of a layout is kept and reused.  No output may share
        memory with an input or another output: independent kernels may run
        side by side."""
        import torch
        self._check_inputs(inputs)
        f32, grad, key, where = torch.float32, torch.is_grad_enabled(), [], set()
        for group in (inputs, outputs or {}):
            for name, t in group.items():
                if not isinstance(t, torch.Tensor):
                    raise TypeError(f"kbc: '{name}': expected a torch.Tensor, got {type(t).__name__}")
                if t.dtype is not f32:
                    raise Error(2, f"'{name}' has dtype {t.dtype}, but kbc specs take float32 (pass t.float())")
                if not t.is_contiguous():
                    raise Error(2, f"'{name}' is not contiguous; pass t.contiguous()")
                if grad and t.requires_grad and group is inputs:
                    raise Error(2, f"input {name!r} requires grad, but Program.run records no gradients; use "
                                   f"kbc.autograd(forward_spec, backward_spec), or run under torch.no_grad()")
                where.add(t.get_device())
                key.append((name, t.shape))
            key.append(None)
        if len(where) != 1:
            devices = {str(t.device) for g in (inputs, outputs or {}) for t in g.values()}
            raise Error(2, f"tensors are on several devices: {', '.join(sorted(devices))}")
        arr, _keep, out_shapes = self._layout(tuple(key), inputs, outputs)
        device = next(iter(inputs.values())).device
        if outputs is None:
            outputs = {name: torch.empty(shape, dtype=f32, device=device) for name, shape in out_shapes.items()}
        i = 0
        for group in (inputs, outputs):
            for t in group.values():
                arr[i].data = t.data_ptr()
                i += 1
        index = where.pop()
        if index >= 0:
            if index != self.device:
                raise Error(2, f"the tensors are on cuda:{index}, but the program runs on cuda:{self.device} "
                               f"(kbc.compile(..., device={index}))")
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            stream = raw(index) if raw is not None else torch.cuda.current_stream(index).cuda_stream
            _check(self._lib.kbc_program_launch(self._handle, arr, i, ctypes.c_void_p(stream)))
        elif device.type == "cpu":
            _check(self._lib.kbc_program_run_cpu(self._handle, arr, i))
        else:
            raise Error(2, f"tensors on {device.type} are not supported (cuda or cpu)")
        return outputs


def compile(spec: str, precision: str = "fp32", target: str = "auto", device: int = 0,
            name: Optional[str] = None, config: Optional[str] = None) -> Program:
    """A Program from a spec file's path or from spec text (text is told
    apart by holding a newline or the word ``kernel``)."""
    if "\n" in spec or spec.lstrip().startswith("kernel "):
        return Program(source=spec, name=name, precision=precision, target=target, device=device, config=config)
    return Program(spec, precision=precision, target=target, device=device, config=config)


def version() -> str:
    """The library's version (kbc_version())."""
    return _load().kbc_version().decode()


from ._torch import autograd, op  # noqa: E402  (torch is imported only when they are called)
