"""kbc.py — run kbc specs on PyTorch tensors, through libkbc's C API (ctypes).

No build step: this module loads the shared library ``libkbc.so`` (found
through ``$KBC_LIB``, else next to this file, else in the repository's
``build*/`` folders, else by the system loader) and passes tensors by their
``data_ptr()``; kernels run on ``torch.cuda.current_stream()``.

    import kbc, torch
    prog = kbc.Program("specs/examples/softmax_middle.kb")
    x = torch.randn(3, 5, 4, device="cuda")
    out = prog.run({"x": x})["out"]          # allocated by kbc.run
    prog.run({"x": x}, outputs={"out": out}) # into preallocated outputs

CPU tensors run on the reference interpreter (double accumulation).
Errors raise ``kbc.Error`` with the library's message (for a bad spec, its
``file:line:col: error:`` diagnostics).
"""
from __future__ import annotations

import ctypes
import glob
import os
from typing import Dict, Optional

__all__ = ["Program", "Error", "library_path"]

_STATUS = ["KBC_OK", "KBC_ERROR_SPEC", "KBC_ERROR_ARGUMENT", "KBC_ERROR_IO",
           "KBC_ERROR_NO_DEVICE", "KBC_ERROR_CUDA", "KBC_ERROR_INTERNAL"]


class Error(RuntimeError):
    """A failed kbc call: ``status`` is the kbc_status name."""

    def __init__(self, status: int, message: str):
        self.status = _STATUS[status] if 0 <= status < len(_STATUS) else str(status)
        super().__init__(f"{self.status}: {message}")


class _Options(ctypes.Structure):
    _fields_ = [("target", ctypes.c_char_p), ("precision", ctypes.c_int), ("device", ctypes.c_int)]


class _Arg(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("rank", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("dtype", ctypes.c_int)]


class _ArgInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("role", ctypes.c_int), ("dtype", ctypes.c_int), ("rank", ctypes.c_int)]


def library_path() -> str:
    """The libkbc.so this module loads."""
    env = os.environ.get("KBC_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(here, "libkbc.so")]
    repo = os.path.dirname(here)
    for d in ("build/release", "build", "build/debug", "build*"):
        candidates += sorted(glob.glob(os.path.join(repo, d, "libkbc.so")))
    for c in candidates:
        if os.path.exists(c):
            return c
    return "libkbc.so"


_lib = None


def _load():
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(library_path())
    lib.kbc_last_error.restype = ctypes.c_char_p
    lib.kbc_version.restype = ctypes.c_char_p
    lib.kbc_compile_file.argtypes = [ctypes.c_char_p, ctypes.POINTER(_Options), ctypes.POINTER(ctypes.c_void_p)]
    lib.kbc_program_destroy.argtypes = [ctypes.c_void_p]
    lib.kbc_program_destroy.restype = None
    lib.kbc_program_num_args.argtypes = [ctypes.c_void_p]
    lib.kbc_program_arg_info.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(_ArgInfo)]
    lib.kbc_program_num_kernels.argtypes = [ctypes.c_void_p]
    lib.kbc_program_bind_axis.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64]
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
    """A compiled spec.  ``precision`` is "fp32" (default) or "tf32";
    ``target`` "auto" (the device's) or "sm_80" ... "sm_90a"."""

    def __init__(self, spec_path: str, precision: str = "fp32", target: str = "auto", device: int = 0):
        if precision not in ("fp32", "tf32"):
            raise ValueError(f"precision must be 'fp32' or 'tf32', not {precision!r}")
        lib = _load()
        self._lib = lib
        self._handle = ctypes.c_void_p()
        opt = _Options(target.encode(), 0 if precision == "fp32" else 1, device)
        _check(lib.kbc_compile_file(spec_path.encode(), ctypes.byref(opt), ctypes.byref(self._handle)))
        self.precision = precision
        self.inputs, self.outputs = [], []
        for i in range(lib.kbc_program_num_args(self._handle)):
            info = _ArgInfo()
            _check(lib.kbc_program_arg_info(self._handle, i, ctypes.byref(info)))
            (self.inputs if info.role == 0 else self.outputs).append((info.name.decode(), info.rank))

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.kbc_program_destroy(handle)
            self._handle = None

    @property
    def num_kernels(self) -> int:
        """Kernels per launch (after the first GPU run; -1 before)."""
        return self._lib.kbc_program_num_kernels(self._handle)

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

    def _args(self, tensors: Dict[str, "object"]):
        import torch
        arr = (_Arg * len(tensors))()
        keep = []
        for i, (name, t) in enumerate(tensors.items()):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
            if t.dtype != torch.float32:
                raise Error(2, f"'{name}' has dtype {t.dtype}, but kbc specs take float32")
            if not t.is_contiguous():
                raise Error(2, f"'{name}' is not contiguous; pass t.contiguous()")
            shape = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
            keep.append(shape)
            arr[i] = _Arg(name.encode(), ctypes.c_void_p(t.data_ptr()), t.dim(), shape, 0)
        return arr, keep

    def output_shapes(self, inputs: Dict[str, "object"]) -> Dict[str, tuple]:
        arr, _keep = self._args(inputs)
        shapes = {}
        for name, _rank in self.outputs:
            shape, rank = (ctypes.c_int64 * 8)(), ctypes.c_int()
            _check(self._lib.kbc_program_output_shape(self._handle, arr, len(inputs), name.encode(), shape,
                                                      ctypes.byref(rank)))
            shapes[name] = tuple(shape[i] for i in range(rank.value))
        return shapes

    def run(self, inputs: Dict[str, "object"], outputs: Optional[Dict[str, "object"]] = None) -> Dict[str, "object"]:
        """Runs the spec; returns the outputs (allocated unless given).  CUDA
        tensors launch on torch.cuda.current_stream(); CPU tensors run on the
        reference interpreter."""
        import torch
        if outputs is None:
            first = next(iter(inputs.values()))
            outputs = {name: torch.empty(shape, dtype=torch.float32, device=first.device)
                       for name, shape in self.output_shapes(inputs).items()}
        every = dict(inputs)
        every.update(outputs)
        arr, _keep = self._args(every)
        devices = {t.device.type for t in every.values()}
        if len(devices) != 1:
            raise Error(2, f"tensors are on several devices: {sorted(devices)}")
        if devices == {"cuda"}:
            stream = torch.cuda.current_stream().cuda_stream
            _check(self._lib.kbc_program_launch(self._handle, arr, len(every), ctypes.c_void_p(stream)))
        else:
            _check(self._lib.kbc_program_run_cpu(self._handle, arr, len(every)))
        return outputs


def version() -> str:
    return _load().kbc_version().decode()
