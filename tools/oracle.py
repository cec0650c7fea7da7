#!/usr/bin/python3
"""kbc's PyTorch oracle: reference data for a workload, and the check of kbc's outputs.

    oracle.py list
    oracle.py gen WORKLOAD --inputs IN.safetensors --expected EXP.safetensors
                  [--set AXIS=N]... [--seed S]
    oracle.py compare EXP.safetensors OUT.safetensors [--tol 1e-5] [--json]

``gen`` draws fresh float32 inputs (a random seed, printed, unless --seed is
given) and computes the expected outputs with PyTorch in float64; the inputs
are written as F32, the expected outputs as F64 (with the workload, seed and
axes in the file's ``__metadata__``).  ``compare`` checks every tensor of EXP
against OUT by relative L2 error ||out - exp|| / ||exp|| (absolute when
||exp|| == 0) and reports the max abs error too.  The workloads live in
oracle_workloads.py (torch is imported only by ``gen`` and ``list``).

A hidden ``perturb IN OUT [--eps E] [--dtype F32|F64] [--drop NAME] [--nan NAME]``
writes a damaged copy of a file for the self-check.

Exit status: 0 success, 1 comparison failed, 2 bad arguments or unreadable files.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import st  # noqa: E402  (the sibling module)

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad arguments or unreadable files: reported on stderr, exit status 2."""


# ------------------------------------------------------------------ gen / list

def parse_sets(items: Sequence[str], defaults: dict[str, int], workload: str) -> dict[str, int]:
    """Apply ``AXIS=N`` overrides to the default axes of a workload."""
    axes = dict(defaults)
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--set {item!r}: expected AXIS=N")
        if name not in axes:
            raise UsageError(f"--set {item!r}: {workload} has no axis {name!r} (axes: {', '.join(axes)})")
        try:
            axes[name] = int(value)
        except ValueError:
            raise UsageError(f"--set {item!r}: {value!r} is not an integer") from None
        if axes[name] < 1:
            raise UsageError(f"--set {item!r}: axis sizes must be >= 1")
    return axes


def axes_text(axes: dict[str, int]) -> str:
    """``a=1 b=2`` for messages and metadata."""
    return " ".join(f"{k}={v}" for k, v in axes.items())


def cmd_list(args: argparse.Namespace) -> int:
    """Print every workload with its default (test) axes."""
    from oracle_workloads import REGISTRY
    width = max(len(name) for name in REGISTRY)
    for w in REGISTRY.values():
        print(f"{w.name:<{width}}  {axes_text(w.axes)}")
        print(f"{'':<{width}}    {w.summary}")
    return EXIT_OK


def cmd_gen(args: argparse.Namespace) -> int:
    """Draw inputs, compute the float64 reference, write both files."""
    import torch
    from oracle_workloads import REGISTRY, AxisError

    w = REGISTRY.get(args.workload)
    if w is None:
        raise UsageError(f"unknown workload {args.workload!r} (known: {', '.join(REGISTRY)})")
    axes = parse_sets(args.set, w.axes, w.name)
    if Path(args.inputs).resolve() == Path(args.expected).resolve():
        raise UsageError("--inputs and --expected name the same file")
    seed = args.seed if args.seed is not None else secrets.randbelow(2 ** 31)
    if not 0 <= seed < 2 ** 63:
        raise UsageError(f"--seed {seed}: must be in [0, 2^63)")

    start = time.perf_counter()
    try:
        inputs, expected = w.build(axes, torch.Generator().manual_seed(seed))
    except AxisError as exc:
        raise UsageError(f"{w.name} with {axes_text(axes)}: {exc}") from None
    elapsed = time.perf_counter() - start

    for name, t in inputs.items():
        assert t.dtype == torch.float32, f"input {name} is {t.dtype}"
    for name, t in expected.items():
        assert t.dtype == torch.float64, f"output {name} is {t.dtype}"
        assert bool(torch.isfinite(t).all()), f"output {name} is not finite"
    metadata = {"workload": w.name, "seed": str(seed), "axes": axes_text(axes), "torch": torch.__version__}
    st.write(args.inputs, {k: v.detach().contiguous().numpy() for k, v in inputs.items()})
    st.write(args.expected, {k: v.detach().contiguous().numpy() for k, v in expected.items()}, metadata)

    n_in = sum(t.numel() for t in inputs.values())
    n_out = sum(t.numel() for t in expected.values())
    print(f"gen {w.name} seed={seed} {axes_text(axes)}: {len(inputs)} inputs ({n_in} values) -> {args.inputs}, "
          f"{len(expected)} outputs ({n_out} values) -> {args.expected} [{elapsed:.2f} s]")
    return EXIT_OK


# ------------------------------------------------------------------ compare

def read_file(path: str) -> dict[str, np.ndarray]:
    """Read a safetensors file, turning any failure into a UsageError."""
    try:
        return st.read(path)
    except (OSError, st.SafetensorsError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None


def compare_tensor(name: str, exp: np.ndarray, out: np.ndarray | None, tol: float) -> dict[str, object]:
    """One output's verdict: its errors, ok, and why not."""
    row: dict[str, object] = {"name": name, "shape": list(exp.shape), "rel_l2": None, "max_abs": None,
                              "metric": "relative", "ok": False, "error": None}
    if out is None:
        row["error"] = "missing"
        return row
    if out.shape != exp.shape:
        row["error"] = f"shape {list(out.shape)}, expected {list(exp.shape)}"
        return row
    o, e = out.astype(np.float64), exp.astype(np.float64)
    bad = int(np.count_nonzero(~np.isfinite(o)))
    if bad:
        row["error"] = f"{bad} NaN/Inf values"
        return row
    if not np.isfinite(e).all():
        row["error"] = "expected has NaN/Inf values"
        return row
    diff = o - e
    err, ref = float(np.linalg.norm(diff)), float(np.linalg.norm(e))
    if ref == 0.0:
        row["metric"] = "absolute"
    row["rel_l2"] = err / ref if ref > 0.0 else err
    row["max_abs"] = float(np.abs(diff).max()) if diff.size else 0.0
    row["ok"] = row["rel_l2"] <= tol
    if not row["ok"]:
        row["error"] = f"error {row['rel_l2']:.3e} > tol {tol:g}"
    return row


def cmd_compare(args: argparse.Namespace) -> int:
    """Check every tensor of EXP against OUT; exit 1 on any failure."""
    if not (args.tol >= 0.0 and np.isfinite(args.tol)):
        raise UsageError(f"--tol {args.tol}: must be a finite number >= 0")
    expected, actual = read_file(args.expected), read_file(args.output)
    if not expected:
        raise UsageError(f"{args.expected} holds no tensors")
    rows = [compare_tensor(name, exp, actual.get(name), args.tol) for name, exp in expected.items()]
    extra = [name for name in actual if name not in expected]
    passed = all(row["ok"] for row in rows)
    if args.json:
        print(json.dumps({"ok": passed, "tol": args.tol, "outputs": rows, "extra": extra}))
        return EXIT_OK if passed else EXIT_MISMATCH

    width = max(len("output"), *(len(row["name"]) for row in rows))
    print(f"{'output':<{width}}  {'shape':<20} {'rel_l2':>10} {'max_abs':>10}  result")
    for row in rows:
        rel = "-" if row["rel_l2"] is None else f"{row['rel_l2']:.3e}"
        mx = "-" if row["max_abs"] is None else f"{row['max_abs']:.3e}"
        note = " (absolute: expected is all zeros)" if row["metric"] == "absolute" else ""
        result = "ok" if row["ok"] else f"FAIL: {row['error']}"
        print(f"{row['name']:<{width}}  {str(row['shape']):<20} {rel:>10} {mx:>10}  {result}{note}")
    if extra:
        print(f"note: {args.output} also holds {', '.join(extra)} (not checked)")
    failed = sum(not row["ok"] for row in rows)
    verdict = "PASS" if passed else f"FAIL ({failed} of {len(rows)})"
    print(f"compare: {verdict}, {len(rows)} outputs, tol {args.tol:g}")
    return EXIT_OK if passed else EXIT_MISMATCH


# ------------------------------------------------------------------ perturb (hidden)

def cmd_perturb(args: argparse.Namespace) -> int:
    """Write a damaged copy: every value v moves by eps*(|v|+1), so the error is >= eps."""
    try:
        tensors, metadata = st.loads(Path(args.input).read_bytes())
    except (OSError, st.SafetensorsError) as exc:
        raise UsageError(f"cannot read {args.input}: {exc}") from None
    for name in (*args.drop, *args.nan):
        if name not in tensors:
            raise UsageError(f"{args.input} has no tensor {name!r}")
    for name in args.drop:
        del tensors[name]
    result: dict[str, np.ndarray] = {}
    for name, array in tensors.items():
        if array.dtype.kind == "f":
            array = array + args.eps * (np.abs(array) + 1.0)
            if name in args.nan:
                if array.size == 0:
                    raise UsageError(f"--nan {name}: tensor is empty")
                array.flat[0] = np.nan
        elif name in args.nan:
            raise UsageError(f"--nan {name}: not a float tensor")
        result[name] = array.astype(st.DTYPES[args.dtype]) if args.dtype and array.dtype.kind == "f" else array
    st.write(args.output, result, metadata)
    return EXIT_OK


# ------------------------------------------------------------------ CLI

def build_parser() -> argparse.ArgumentParser:
    """The argument parser (perturb is left out of the help)."""
    parser = argparse.ArgumentParser(prog="oracle.py", description="kbc's PyTorch oracle.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{list,gen,compare}")

    p = sub.add_parser("list", help="the workloads and their default (test) axes")
    p.set_defaults(run=cmd_list)

    p = sub.add_parser("gen", help="random inputs and float64 PyTorch expected outputs")
    p.add_argument("workload")
    p.add_argument("--inputs", required=True, metavar="IN.safetensors")
    p.add_argument("--expected", required=True, metavar="EXP.safetensors")
    p.add_argument("--set", action="append", default=[], metavar="AXIS=N", help="override an axis size")
    p.add_argument("--seed", type=int, help="seed (default: random, printed)")
    p.set_defaults(run=cmd_gen)

    p = sub.add_parser("compare", help="check outputs against the expected ones")
    p.add_argument("expected", metavar="EXP.safetensors")
    p.add_argument("output", metavar="OUT.safetensors")
    p.add_argument("--tol", type=float, default=1e-5, help="max relative L2 error (default 1e-5)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=cmd_compare)

    p = sub.add_parser("perturb")
    p.add_argument("input", metavar="IN.safetensors")
    p.add_argument("output", metavar="OUT.safetensors")
    p.add_argument("--eps", type=float, default=1e-3)
    p.add_argument("--dtype", choices=["F32", "F64"], help="convert float tensors")
    p.add_argument("--drop", action="append", default=[], metavar="NAME")
    p.add_argument("--nan", action="append", default=[], metavar="NAME")
    p.set_defaults(run=cmd_perturb)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments and run the subcommand."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"oracle.py {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
