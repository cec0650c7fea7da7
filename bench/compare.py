#!/usr/bin/python3
"""Side-by-side benchmark of kbc against PyTorch eager and torch.compile, in one process.

    python3 bench/compare.py                      # everything, on the GPU
    python3 bench/compare.py --quick              # headline shapes, fewer reps
    python3 bench/compare.py --device cpu --quick --no-compile   # smoke test without a GPU

For each workload (CViT, conv3d-min-softmax, SAM-HQ backward) and shape, on
the same inputs: every implementation's outputs are checked against a
float64 reference (relative L2 error, max abs error), timed with CUDA events
(median), and placed against the roofline floor measured on the device.
Docs: docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import torch  # noqa: E402

from accuracy import accuracy  # noqa: E402
import impls as im  # noqa: E402
import report  # noqa: E402
from roofline import Ceilings, floor_us, measure_ceilings  # noqa: E402
from timing import DeadlineExceeded, TimingConfig, deadline, measure, synchronize  # noqa: E402
from workloads import WORKLOADS, Shape, Workload, check_against_oracle, shapes_for, tensor_bytes  # noqa: E402

Tensors = dict[str, torch.Tensor]
Row = dict[str, object]
THRESHOLDS = {"fp32": 1e-5, "tf32": 2e-3}
L2_DEFAULT = 60 << 20        # H200: 60 MiB
CPU_CACHE = 8 << 20          # on the CPU: a nominal last-level cache, so that rotation is exercised
SEED = 20261


class Session:
    """State shared by the whole run: device, options, ceilings, kbc, and whether CUDA still works."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.device = torch.device(args.device)
        self.timing = TimingConfig.make(args.quick, args.max_seconds)
        self.opts = im.Options(compile_modes=args.compile_modes, no_compile=args.no_compile,
                               kbc_precisions=args.kbc_precisions)
        self.kbc = im.KbcProvider()
        self.ceilings: Ceilings | None = None
        self.broken: str | None = None          # set when the CUDA context is unusable
        self.rows: list[Row] = []

    def cache_bytes(self) -> int:
        """The last-level cache that rotation must defeat."""
        if self.device.type != "cuda":
            return CPU_CACHE
        return int(getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 0) or L2_DEFAULT)


# ------------------------------------------------------------------ inputs and accuracy

def make_sets(session: Session, workload: Workload, shape: Shape) -> list[Tensors]:
    """Input set 0 (seeded, drawn as the oracle draws) plus clones, enough to exceed 2x the cache."""
    base = workload.make_inputs(dict(shape.axes), torch.Generator().manual_seed(SEED))
    base = {k: v.to(session.device) for k, v in base.items()}
    size = tensor_bytes(base)
    n = 1 if size >= 2 * session.cache_bytes() else math.ceil(2 * session.cache_bytes() / size)
    if session.device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(session.device)
        n = min(n, max(1, int(free * 0.25 // size)))
    n = min(n, session.args.max_sets)
    return [base] + [{k: v.clone() for k, v in base.items()} for _ in range(n - 1)]


def worst(errors: dict[str, dict[str, object]]) -> tuple[float | None, float | None, str | None, str | None]:
    """(worst rel err, worst max abs, the output with the worst rel err, the first hard error)."""
    hard = next((f"{n}: {e['error']}" for n, e in errors.items() if e["error"]), None)
    rels = {n: e["rel_l2"] for n, e in errors.items() if e["rel_l2"] is not None}
    if not rels:
        return None, None, None, hard
    name = max(rels, key=rels.get)
    return rels[name], max(e["max_abs"] for e in errors.values() if e["max_abs"] is not None), name, hard


def merge_errors(a: dict, b: dict) -> dict:
    """The worse of two accuracy results per output (kbc: fresh-allocation run and poisoned run)."""
    out = {}
    for name in a:
        ea, eb = a[name], b.get(name, a[name])
        if ea["error"] or eb["error"]:
            out[name] = ea if ea["error"] else eb
        else:
            out[name] = ea if ea["rel_l2"] >= eb["rel_l2"] else eb
    return out


# ------------------------------------------------------------------ one implementation on one shape

def new_row(workload: Workload, shape: Shape, impl: im.Impl, n_sets: int, set_bytes: int,
            flops: int, min_bytes: int) -> Row:
    """A result row with every field present."""
    return {"workload": workload.key, "workload_title": workload.title, "shape": shape.label,
            "axes": dict(shape.axes), "primary": shape.primary, "impl": impl.label, "family": impl.family,
            "precision": impl.precision, "baseline": impl.baseline, "note": impl.note,
            "status": "N/A", "reason": None, "built": False, "counts": False, "threshold": THRESHOLDS[impl.precision],
            "median_us": None, "timing": None, "n_sets": n_sets, "set_bytes": set_bytes,
            "setup_s": None, "first_call_s": None, "kbc_program_s": None, "kernels": None, "compiled_graphs": None,
            "rel_err": None, "max_abs_err": None, "worst_output": None, "errors": None,
            "flops": flops, "min_bytes": min_bytes, "floor_us": None, "floor_bound": None,
            "pct_of_floor": None, "speedup": None}


def cuda_alive(session: Session) -> bool:
    """After an exception: is the CUDA context still usable?  Remembers when it is not."""
    if session.device.type != "cuda" or session.broken:
        return session.broken is None
    try:
        torch.cuda.synchronize(session.device)
        return True
    except Exception as exc:  # noqa: BLE001
        session.broken = f"CUDA context unusable: {type(exc).__name__}: {str(exc).splitlines()[0]}"
        return False


def set_up(session: Session, impl: im.Impl, sets: list[Tensors], row: Row) -> tuple[object, Tensors]:
    """Build, make the first call on every set (compiles happen here), warm a little; return runner, first outputs."""
    budget = session.args.compile_timeout if impl.family in ("compile", "kbc") else None
    graphs_before = im.dynamo_graph_count()
    start = time.perf_counter()
    with deadline(budget, f"{impl.label} set-up"):
        runner = impl.build(sets)
        row["built"] = True
        first = runner(0)
        first = {k: v.detach().clone() for k, v in first.items()}   # CUDA-graph outputs are overwritten later
        synchronize(session.device)
        row["first_call_s"] = time.perf_counter() - start
        for i in range(1, len(sets)):
            runner(i)
        for i in range(2 * len(sets)):      # torch.compile records CUDA graphs on later calls
            runner(i % len(sets))
        synchronize(session.device)
    row["setup_s"] = time.perf_counter() - start
    if impl.family == "compile" and graphs_before is not None:
        row["compiled_graphs"] = im.dynamo_graph_count() - graphs_before   # > 1: graph breaks
    return runner, first


def check(session: Session, impl: im.Impl, runner: object, first: Tensors, reference: Tensors, row: Row) -> None:
    """Accuracy of the first outputs (and, for kbc, of a run into NaN-poisoned outputs)."""
    errors = accuracy(first, reference)
    if isinstance(runner, im.KbcRunner):
        poisoned = runner.poisoned_run(0)
        synchronize(session.device)
        errors = merge_errors(errors, accuracy(poisoned, reference))
    if row["errors"]:                       # checked before: keep the worse of the two checks
        errors = merge_errors(row["errors"], errors)
    rel, mx, name, hard = worst(errors)
    row.update(errors=errors, rel_err=rel, max_abs_err=mx, worst_output=name)
    if hard:
        row.update(status="FAIL", reason=hard)
    elif rel is not None and rel <= row["threshold"]:
        row["status"] = "ok"
    else:
        row.update(status="FAIL", reason=f"rel err {rel:.2e} on {name} > {row['threshold']:g}")


def run_impl(session: Session, impl: im.Impl, sets: list[Tensors], reference: Tensors, row: Row) -> None:
    """Set up, check, time one implementation; every failure becomes N/A with its reason."""
    if session.broken:
        row["reason"] = session.broken
        return
    if impl.skip or impl.build is None:
        row["reason"] = impl.skip or "not available"
        return
    runner = None
    try:
        runner, first = set_up(session, impl, sets, row)
        check(session, impl, runner, first, reference, row)
        del first
        timing = measure(runner, len(sets), session.timing, session.device)
        row.update(median_us=timing.median_us, timing=timing.as_dict())
        if impl.family == "kbc" and row["status"] == "ok":
            check(session, impl, runner, runner(0), reference, row)   # still right after the timed loop
    except DeadlineExceeded as exc:
        row.update(status="N/A", reason=f"{exc} (compile budget, --compile-timeout)", median_us=None)
    except Exception as exc:  # noqa: BLE001 — report, never crash the run
        first_line = (str(exc).strip().splitlines() or [""])[0][:300]
        # kbc that compiled but then raised (a launch error, a crash) failed; anything else could not run.
        failed = impl.family == "kbc" and row["built"]
        row.update(status="FAIL" if failed else "N/A", reason=f"{type(exc).__name__}: {first_line}",
                   median_us=None)
        if session.args.verbose:
            traceback.print_exc()
        cuda_alive(session)
    finally:
        if impl.family == "kbc":
            key = (str(WORKLOADS[row["workload"]].spec), impl.variant or impl.precision)
            row["kbc_program_s"] = session.kbc.compile_s.get(key)
            prog = session.kbc.programs.get(key)
            row["kernels"] = prog.num_kernels if prog is not None and prog.num_kernels > 0 else None
        del runner
        if impl.family == "compile":
            im.reset_compiler()
        gc.collect()
        if session.device.type == "cuda" and not session.broken:
            torch.cuda.empty_cache()


def finish_row(session: Session, row: Row) -> None:
    """Floor, % of floor, and whether the time may count (kbc rows must pass)."""
    floor, bound = floor_us(row["flops"], row["min_bytes"], row["precision"], session.ceilings)
    row.update(floor_us=floor, floor_bound=bound)
    row["counts"] = row["median_us"] is not None and (row["family"] != "kbc" or row["status"] == "ok")
    if row["counts"]:
        row["pct_of_floor"] = 100.0 * floor / row["median_us"]


# ------------------------------------------------------------------ workloads and shapes

def run_shape(session: Session, workload: Workload, shape: Shape, impls: list[im.Impl]) -> list[Row]:
    """Every implementation on one shape, on the same inputs and against one float64 reference."""
    sets = make_sets(session, workload, shape)
    start = time.perf_counter()
    reference = workload.reference(sets[0])
    synchronize(session.device)
    ref_s = time.perf_counter() - start
    flops = workload.flops(shape.axes)
    min_bytes = tensor_bytes(sets[0]) + tensor_bytes(reference, itemsize=4)
    print(f"\n== {workload.key} {shape.label}: {flops / 1e9:.3f} GFLOP, {min_bytes / 1e6:.2f} MB, "
          f"{len(sets)} input set(s) of {tensor_bytes(sets[0]) / 1e6:.2f} MB, reference {ref_s:.2f} s", flush=True)
    rows = []
    for impl in impls:
        row = new_row(workload, shape, impl, len(sets), tensor_bytes(sets[0]), flops, min_bytes)
        run_impl(session, impl, sets, reference, row)
        finish_row(session, row)
        rows.append(row)
        t = f"{row['median_us']:,.1f} µs" if row["median_us"] is not None else "-"
        err = f"{row['rel_err']:.1e}" if row["rel_err"] is not None else "-"
        print(f"   {impl.label:<40} {t:>14}  err {err:>8}  {row['status']}"
              f"{'  ' + str(row['reason']) if row['reason'] else ''}", flush=True)
    del sets, reference
    gc.collect()
    if session.device.type == "cuda" and not session.broken:
        torch.cuda.empty_cache()
    return rows


def document(session: Session, env: dict, problems: list[str], done: bool) -> dict[str, object]:
    """The JSON document (written after every shape, and at the end)."""
    report.speedups(session.rows)
    return {"schema": report.SCHEMA, "complete": done, "environment": env,
            "arguments": {k: v for k, v in vars(session.args).items() if k not in ("json", "png")},
            "thresholds": THRESHOLDS, "oracle_consistency": problems or "ok",
            "ceilings": session.ceilings.as_dict() if session.ceilings else None,
            "results": session.rows, "summary": report.summaries(session.rows)}


def run_all(session: Session) -> dict[str, object]:
    """Ceilings, then every workload and shape; returns the final JSON document."""
    env = report.environment(session.device)
    problems = check_against_oracle()
    for p in problems:
        print(f"WARNING: oracle consistency: {p}", file=sys.stderr)
    print(f"device {env['gpu']['name'] if env['gpu'] else 'cpu'}, torch {env['torch']}, "
          f"kbc {env['kbc']['commit']}; measuring ceilings ...", flush=True)
    session.ceilings = measure_ceilings(session.device, session.args.quick)
    c = session.ceilings
    print(f"ceilings: copy {c.bandwidth_Bps / 1e12:.3f} TB/s, fp32 {c.fp32_flops / 1e12:.2f} TFLOP/s, "
          f"tf32 {c.tf32_flops / 1e12:.2f} TFLOP/s", flush=True)
    if session.kbc.error:
        print(f"kbc: N/A ({session.kbc.error})", flush=True)
    for key in session.args.workloads:
        workload = WORKLOADS[key]
        impls = im.impls_for(workload, session.opts, session.kbc)
        for shape in shapes_for(key, session.device, session.args.quick, session.args.sam_shapes,
                                session.args.headline):
            session.rows.extend(run_shape(session, workload, shape, impls))
            report.write_json(session.args.json, document(session, env, problems, done=False))
    if session.device.type == "cuda" and not session.broken:
        env["nvidia_smi_end"] = report.nvidia_smi()
    return document(session, env, problems, done=True)


# ------------------------------------------------------------------ CLI

def csv_list(choices: list[str] | None = None):
    """An argparse type: a comma-separated list (optionally restricted to choices)."""
    def parse(text: str) -> list[str]:
        items = [s.strip() for s in text.split(",") if s.strip()]
        bad = [s for s in items if choices and s not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated subset of {choices}, got {text!r}")
        return items
    return parse


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(prog="compare.py", description=__doc__.splitlines()[0])
    p.add_argument("--workloads", type=csv_list(list(WORKLOADS)), default=list(WORKLOADS),
                   help="comma-separated subset of cvit,conv3d,sam (default: all)")
    p.add_argument("--quick", action="store_true",
                   help="headline shapes only (SAM-HQ: 7x7 b1, 32x32 b2, 64x64 b4), fewer repetitions")
    p.add_argument("--headline", action="store_true",
                   help="headline shapes only (as --quick), at full repetitions")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: small shapes and host timers, for testing without a GPU")
    p.add_argument("--json", type=Path, default=HERE / "results" / "latest.json", help="results file")
    p.add_argument("--png", type=Path, default=HERE / "results" / "speedup.png", help="speedup chart")
    p.add_argument("--max-seconds", type=float, default=20.0, help="time cap per implementation and shape")
    p.add_argument("--max-sets", type=int, default=64,
                   help="most input sets to rotate over (1 = no rotation; default 64)")
    p.add_argument("--compile-timeout", type=float, default=600.0,
                   help="budget in seconds for one compile (torch.compile or kbc) and its first calls")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile rows")
    p.add_argument("--compile-modes", type=csv_list(["default", "max-autotune", "reduce-overhead",
                                                     "max-autotune-no-cudagraphs"]),
                   default=["default", "max-autotune"], help="torch.compile modes (default: default,max-autotune)")
    p.add_argument("--kbc-precisions", type=csv_list(["fp32", "tf32", "fp32mma", "fp32generic"]),
                   default=["fp32", "tf32"],
                   help="kbc precisions to time (default: fp32,tf32; fp32mma: fp32 contractions as 3xTF32 "
                        "on tensor cores, KBC_FP32_MMA=1, checked at the fp32 threshold; fp32generic: the code "
                        "for any sizes, KBC_SPECIALIZE=0, where fp32 runs code specialized for each shape)")
    p.add_argument("--sam-shapes", default=None,
                   help="SAM-HQ shapes as HxWxB,... or 'all' (default: all 16; --quick: 3; cpu: 2 small)")
    p.add_argument("--verbose", action="store_true", help="print tracebacks of N/A rows")
    p.add_argument("--merge", nargs="+", type=Path, metavar="JSON",
                   help="run nothing: merge earlier results files into --json / --png and print the table")
    return p


def finish(doc: dict[str, object], args: argparse.Namespace) -> None:
    """Write the JSON and the chart; print the reasons and, last, the table."""
    report.write_json(args.json, doc)
    rows = doc["results"]
    titles = {k: w.title for k, w in WORKLOADS.items()}
    baselines = {r["workload"]: f"PyTorch {r['impl']}" for r in rows if r["baseline"]}
    env = doc["environment"]
    subtitle = (f"{env['gpu']['name'] if env['gpu'] else 'CPU (test mode)'}, torch {env['torch']}, "
                f"kbc {str(env['kbc']['commit'])[:10]}, {env['date']}")
    png_msg = report.write_png(args.png, doc["summary"], titles, baselines, subtitle)
    reasons = report.render_reasons(rows)
    print(f"\nresults written to {args.json}; {png_msg}")
    if reasons:
        print("N/A and FAIL reasons:\n" + reasons)
    print("\n" + report.render_table(rows, doc["summary"]))


def main(argv: list[str] | None = None) -> int:
    """Run the comparison (or merge earlier runs); print the table last; write JSON and PNG."""
    args = build_parser().parse_args(argv)
    if args.merge:
        try:
            docs = [json.loads(Path(p).read_text()) for p in args.merge]
            doc = report.merge_documents(docs, [str(p) for p in args.merge])
        except (OSError, ValueError, KeyError) as exc:
            print(f"compare.py --merge: {exc}", file=sys.stderr)
            return 2
        finish(doc, args)
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        print("compare.py: CUDA is not available (use --device cpu to test without a GPU)", file=sys.stderr)
        return 2
    finish(run_all(Session(args)), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
