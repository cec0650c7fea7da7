"""Reporting for bench/compare.py: environment, summaries, the table, JSON and the PNG chart."""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import socket
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import torch

from roofline import precision_flags
from workloads import REPO

Row = dict[str, object]
SCHEMA = "kbc-bench/1"


# ------------------------------------------------------------------ environment

def command_output(cmd: list[str], cwd: Path | None = None) -> str | None:
    """stdout of a command, or None if it is missing or fails."""
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


NVSMI_FIELDS = ["name", "driver_version", "clocks.sm", "clocks.max.sm", "clocks.mem", "clocks.max.mem",
                "temperature.gpu", "power.draw", "power.limit", "pstate"]


def nvidia_smi() -> dict[str, str] | None:
    """The first GPU's clocks and state from nvidia-smi (None where it is unavailable)."""
    out = command_output(["nvidia-smi", f"--query-gpu={','.join(NVSMI_FIELDS)}", "--format=csv,noheader"])
    if not out:
        return None
    values = [v.strip() for v in out.splitlines()[0].split(",")]
    return dict(zip(NVSMI_FIELDS, values))


def kbc_commit() -> dict[str, object]:
    """$KBC_COMMIT when set (a copy whose .git is missing or stale), else git HEAD
    of the repository and whether the tree is dirty."""
    env = os.environ.get("KBC_COMMIT")
    if env:
        return {"commit": env, "dirty": None, "source": "KBC_COMMIT"}
    head = command_output(["git", "rev-parse", "HEAD"], cwd=REPO)
    if head:
        dirty = command_output(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO)
        return {"commit": head, "dirty": bool(dirty), "source": "git"}
    return {"commit": None, "dirty": None, "source": "unknown"}


def package_version(name: str) -> str | None:
    """An installed distribution's version, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def gpu_properties(device: torch.device) -> dict[str, object] | None:
    """torch's view of the device."""
    if device.type != "cuda":
        return None
    p = torch.cuda.get_device_properties(device)
    props: dict[str, object] = {"name": p.name, "capability": f"{p.major}.{p.minor}",
                                "sm_count": p.multi_processor_count, "total_memory": p.total_memory}
    for attr in ("L2_cache_size", "clock_rate", "memory_clock_rate", "max_threads_per_multi_processor"):
        if hasattr(p, attr):
            props[attr] = getattr(p, attr)
    return props


def environment(device: torch.device) -> dict[str, object]:
    """Everything needed to tell where and with what the numbers were taken."""
    smi = nvidia_smi() if device.type == "cuda" else None
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "device": str(device),
        "gpu": gpu_properties(device),
        "nvidia_smi_start": smi,
        "driver": smi.get("driver_version") if smi else None,
        "cuda": torch.version.cuda,
        "cudnn": cudnn,
        "torch": torch.__version__,
        "triton": package_version("triton"),
        "cpu_threads": torch.get_num_threads(),
        "precision_flags": precision_flags(),
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "kbc": kbc_commit(),
    }


# ------------------------------------------------------------------ summaries

def speedups(rows: list[Row]) -> None:
    """Fill ``speedup`` (baseline median / median) for the rows of each (workload, shape)."""
    base = {(r["workload"], r["shape"]): r["median_us"] for r in rows if r["baseline"] and r["median_us"]}
    for r in rows:
        b = base.get((r["workload"], r["shape"]))
        r["speedup"] = b / r["median_us"] if b and r["median_us"] and r["counts"] else None


def summaries(rows: list[Row]) -> list[Row]:
    """Per workload and implementation: the headline shape, or the mean over all shapes run (SAM-HQ)."""
    out: list[Row] = []
    for wl in dict.fromkeys(r["workload"] for r in rows):
        wrows = [r for r in rows if r["workload"] == wl]
        shapes = list(dict.fromkeys(r["shape"] for r in wrows))
        if wl == "sam":
            out.extend(mean_rows(wl, wrows, shapes))
        else:
            out.extend({"workload": wl, "label": r["shape"], "impl": r["impl"], "family": r["family"],
                        "kind": "headline shape", "median_us": r["median_us"], "speedup": r["speedup"],
                        "pct_of_floor": r["pct_of_floor"], "status": r["status"]}
                       for r in wrows if r["primary"])
    return out


def mean_rows(wl: str, wrows: list[Row], shapes: list[str]) -> list[Row]:
    """SAM-HQ: mean of the per-shape medians for each implementation (complete only if every shape counts)."""
    out = []
    base = [r for r in wrows if r["baseline"]]
    base_mean = mean_of([r["median_us"] for r in base]) if len(base) == len(shapes) else None
    for impl in dict.fromkeys(r["impl"] for r in wrows):
        irows = [r for r in wrows if r["impl"] == impl]
        good = [r for r in irows if r["median_us"] and r["counts"]]
        complete = len(good) == len(shapes)
        mean = mean_of([r["median_us"] for r in good]) if complete else None
        floor = mean_of([r["floor_us"] for r in irows]) if complete else None
        ratios = [r["speedup"] for r in good if r["speedup"]]
        out.append({"workload": wl, "label": f"mean of {len(shapes)}", "impl": impl,
                    "family": irows[0]["family"], "kind": "mean", "n_shapes": len(shapes),
                    "n_counted": len(good), "median_us": mean,
                    "speedup": base_mean / mean if base_mean and mean else None,
                    "geomean_speedup": (math.exp(sum(map(math.log, ratios)) / len(ratios))
                                        if complete and len(ratios) == len(shapes) else None),
                    "floor_us": floor, "pct_of_floor": 100.0 * floor / mean if floor and mean else None,
                    "status": "ok" if complete else f"partial {len(good)}/{len(shapes)}"})
    return out


def mean_of(values: Iterable[float]) -> float:
    """Arithmetic mean."""
    values = list(values)
    return sum(values) / len(values)


def merge_documents(docs: list[dict[str, object]], sources: list[str]) -> dict[str, object]:
    """One document from several runs (e.g. one per workload); a later row replaces an earlier one,
    except that a row a run skipped by its options ("skipped (--no-compile)") keeps the earlier row."""
    for doc, src in zip(docs, sources):
        if doc.get("schema") != SCHEMA:
            raise ValueError(f"{src}: schema {doc.get('schema')!r}, expected {SCHEMA!r}")
    rows: dict[tuple, Row] = {}
    for doc in docs:
        for r in doc["results"]:
            key = (r["workload"], r["shape"], r["impl"])
            if key in rows and r["status"] == "N/A" and str(r.get("reason", "")).startswith("skipped"):
                continue
            rows[key] = r
    # rows of one workload and shape together, in the order they were first seen
    first_seen: dict[tuple, int] = {}
    for key in rows:
        first_seen.setdefault(key[:1], len(first_seen))
        first_seen.setdefault(key[:2], len(first_seen))
    results = sorted(rows.values(), key=lambda r: (first_seen[(r["workload"],)],
                                                   first_seen[(r["workload"], r["shape"])]))
    speedups(results)
    last = docs[-1]
    return {"schema": SCHEMA, "complete": all(d.get("complete") for d in docs), "merged_from": sources,
            "environment": last["environment"], "environments": [d["environment"] for d in docs],
            "arguments": [d["arguments"] for d in docs], "thresholds": last["thresholds"],
            "oracle_consistency": [d["oracle_consistency"] for d in docs], "ceilings": last["ceilings"],
            "ceilings_per_run": [d["ceilings"] for d in docs], "results": results, "summary": summaries(results)}


# ------------------------------------------------------------------ the table

def fmt(value: object, spec: str, none: str = "-") -> str:
    """Format a number, or a dash."""
    return none if value is None else format(value, spec)


COLUMNS = [("workload", 8, "<"), ("shape", 14, "<"), ("implementation", 34, "<"), ("median µs", 11, ">"),
           ("speedup", 8, ">"), ("% floor", 8, ">"), ("rel err", 8, ">"), ("status", 12, "<")]


def table_line(cells: list[str]) -> str:
    """One line of the fixed-width table."""
    return "  ".join(f"{c:{align}{width}}" for c, (_, width, align) in zip(cells, COLUMNS))


def render_table(rows: list[Row], summary: list[Row]) -> str:
    """The final table: every row, then the SAM-HQ means."""
    lines = [table_line([c for c, _, _ in COLUMNS]), "-" * (sum(w for _, w, _ in COLUMNS) + 2 * len(COLUMNS))]
    for r in rows:
        speed = fmt(r["speedup"], ".2f") + ("x" if r["speedup"] else "")
        lines.append(table_line([r["workload"], r["shape"], r["impl"][:34], fmt(r["median_us"], ",.1f"), speed,
                                 fmt(r["pct_of_floor"], ".2f"), fmt(r["rel_err"], ".1e"), r["status"]]))
    for s in (s for s in summary if s["kind"] == "mean"):
        speed = fmt(s["speedup"], ".2f") + ("x" if s["speedup"] else "")
        lines.append(table_line([s["workload"], s["label"][:14], s["impl"][:34], fmt(s["median_us"], ",.1f"),
                                 speed, fmt(s["pct_of_floor"], ".2f"), "", s["status"]]))
    return "\n".join(lines)


def render_reasons(rows: list[Row]) -> str:
    """The distinct reasons for N/A and FAIL rows (deduplicated)."""
    reasons: dict[str, list[str]] = {}
    for r in rows:
        if r["status"] != "ok" and r["reason"]:
            reasons.setdefault(f"{r['impl']}: {r['reason']}", []).append(f"{r['workload']} {r['shape']}")
    return "\n".join(f"  [{r}] ({', '.join(where[:4])}{' ...' if len(where) > 4 else ''})"
                     for r, where in reasons.items())


# ------------------------------------------------------------------ JSON and PNG

def write_json(path: Path, document: dict[str, object]) -> None:
    """Write the results atomically (a crash mid-run leaves the previous complete file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(document, indent=1, default=str) + "\n")
    tmp.replace(path)


def write_png(path: Path, summary: list[Row], titles: dict[str, str], baseline_names: dict[str, str],
              subtitle: str) -> str:
    """Speedup over PyTorch eager per workload (headline shape, or SAM-HQ's mean) for each implementation."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no chart written"
    workloads = list(dict.fromkeys(s["workload"] for s in summary))
    if not workloads:
        return "nothing to chart"
    fig, axes = plt.subplots(len(workloads), 1, figsize=(9, 2.2 + 2.6 * len(workloads)), squeeze=False)
    for ax, wl in zip(axes[:, 0], workloads):
        items = [s for s in summary if s["workload"] == wl]
        chart_workload(ax, items, titles.get(wl, wl), baseline_names.get(wl, "PyTorch eager"))
    fig.suptitle(subtitle, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"chart written to {path}"


def chart_workload(ax: object, items: list[Row], title: str, baseline: str) -> None:
    """One horizontal bar chart: speedup per implementation (log scale when the range is wide)."""
    values = [s["speedup"] for s in items]
    shown = [v for v in values if v]
    log = bool(shown) and max(shown) / min(shown) > 20
    colors = ["tab:red" if s["family"] == "kbc" else "tab:blue" if s["family"] == "compile" else "tab:gray"
              for s in items]
    ax.barh(range(len(items)), [v or float("nan") for v in values], color=colors)
    if log:
        ax.set_xscale("log")
    left = min(shown) / 2 if log else 0.0
    for y, (s, v) in enumerate(zip(items, values)):
        text = f"{v:.2f}x" if v else ("N/A" if s["median_us"] is None else s["status"])
        ax.text(v or left, y, " " + text, va="center", fontsize=8)
    ax.set_yticks(range(len(items)))
    ax.set_yticklabels([s["impl"] for s in items], fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linewidth=0.8)
    if log:
        ax.set_xlim(left=left)
    ax.set_title(f"{title} — {items[0]['label']}", fontsize=10)
    ax.set_xlabel(f"speedup over {baseline} (higher is better{', log scale' if log else ''})", fontsize=8)
