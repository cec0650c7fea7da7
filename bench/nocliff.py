#!/usr/bin/python3
"""The no-cliff check: every plan kbc chooses against its plain plan, timed side by side on the GPU.

    python3 bench/nocliff.py --kbc build/gpu/kbc --suite                 # every suite problem, KernelBench's axes
    python3 bench/nocliff.py --kbc build/gpu/kbc --fuzz 1:1001           # 1,000 of the differential fuzzer's specs
    python3 bench/nocliff.py --kbc build/release/kbc --suite 'L1/2*' --fuzz 1:4 --dry-run   # no GPU: cases, compiles
    python3 bench/nocliff.py --kbc build/gpu/kbc --fuzz 1:1500 --chosen-env KBC_ATTN_ALWAYS=1 --plain-env KBC_NO_ATTN=1
                                                        # any two switch sets: the attention family against none

The plain plan is one kernel per statement through the generic families
(`KBC_NO_FUSE=1`: no rows group joins a second statement, no fused
attention; contractions stay GEMMs).  The chosen plan is what kbc does by
default.  A case is a spec and a binding: a problem of bench/suite at
KernelBench's axes (or its small binding, --scale small), or a random spec of
tests/fuzz/specgen.py at the GPU fuzzer's sizes.

How: every case's kernels are first compiled for both plans in parallel
(`kbc compile --emit cubin --specialize`, into the kernel cache), then two
`kbc bench --batch` processes (one GPU context each: one default, one with
KBC_NO_FUSE=1) time the cases one at a time, the chosen plan then the plain
one (medians of --iters CUDA-event timings after warm-up; random inputs in
[-1, 1); a case whose --iters launches take under 5 ms is timed again back
to back: 25 samples of as many launches as fill 200 us, `kbc bench
--repeat`, so that the host's launch work, which a single launch of a
program of a few microseconds times too, overlaps the GPU's).  A case whose two plans are the same kernel text is
not timed.  A case where the chosen plan is more than --threshold (1.25) times
slower is timed again in the other order and counts as a cliff only if it
stays so (the better of the two medians on each side); a difference under
--min-us (1 microsecond) is noise, not a cliff.  Correctness is not checked here:
tests/fuzz/difftest.py gpu and bench/suite.py do that.

Output: a line per case, the cliffs with both plans' kernel counts, a
summary (cases timed, cliffs, the geometric mean of chosen / plain), and with
--json a file of every case's numbers.  Exit status: 0 no cliff, 1 a cliff or
a case that did not run, 2 a usage error.  Docs: docs/BENCHMARKS.md, "The
no-cliff check".
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PLAIN_ENV = {"KBC_NO_FUSE": "1"}
# A case whose --iters launches take less than this (microseconds) is timed again back to back:
# SHORT_SAMPLES samples of launches filling SHORT_US / SHORT_SAMPLES each.  Single launches of a
# program of a few microseconds time the host's launch work as much as the GPU: the same kernel
# text timed 0.69-1.36x apart in the two processes, 1-kernel plans 1.3-1.6x "slower" than 2-kernel
# ones (2026-12-03).
SHORT_US = 5000.0
SHORT_SAMPLES = 25


def env_arg(text: str) -> dict[str, str]:
    """'A=1,B=2' -> {"A": "1", "B": "2"} (argparse type)."""
    env = {}
    for part in filter(None, text.split(",")):
        name, eq, value = part.partition("=")
        if not eq or not re.fullmatch(r"KBC_\w+", name):
            raise argparse.ArgumentTypeError(f"not VAR=VALUE with VAR a KBC_ switch: {part!r}")
        env[name] = value
    return env


def var_axes(text: str) -> list[str]:
    """A spec's `axis NAME var` names."""
    return re.findall(r"^\s*axis\s+(\w+)\s+var\b", text, flags=re.M)


def suite_cases(patterns: list[str] | None, scale: str) -> list[dict]:
    sys.path.insert(0, str(HERE / "suite"))
    import problems as pb  # torch: bench/suite/problems.py draws the suite's inputs with it
    cases = []
    for p in pb.select(patterns):
        axes = p.axes if scale == "kernelbench" else p.small
        names = var_axes(p.path.read_text())
        missing = [a for a in names if a not in axes]
        if missing:
            raise SystemExit(f"nocliff.py: {p.key}: var axes {missing} are not in the problem's axes")
        cases.append({"key": p.key, "spec": str(p.path), "axes": {a: axes[a] for a in names}})
    return cases


def fuzz_cases(seeds: range, workdir: Path) -> list[dict]:
    sys.path.insert(0, str(REPO / "tests" / "fuzz"))
    import specgen
    cases = []
    for seed in seeds:
        text, binding = specgen.generate(seed, "gpu", ())
        path = workdir / f"fuzz_{seed}.kb"
        path.write_text(text)
        cases.append({"key": f"fuzz/{seed}", "spec": str(path), "axes": {a: binding[a] for a in var_axes(text)}})
    return cases


def parse_seeds(text: str) -> list[int]:
    """'1:1001' -> seeds 1..1000; '3,36,200:210' -> 3, 36 and 200..209 (in that order, each once)."""
    seeds: list[int] = []  # in order, repeats dropped at the end
    for part in text.split(","):
        a, colon, b = part.strip().partition(":")
        got = range(int(a), int(b)) if colon else [int(a)]
        if colon and int(b) <= int(a):
            raise ValueError(part)
        seeds += got
    return list(dict.fromkeys(seeds))


def sets(case: dict) -> list[str]:
    return [w for a, n in case["axes"].items() for w in ("--set", f"{a}={n}")]


def prewarm(kbc: str, cases: list[dict], precision: str, target: str, jobs: int,
            envs: tuple[dict, dict] = ({}, PLAIN_ENV)) -> dict[str, str]:
    """Both plans of every case compiled into the kernel cache, in parallel: {key: why} for those that
    failed; case["same"]: whether the two plans are the same kernel text."""
    def one(job):
        case, env = job
        cmd = [kbc, "compile", case["spec"], "--emit", "cubin", "--specialize", "--target", target,
               "--precision", precision, "-o", os.devnull] + sets(case)
        done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
        lines = done.stderr.strip().splitlines()
        return case["key"], "" if done.returncode == 0 else (lines[-1] if lines else f"exit {done.returncode}")

    def text(job):
        case, env = job
        cmd = [kbc, "compile", case["spec"], "--emit", "cuda", "--specialize", "--target", target,
               "--precision", precision] + sets(case)
        return subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env}).stdout

    failed = {}
    jobs_list = [(c, env) for c in cases for env in envs]
    with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
        for key, why in pool.map(one, jobs_list):
            if why and key not in failed:
                failed[key] = why
        # a case whose two plans are one and the same kernel text has nothing to compare: timing it
        # would only measure the noise between the two processes (seen at 1.3x on 10 us kernels)
        texts = list(pool.map(text, jobs_list))
    for i, case in enumerate(cases):
        case["same"] = bool(texts[2 * i]) and texts[2 * i] == texts[2 * i + 1]
    return failed


class Bench:
    """A `kbc bench --batch` process under an environment: time(args) -> its JSON object for one line."""

    def __init__(self, kbc: str, env: dict[str, str], name: str):
        self.name, self.err = name, tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen([kbc, "bench", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, text=True, env={**os.environ, **env})

    def time(self, args: list[str]) -> dict:
        try:
            self.p.stdin.write(" ".join(args) + "\n")
            self.p.stdin.flush()
            line = self.p.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            self.err.seek(0)
            why = self.err.read().strip().splitlines()
            raise SystemExit(f"nocliff.py: kbc bench --batch ({self.name}) ended, exit {self.p.wait()}: "
                             f"{why[-1] if why else 'no message'}")
        return json.loads(line)

    def close(self):
        self.p.stdin.close()
        self.p.wait()
        self.err.close()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="nocliff.py", description=__doc__.splitlines()[0])
    ap.add_argument("--kbc", required=True, help="the kbc binary")
    ap.add_argument("--suite", nargs="?", const="", default=None, metavar="PATTERNS",
                    help="bench/suite problems (comma-separated keys, stems, categories; none: all of levels 1-2)")
    ap.add_argument("--scale", choices=["kernelbench", "small"], default="kernelbench")
    ap.add_argument("--fuzz", metavar="SEEDS", help="the fuzzer's specs of these seeds at its GPU sizes: A:B (A to "
                    "B-1), or a comma-separated list of seeds and ranges (3,36,200:210)")
    ap.add_argument("--precision", choices=["fp32", "tf32"], default="fp32")
    ap.add_argument("--iters", type=int, default=30, help="timed launches per plan (default 30)")
    ap.add_argument("--threshold", type=float, default=1.25, help="chosen / plain above this is a cliff")
    ap.add_argument("--min-us", type=float, default=1.0, help="differences below this are noise")
    ap.add_argument("--target", default="sm_90", help="the target compiled for ahead (default sm_90)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel compiles")
    ap.add_argument("--max-seconds", type=float, default=0, help="stop timing after this long (0: no limit)")
    ap.add_argument("--chosen-env", type=env_arg, default={}, metavar="VAR=V,...",
                    help="switches of the chosen side (default none: kbc's plan)")
    ap.add_argument("--plain-env", type=env_arg, default=PLAIN_ENV, metavar="VAR=V,...",
                    help="switches of the plain side (default KBC_NO_FUSE=1); e.g. --chosen-env "
                    "KBC_ATTN_ALWAYS=1 --plain-env KBC_NO_ATTN=1 times the attention family against none")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: build the cases and compile both plans")
    ap.add_argument("--json", type=Path, help="write every case's numbers here")
    args = ap.parse_args(argv)
    if args.suite is None and not args.fuzz:
        ap.error("give --suite, --fuzz or both")
    if args.iters < 1:
        ap.error("--iters takes a number >= 1")

    work = Path(tempfile.mkdtemp(prefix="kbc_nocliff."))
    cases = []
    if args.suite is not None:
        cases += suite_cases([s for s in args.suite.split(",") if s] or None, args.scale)
    if args.fuzz:
        try:
            seeds = parse_seeds(args.fuzz)
        except ValueError:
            ap.error(f"--fuzz {args.fuzz}: not seeds A:B or a comma-separated list of seeds and ranges")
        cases += fuzz_cases(seeds, work)
    t0 = time.time()
    failed = prewarm(args.kbc, cases, args.precision, args.target, args.jobs, (args.chosen_env, args.plain_env))
    print(f"nocliff: {len(cases)} cases, both plans compiled in {time.time() - t0:.0f} s"
          f"{f'; {len(failed)} did not compile' if failed else ''}", flush=True)
    for key, why in failed.items():
        print(f"  {key}: {why}")
    try:
        if args.dry_run:
            return 1 if failed else 0
        return time_cases(args, cases, failed)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def time_cases(args, cases: list[dict], failed: dict[str, str]) -> int:

    chosen, plain = Bench(args.kbc, args.chosen_env, "chosen"), Bench(args.kbc, args.plain_env, "plain")
    rows, not_run, cliffs = [], [], []
    same = [c["key"] for c in cases if c.get("same") and c["key"] not in failed]
    t0 = time.time()
    for case in cases:
        if case["key"] in same:
            continue
        if args.max_seconds and time.time() - t0 > args.max_seconds:
            print(f"nocliff: --max-seconds reached after {len(rows) + len(not_run)} of {len(cases)} cases")
            break
        line = [case["spec"], "--precision", args.precision, "--iters", str(args.iters)] + sets(case)
        c, p = chosen.time(line), plain.time(line)
        if "median_us" not in c or "median_us" not in p:
            not_run.append(case["key"])
            print(f"{case['key']:<14} did not run (chosen exit {c.get('exit', 0)}, plain exit {p.get('exit', 0)})",
                  flush=True)
            continue
        cu, pu = c["median_us"], p["median_us"]
        if max(cu, pu) * args.iters < SHORT_US:  # short kernels: back to back, SHORT_US of each
            repeat = min(10000, math.ceil(SHORT_US / SHORT_SAMPLES / max(cu, pu, 0.5)))
            line[line.index("--iters") + 1] = str(SHORT_SAMPLES)
            line += ["--repeat", str(repeat)]
            c2, p2 = chosen.time(line), plain.time(line)
            cu, pu = c2.get("median_us", cu), p2.get("median_us", pu)
        if cu > args.threshold * pu and cu - pu > args.min_us:  # again, the other order first
            p2, c2 = plain.time(line), chosen.time(line)
            cu, pu = min(cu, c2.get("median_us", cu)), min(pu, p2.get("median_us", pu))
        row = {"key": case["key"], "spec": case["spec"], "axes": case["axes"], "chosen_us": cu, "plain_us": pu,
               "chosen_kernels": c["kernels"], "plain_kernels": p["kernels"], "ratio": cu / pu}
        row["cliff"] = cu > args.threshold * pu and cu - pu > args.min_us
        rows.append(row)
        cliffs += [row] if row["cliff"] else []
        print(f"{case['key']:<14} chosen {cu:10.1f} us ({c['kernels']:>2} kernels)  plain {pu:10.1f} us "
              f"({p['kernels']:>2})  {cu / pu:5.2f}{'  CLIFF' if row['cliff'] else ''}", flush=True)
    chosen.close()
    plain.close()

    gm = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows)) if rows else float("nan")
    print(f"\nnocliff: {len(rows)} cases timed ({args.precision}), {len(cliffs)} cliff(s) above "
          f"{args.threshold}x, {len(not_run)} not run; geomean chosen / plain {gm:.3f}; "
          f"worst {max((r['ratio'] for r in rows), default=float('nan')):.2f}; {len(same)} with the same "
          f"kernels in both plans, not timed")
    for r in sorted(cliffs, key=lambda r: -r["ratio"]):
        print(f"  CLIFF {r['key']}: {r['chosen_us']:.1f} us in {r['chosen_kernels']} kernels vs "
              f"{r['plain_us']:.1f} us in {r['plain_kernels']}  ({r['spec']} "
              f"{' '.join(f'{a}={n}' for a, n in r['axes'].items())})")
    if args.json:
        args.json.write_text(json.dumps({"schema": "kbc-nocliff/1", "precision": args.precision,
                                         "threshold": args.threshold, "rows": rows, "same": same, "not_run": not_run,
                                         "not_compiled": failed}, indent=1) + "\n")
    return 1 if cliffs or not_run or failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
