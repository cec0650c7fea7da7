#!/usr/bin/python3
"""The KernelBench suite: kbc side by side with PyTorch eager and torch.compile, problem by problem.

    python3 bench/suite.py                                   # every problem, KernelBench shapes, on the GPU
    python3 bench/suite.py --problems 'L1/1*,conv' --quick   # a subset (keys, spec stems, categories; globs)
    /usr/bin/python3 bench/suite.py --device cpu             # CI: small bindings, kbc's CPU interpreter vs torch
    python3 bench/suite.py --emit-check build/release/kbc    # no GPU needed: every spec compiles to CUDA for sm_90
    python3 bench/suite.py --merge a.json b.json --json all.json   # join split runs
    python3 bench/suite.py --warm-compile 16                 # torch.compile every problem ahead, 16 at a time

The problems (specs and PyTorch references) are in bench/suite/problems.py.
On the GPU, for each problem at KernelBench's shapes: the inputs are drawn
once (and cloned into rotated sets when small, as bench/compare.py does), the
reference is computed in float64, and kbc (fp32, through python/kbc.py),
PyTorch eager (the reference function on the float32 inputs) and
torch.compile of that function are checked (relative L2 error <= 1e-5, kbc
also into NaN-poisoned outputs) and timed with CUDA events (warm-up, median
of many calls: bench/timing.py).  It reports fast_1 (the share of problems
kbc gets right and runs faster than eager), the share faster than
torch.compile, the geometric-mean speedups, a markdown table and a JSON file.
On the CPU (--device cpu) only correctness is checked, at the small bindings.
Docs: docs/BENCHMARKS.md, "The KernelBench suite".
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "suite"))

import torch  # noqa: E402

import problems as pb  # noqa: E402
from accuracy import accuracy  # noqa: E402
from switches import environment as kbc_switches  # noqa: E402
from roofline import has_attr  # noqa: E402
from timing import DeadlineExceeded, TimingConfig, deadline, measure, synchronize  # noqa: E402

REPO = HERE.parent
SCHEMA = "kbc-suite/1"
THRESHOLDS = {"fp32": 1e-5, "tf32": 2e-3}
L2_DEFAULT = 60 << 20
SEED = 20261
Tensors = dict[str, torch.Tensor]
Row = dict[str, object]


# ------------------------------------------------------------------ verdicts (accuracy: bench/accuracy.py)

def verdict(errors: dict[str, dict[str, object]], threshold: float) -> tuple[str, str | None, float | None]:
    """(status, reason, worst relative error) of one implementation's outputs."""
    hard = next((f"{n}: {e['error']}" for n, e in errors.items() if e["error"]), None)
    if hard:
        return "FAIL", hard, None
    name, rel = max(((n, e["rel_l2"]) for n, e in errors.items()), key=lambda kv: kv[1])
    if rel <= threshold:
        return "ok", None, rel
    return "FAIL", f"rel err {rel:.2e} on {name} > {threshold:g}", rel


def worse(a: dict, b: dict) -> dict:
    """Per output, the worse of two accuracy results."""
    merged = {}
    for name, ea in a.items():
        eb = b.get(name, ea)
        if ea["error"] or eb["error"]:
            merged[name] = ea if ea["error"] else eb
        else:
            merged[name] = ea if ea["rel_l2"] >= eb["rel_l2"] else eb
    return merged


# ------------------------------------------------------------------ kbc

class Kbc:
    """python/kbc.py, imported once; the reason when it cannot be."""

    def __init__(self):
        self.module, self.error = None, None
        sys.path.insert(0, str(REPO / "python"))
        try:
            import kbc  # noqa: PLC0415
            self.module = kbc
        except Exception as exc:  # noqa: BLE001
            self.error = f"import kbc failed: {type(exc).__name__}: {exc}"

    def program(self, spec: Path, precision: str):
        if self.module is None:
            raise RuntimeError(self.error)
        return self.module.Program(str(spec), precision=precision, target="auto")


class KbcRunner:
    """kbc on set i; outputs allocated on the first call of a set and reused after."""

    def __init__(self, program, sets: list[Tensors]):
        self.program, self.sets = program, sets
        self.outs: list[Tensors | None] = [None] * len(sets)

    def __call__(self, i: int) -> Tensors:
        if self.outs[i] is None:
            self.outs[i] = dict(self.program.run(self.sets[i]))
            return self.outs[i]
        self.program.run(self.sets[i], outputs=self.outs[i])
        return self.outs[i]

    def poisoned(self, i: int) -> Tensors:
        """Run into outputs filled with NaN: an element kbc never writes shows up."""
        if self.outs[i] is None:
            self(i)
        for t in self.outs[i].values():
            t.fill_(float("nan"))
        self.program.run(self.sets[i], outputs=self.outs[i])
        return self.outs[i]


# ------------------------------------------------------------------ one problem

def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """--kbc-env VAR=VALUE[,VAR=VALUE]: the variant's name (the text) and its environment."""
    env = {}
    for item in text.split(","):
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"KBC_[A-Z0-9_]+", name):
            raise argparse.ArgumentTypeError(f"--kbc-env takes KBC_VAR=VALUE[,KBC_VAR=VALUE], not '{text}'")
        env[name] = value
    return text, env


def draw_inputs(p: pb.Problem, axes: dict, device: torch.device) -> Tensors:
    """Input set 0, drawn from the seed on the device."""
    return p.make_inputs(axes, torch.Generator(device=device).manual_seed(SEED))


def rotated_sets(base: Tensors, device: torch.device, max_sets: int, out_bytes: int) -> list[Tensors]:
    """base plus clones until the sets exceed twice the L2.

    A set's size counts its outputs too (out_bytes: each implementation
    holds a set's outputs), and the sets take at most a fifth of the free
    memory: L1/9's 32768 x 32768 output in 13 sets ran an H100 out of
    memory."""
    if device.type != "cuda":
        return [base]
    size = sum(t.numel() * t.element_size() for t in base.values()) + out_bytes
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or L2_DEFAULT)
    n = 1 if size >= 2 * l2 else math.ceil(2 * l2 / max(size, 1))
    free, _ = torch.cuda.mem_get_info(device)
    n = max(1, min(n, max_sets, int(free * 0.2 // max(size, 1))))
    return [base] + [{k: v.clone() for k, v in base.items()} for _ in range(n - 1)]


def new_row(p: pb.Problem, impl: str, threshold: float) -> Row:
    return {"key": p.key, "level": p.level, "number": p.number, "name": p.name, "spec": p.spec,
            "category": p.category, "impl": impl, "status": "N/A", "reason": None, "rel_err": None,
            "max_abs_err": None, "errors": None, "threshold": threshold, "median_us": None, "timing": None,
            "setup_s": None, "wall_s": None, "compiled_graphs": None}


def run_impl(args, device: torch.device, row: Row, build, sets: list[Tensors], reference: Tensors) -> None:
    """Build (compiles happen in the first calls), check, time; failures become FAIL or N/A with the reason."""
    timed = (device.type == "cuda" or args.cpu_timing) and not args.check_only
    cfg = TimingConfig.make(args.quick, args.max_seconds)
    runner = None
    built = False
    start = time.perf_counter()
    try:
        with deadline(args.compile_timeout, f"{row['impl']} set-up"):
            runner = build()
            built = True
            first = runner(0)
            first = {k: v.detach().clone() for k, v in first.items()}
            synchronize(device)
        row["setup_s"] = time.perf_counter() - start
        errors = accuracy(first, reference)
        del first
        if isinstance(runner, KbcRunner):
            errors = worse(errors, accuracy(runner.poisoned(0), reference))
        row["errors"] = errors
        status, reason, rel = verdict(errors, row["threshold"])
        row.update(status=status, reason=reason, rel_err=rel,
                   max_abs_err=max((e["max_abs"] or 0.0) for e in errors.values()) if not reason or rel else None)
        if timed:
            # the rest of --row-timeout: a row far slower than its peers is
            # reported untimed, not allowed to eat a device call
            left = max(args.row_timeout - (time.perf_counter() - start), 1.0) if args.row_timeout else None
            try:
                with deadline(left, f"{row['impl']} timing"):
                    for i in range(1, len(sets)):
                        runner(i)
                    t = measure(runner, len(sets), cfg, device)
            except DeadlineExceeded as exc:
                row.update(reason=f"untimed: {exc} (--row-timeout)")
            else:
                row.update(median_us=t.median_us, timing=t.as_dict())
                if isinstance(runner, KbcRunner) and row["status"] == "ok":   # still right after the timed loop
                    again = verdict(accuracy(runner(0), reference), row["threshold"])
                    if again[0] != "ok":
                        row.update(status="FAIL", reason=f"after timing: {again[1]}")
    except DeadlineExceeded as exc:
        row.update(status="N/A", reason=f"{exc} (--compile-timeout)")
    except Exception as exc:  # noqa: BLE001 — report, never stop the run
        line = (str(exc).strip().splitlines() or [""])[0][:300]
        kbc_failed = row["impl"].startswith("kbc")
        row.update(status="FAIL" if kbc_failed else "N/A", reason=f"{type(exc).__name__}: {line}",
                   median_us=None)
        if not built and kbc_failed:
            row["reason"] = f"did not compile: {row['reason']}"
        if args.verbose:
            traceback.print_exc()
    finally:
        row["wall_s"] = time.perf_counter() - start
        del runner
        gc.collect()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.empty_cache()


def run_problem(args, device: torch.device, kbc: Kbc, p: pb.Problem) -> list[Row]:
    """kbc, eager and torch.compile on one problem, against one float64 reference."""
    axes = p.small if args.scale == "small" else p.axes
    start = time.perf_counter()
    base = draw_inputs(p, axes, device)
    with torch.no_grad():
        reference = {k: v.to(torch.float64) for k, v in
                     p.reference({k: v.to(torch.float64) for k, v in base.items()}).items()}
    sets = rotated_sets(base, device, args.max_sets, sum(v.numel() * 4 for v in reference.values()))
    synchronize(device)
    shapes = ", ".join(f"{k}{list(v.shape)}" for k, v in sets[0].items())
    print(f"\n== {p.key} {p.name} ({p.spec}): {shapes}; {len(sets)} set(s), "
          f"reference {time.perf_counter() - start:.2f} s", flush=True)
    rows = []
    precision = args.kbc_precision
    # kbc as it is, then the same spec under each --kbc-env's switches, side by side
    for name, env in [("", {})] + (args.kbc_env or []):
        row = new_row(p, f"kbc{f'[{name}]' if name else ''} {precision}", THRESHOLDS[precision])
        if kbc.error:
            row["reason"] = kbc.error
        else:
            with kbc_switches(env):
                run_impl(args, device, row, lambda: KbcRunner(kbc.program(p.path, precision), sets), sets,
                         reference)
        rows.append(row)
    if not args.kbc_only:
        def eager():
            def run(i: int) -> Tensors:
                with torch.no_grad():
                    return p.reference(sets[i])
            return run
        row = new_row(p, "eager", THRESHOLDS["fp32"])
        run_impl(args, device, row, eager, sets, reference)
        rows.append(row)
        row = new_row(p, "compile", THRESHOLDS["fp32"])
        if args.no_compile or device.type != "cuda":
            row["reason"] = "skipped (--no-compile or not on the GPU)"
        elif not hasattr(torch, "compile"):
            row["reason"] = f"torch {torch.__version__} has no torch.compile"
        else:
            def compiled():
                torch._dynamo.reset()
                fn = torch.compile(p.reference, mode=args.compile_mode, dynamic=False)

                def run(i: int) -> Tensors:
                    with torch.no_grad():
                        return fn(sets[i])
                return run
            run_impl(args, device, row, compiled, sets, reference)
            with contextlib.suppress(Exception):
                torch._dynamo.reset()
        rows.append(row)
    for r in rows:
        t = f"{r['median_us']:,.1f} us" if r["median_us"] is not None else "-"
        err = f"{r['rel_err']:.1e}" if r["rel_err"] is not None else "-"
        took = (f"  [set-up {r['setup_s']:.1f} s" if r["setup_s"] is not None else "  [") + \
            (f", {r['wall_s']:.1f} s in all]" if r.get("wall_s") is not None else "]")
        print(f"   {r['impl']:<10} {t:>14}  err {err:>8}  {r['status']}{'  ' + r['reason'] if r['reason'] else ''}"
              f"{took if took != '  []' else ''}", flush=True)
    sets.clear()
    reference.clear()
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return rows


# ------------------------------------------------------------------ summary, table, JSON

def per_problem(rows: list[Row]) -> list[dict[str, object]]:
    """One line per problem: kbc's status, the three times, the two speedups."""
    lines = []
    for key in dict.fromkeys(r["key"] for r in rows):
        by = {r["impl"].split()[0]: r for r in rows if r["key"] == key}
        k, e, c = by.get("kbc"), by.get("eager"), by.get("compile")
        kt = k["median_us"] if k and k["status"] == "ok" else None
        et = e["median_us"] if e else None
        ct = c["median_us"] if c else None
        lines.append({"key": key, "name": k["name"] if k else None, "spec": k["spec"] if k else None,
                      "category": k["category"] if k else None, "kbc_status": k["status"] if k else "N/A",
                      "kbc_reason": k["reason"] if k else None, "kbc_rel_err": k["rel_err"] if k else None,
                      "kbc_us": k["median_us"] if k else None, "eager_us": et, "compile_us": ct,
                      "eager_status": e["status"] if e else None, "compile_status": c["status"] if c else None,
                      "speedup_vs_eager": et / kt if kt and et else None,
                      "speedup_vs_compile": ct / kt if kt and ct else None,
                      "variants": {r["impl"].split()[0][4:-1]: r["median_us"] if r["status"] == "ok" else None
                                   for r in rows if r["key"] == key and r["impl"].startswith("kbc[")}})
    return lines


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarize(lines: list[dict[str, object]]) -> dict[str, object]:
    """fast_1 and friends over every problem run (a problem kbc fails counts as not faster)."""
    n = len(lines)
    correct = [ln for ln in lines if ln["kbc_status"] == "ok"]
    vs_e = [ln["speedup_vs_eager"] for ln in lines if ln["speedup_vs_eager"]]
    vs_c = [ln["speedup_vs_compile"] for ln in lines if ln["speedup_vs_compile"]]
    return {"problems": n, "kbc_correct": len(correct),
            "correct_share": len(correct) / n if n else None,
            "fast_1": sum(1 for v in vs_e if v > 1.0) / n if n else None,
            "faster_than_compile_share": sum(1 for v in vs_c if v > 1.0) / n if n else None,
            "geomean_speedup_vs_eager": geomean(vs_e), "geomean_speedup_vs_compile": geomean(vs_c),
            "speedups_over": {"eager": len(vs_e), "compile": len(vs_c)}}


def fmt(v, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def markdown(lines: list[dict[str, object]], summary: dict[str, object], env: dict[str, object]) -> str:
    """The per-problem table and the summary, as markdown."""
    s = summary
    pct = (lambda v: "-" if v is None else f"{100 * v:.1f}%")
    out = [f"# kbc KernelBench suite ({env.get('device')}, torch {env.get('torch')}, kbc {env.get('kbc_commit')})", "",
           f"- problems: {s['problems']}, kbc correct: {s['kbc_correct']} ({pct(s['correct_share'])})",
           f"- PyTorch's float32 matmuls and convolutions: {env.get('torch_precision', 'default')} "
           f"(`--torch-precision`)"]
    if not any(ln["kbc_us"] or ln["eager_us"] for ln in lines):
        out += ["- not timed (correctness only)", ""]
    else:
        out += [
           f"- fast_1 (correct and faster than eager): {pct(s['fast_1'])}",
           f"- correct and faster than torch.compile: {pct(s['faster_than_compile_share'])}",
           f"- geomean speedup vs eager: {fmt(s['geomean_speedup_vs_eager'], '.3f')} "
           f"(over {s['speedups_over']['eager']}), vs torch.compile: {fmt(s['geomean_speedup_vs_compile'], '.3f')} "
           f"(over {s['speedups_over']['compile']})", ""]
    variants = list(dict.fromkeys(v for ln in lines for v in ln.get("variants", {})))
    out += ["| problem | name | category | kbc | rel err | kbc µs | eager µs | compile µs | vs eager | vs compile |"
            + "".join(f" kbc[{v}] µs | kbc / kbc[{v}] |" for v in variants),
            "|---|---|---|---|---|---|---|---|---|---|" + "---|---|" * len(variants)]
    for ln in lines:
        status = ln["kbc_status"] + (f" ({ln['kbc_reason']})" if ln["kbc_reason"] else "")
        vt = ln.get("variants", {})
        out.append(f"| {ln['key']} | {ln['name']} | {ln['category']} | {status.replace('|', '/')} | "
                   f"{fmt(ln['kbc_rel_err'], '.1e')} | {fmt(ln['kbc_us'], ',.1f')} | {fmt(ln['eager_us'], ',.1f')} | "
                   f"{fmt(ln['compile_us'], ',.1f')} | {fmt(ln['speedup_vs_eager'], '.2f')} | "
                   f"{fmt(ln['speedup_vs_compile'], '.2f')} |"
                   + "".join(f" {fmt(vt.get(v), ',.1f')} | "
                             f"{fmt(ln['kbc_us'] / vt[v] if vt.get(v) and ln['kbc_us'] else None, '.2f')} |"
                             for v in variants))
    return "\n".join(out) + "\n"


def environment(device: torch.device) -> dict[str, object]:
    env: dict[str, object] = {"device": str(device), "torch": torch.__version__}
    with contextlib.suppress(Exception):
        import report  # noqa: PLC0415  (bench/report.py: GPU, driver, flags, commit)
        env.update(report.environment(device))
    commit = env.get("kbc", {}).get("commit") if isinstance(env.get("kbc"), dict) else None
    env["kbc_commit"] = (commit or "?")[:10]
    if device.type == "cuda":
        env["device"] = torch.cuda.get_device_name(device)
    return env


def write_outputs(args, rows: list[Row], env: dict[str, object], complete: bool) -> dict[str, object]:
    lines = per_problem(rows)
    summary = summarize(lines)
    doc = {"schema": SCHEMA, "complete": complete, "environment": env,
           "arguments": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
           "thresholds": THRESHOLDS, "summary": summary, "problems": lines, "results": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=1, default=str))
    args.markdown.parent.mkdir(parents=True, exist_ok=True)
    args.markdown.write_text(markdown(lines, summary, env))
    return doc


# ------------------------------------------------------------------ kbc compile checks (no GPU needed)

def var_axes(spec: Path) -> list[str]:
    """The spec's `axis NAME var` names."""
    return re.findall(r"^\s*axis\s+(\w+)\s+var\b", spec.read_text(), flags=re.M)


def emit_check(kbc_bin: str, chosen: list[pb.Problem], target: str) -> int:
    """`kbc compile --emit cuda --target T` for every spec, and `--emit plan` at KernelBench's axes."""
    failed = 0
    for p in chosen:
        cmds = [[kbc_bin, "compile", str(p.path), "--emit", "cuda", "--target", target]]
        names = var_axes(p.path)
        missing = [a for a in names if a not in p.axes]
        if not missing:
            plan = [kbc_bin, "compile", str(p.path), "--emit", "plan", "--target", target]
            for a in names:
                plan += ["--set", f"{a}={p.axes[a]}"]
            cmds.append(plan)
        problems = [] if not missing else [f"axes {missing} of the spec are not in the problem's KernelBench axes"]
        for cmd in cmds:
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                problems.append(f"{' '.join(cmd[1:4] + cmd[4:6])}: exit {done.returncode}: "
                                + (done.stderr.strip().splitlines() or [""])[0])
        status = "ok" if not problems else "FAIL"
        failed += bool(problems)
        print(f"{p.key:<8} {p.spec:<44} {status}{'  ' + '; '.join(problems) if problems else ''}", flush=True)
    print(f"emit-check: {len(chosen) - failed} of {len(chosen)} specs compile for {target} (CUDA C and launch plan)")
    return 1 if failed else 0


def prewarm(kbc_bin: str, chosen: list[pb.Problem], target: str, precision: str) -> int:
    """`kbc compile --emit cubin --specialize` at KernelBench's axes for every spec, in parallel: NVRTC's
    work done ahead, into the kernel cache ($KBC_CACHE_DIR), where the runtime finds it on a GPU of the
    target (the generated text and so the cache key are those of an H200-like device: 132 SMs, 227 KiB of
    shared memory per block).  Lets a machine without a GPU compile what a device call would."""
    import concurrent.futures as cf
    if not os.environ.get("KBC_CACHE_DIR"):
        print("suite.py: --prewarm needs KBC_CACHE_DIR (the cache to fill)", file=sys.stderr)
        return 2

    def one(p: pb.Problem):
        cmd = [kbc_bin, "compile", str(p.path), "--emit", "cubin", "--target", target, "--precision", precision,
               "--specialize", "-o", os.devnull]
        for a in var_axes(p.path):
            if a not in p.axes:
                return p, f"axis {a} of the spec is not in the problem's KernelBench axes"
            cmd += ["--set", f"{a}={p.axes[a]}"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        return p, "" if done.returncode == 0 else (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]

    failed = 0
    with cf.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for p, why in pool.map(one, chosen):
            failed += bool(why)
            print(f"{p.key:<8} {p.spec:<44} {'ok' if not why else 'FAIL  ' + why}", flush=True)
    print(f"prewarm: {len(chosen) - failed} of {len(chosen)} specs compiled for {target} ({precision}) into "
          f"{os.environ['KBC_CACHE_DIR']}")
    return 1 if failed else 0


def warm_one(key: str, mode: str, precision: str) -> tuple[str, str]:
    """torch.compile problem `key`'s reference at KernelBench's axes and call it once (a worker process)."""
    try:
        if precision == "ieee":
            strict_fp32()
        p = next(q for q in pb.PROBLEMS if q.key == key)
        device = torch.device("cuda")
        inputs = draw_inputs(p, p.axes, device)
        fn = torch.compile(p.reference, mode=mode, dynamic=False)
        with torch.no_grad():
            fn(inputs)
        torch.cuda.synchronize()
        return key, ""
    except Exception as exc:  # noqa: BLE001 — reported; the timed run meets it again
        return key, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"


def warm_compile(chosen: list[pb.Problem], args, jobs: int) -> int:
    """Fills torch.compile's on-disk caches (Inductor's FX graph and Triton kernel caches, under
    $TORCHINDUCTOR_CACHE_DIR or /tmp/torchinductor_$USER) for every chosen problem, `jobs` worker
    processes at a time, so that the timed run's compile set-ups are cache hits: the compile column
    of the whole suite then fits a device call.  The timed run still traces and compiles each
    problem itself (torch._dynamo.reset() first); only the work behind it is cached."""
    import concurrent.futures as cf
    import multiprocessing as mp
    start, failed = time.perf_counter(), 0
    # the whole warm-up's budget: --compile-timeout per problem, jobs at a time
    budget = args.compile_timeout * math.ceil(len(chosen) / jobs) + 60
    pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"))
    futures = {pool.submit(warm_one, p.key, args.compile_mode, args.torch_precision): p.key for p in chosen}
    try:
        for f in cf.as_completed(futures, timeout=budget):
            key, why = f.result()
            failed += bool(why)
            print(f"warm {key:<8} {'ok' if not why else 'FAIL  ' + why}", flush=True)
    except cf.TimeoutError:
        late = [key for f, key in futures.items() if not f.done()]
        failed += len(late)
        print(f"warm-compile: {len(late)} problems not compiled within {budget:.0f} s: {', '.join(late)}", flush=True)
        for proc in list(getattr(pool, "_processes", {}).values()):  # workers stuck in a compile
            proc.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    print(f"warm-compile: {len(chosen) - failed} of {len(chosen)} problems compiled in "
          f"{time.perf_counter() - start:.0f} s ({jobs} at a time, mode {args.compile_mode})")
    return 1 if failed else 0


# ------------------------------------------------------------------ CLI

def strict_fp32() -> None:
    """TF32 off in PyTorch's float32 matmuls and convolutions (the API of its version)."""
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    if has_attr(matmul, "fp32_precision"):  # torch >= 2.9
        matmul.fp32_precision = "ieee"
        cudnn.conv.fp32_precision = "ieee"
    else:
        matmul.allow_tf32 = False
        cudnn.allow_tf32 = False


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="suite.py", description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=lambda s: [x.strip() for x in s.split(",") if x.strip()], default=None,
                    help="comma-separated keys (L1/19), spec stems (1_19_relu) or categories (conv), globs allowed")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                    help="cpu: correctness only, kbc's CPU interpreter at the small bindings")
    ap.add_argument("--scale", choices=["kernelbench", "small"], default=None,
                    help="the bindings (default: kernelbench on cuda, small on cpu)")
    ap.add_argument("--kbc-precision", choices=["fp32", "tf32"], default="fp32")
    ap.add_argument("--kbc-only", action="store_true", help="no eager or torch.compile rows")
    ap.add_argument("--kbc-env", type=parse_variant, action="append", metavar="VAR=VALUE[,VAR=VALUE]",
                    help="also run kbc with these switches set (a row kbc[VAR=VALUE] per option given, checked and "
                         "timed like kbc's own, e.g. KBC_NO_FUSE=1 for the plain plan, KBC_IDX32=1)")
    ap.add_argument("--torch-precision", choices=["ieee", "default"], default="ieee",
                    help="PyTorch's float32 matmuls and convolutions for eager and torch.compile: ieee (the default: "
                         "TF32 off in cuBLAS and cuDNN, the fp32 contract kbc's rows are held to) or default "
                         "(PyTorch's own flags, as KernelBench runs: cuDNN convolutions on TF32)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--compile-mode", default="default", help="torch.compile mode (default: default)")
    ap.add_argument("--check-only", action="store_true", help="correctness only, no timing")
    ap.add_argument("--quick", action="store_true", help="fewer timed repetitions")
    ap.add_argument("--cpu-timing", action="store_true",
                    help="with --device cpu: time too (host timers; a smoke test of the timing path, not a benchmark)")
    ap.add_argument("--max-seconds", type=float, default=10.0, help="time cap per implementation and problem")
    ap.add_argument("--max-sets", type=int, default=32, help="most input sets to rotate over")
    ap.add_argument("--compile-timeout", type=float, default=300.0, help="budget for one set-up (compiles, first call)")
    ap.add_argument("--row-timeout", type=float, default=120.0,
                    help="budget for one row in all (set-up, checks, timing; 0: none): past it the row is reported "
                         "untimed, so that one very slow implementation cannot eat a device call's time")
    ap.add_argument("--json", type=Path, default=HERE / "suite" / "results" / "suite.json")
    ap.add_argument("--markdown", type=Path, default=HERE / "suite" / "results" / "suite.md")
    ap.add_argument("--list", action="store_true", help="list the problems and exit")
    ap.add_argument("--emit-check", metavar="KBC", help="run no problem: check that every spec compiles "
                    "(kbc compile --emit cuda / --emit plan at KernelBench's axes) with this kbc binary")
    ap.add_argument("--prewarm", metavar="KBC", help="run no problem: compile every spec's kernels at KernelBench's "
                    "axes (specialized, --kbc-precision) into $KBC_CACHE_DIR with this kbc binary, for a GPU of "
                    "--target, so that a later run on that GPU finds them compiled")
    ap.add_argument("--target", default="sm_90", help="the target of --emit-check and --prewarm (default sm_90)")
    ap.add_argument("--warm-compile", type=int, metavar="JOBS", help="run no problem: torch.compile every chosen "
                    "problem once, JOBS processes at a time, into the on-disk caches the timed run then hits")
    ap.add_argument("--merge", nargs="+", type=Path, metavar="JSON", help="run nothing: merge suite JSON files")
    ap.add_argument("--verbose", action="store_true")
    return ap


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.row_timeout < 0:
        parser.error(f"--row-timeout: {args.row_timeout:g} is negative (seconds, or 0 for none)")
    chosen = pb.select(args.problems)
    if args.list:
        for p in chosen:
            print(f"{p.key:<8} {p.category:<15} {p.spec:<44} {p.name}")
        print(f"{len(chosen)} problems")
        return 0
    if args.emit_check:
        return emit_check(args.emit_check, chosen, args.target)
    if args.prewarm:
        return prewarm(args.prewarm, chosen, args.target, args.kbc_precision)
    if args.warm_compile is not None:
        if args.warm_compile < 1:
            parser.error(f"--warm-compile: {args.warm_compile} is not a positive job count")
        if not torch.cuda.is_available():
            print("suite.py: --warm-compile needs CUDA", file=sys.stderr)
            return 2
        return warm_compile(chosen, args, args.warm_compile)
    if args.merge:
        docs = [json.loads(p.read_text()) for p in args.merge]
        rows: dict[tuple[str, str], Row] = {}
        for d in docs:
            for r in d["results"]:
                rows[(r["key"], r["impl"])] = r
        write_outputs(args, list(rows.values()), docs[-1]["environment"], all(d["complete"] for d in docs))
        print(args.markdown.read_text())
        return 0
    if not chosen:
        print(f"suite.py: no problem matches {args.problems}", file=sys.stderr)
        return 2
    if args.device == "cuda" and not torch.cuda.is_available():
        print("suite.py: CUDA is not available (use --device cpu to check correctness without a GPU)", file=sys.stderr)
        return 2
    args.scale = args.scale or ("kernelbench" if args.device == "cuda" else "small")
    device = torch.device(args.device)
    if args.torch_precision == "ieee":
        # float32 on float32 units: the same accuracy contract as kbc fp32 (cuDNN's
        # default TF32 convolutions miss 1e-5 by 30x: 2.9e-4 at KernelBench's shapes)
        strict_fp32()
    env = environment(device)
    env["torch_precision"] = args.torch_precision
    kbc = Kbc()
    rows: list[Row] = []
    start = time.perf_counter()
    for p in chosen:
        try:
            rows.extend(run_problem(args, device, kbc, p))
        except Exception as exc:  # noqa: BLE001 — inputs or reference failed: the problem is N/A
            print(f"   {p.key}: N/A: {type(exc).__name__}: {exc}", flush=True)
            row = new_row(p, f"kbc {args.kbc_precision}", THRESHOLDS[args.kbc_precision])
            row["reason"] = f"inputs/reference failed: {type(exc).__name__}: {str(exc)[:200]}"
            rows.append(row)
            gc.collect()
            if device.type == "cuda":
                torch.cuda.empty_cache()
        write_outputs(args, rows, env, complete=False)
    doc = write_outputs(args, rows, env, complete=True)
    print(f"\n{len(chosen)} problems in {time.perf_counter() - start:.1f} s; results in {args.json} and {args.markdown}\n")
    print(args.markdown.read_text())
    s = doc["summary"]
    if args.device == "cpu":
        bad = [ln for ln in doc["problems"] if ln["kbc_status"] != "ok"]
        for ln in bad:
            print(f"FAIL {ln['key']} {ln['spec']}: {ln['kbc_reason']}")
        print(f"cpu check: {s['kbc_correct']} of {s['problems']} specs match PyTorch (rel L2 <= {THRESHOLDS['fp32']:g})")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
