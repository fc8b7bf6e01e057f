"""Roofline coverage of the perf report on every shared trace, against TraceLens's own.

What is measured, per trace under `<shared>/traces` (`<shared>` = ROOFLENS_SHARED or the
`shared` folder next to the repository; `execution_details.json` sidecars are skipped):
  * ours: `roofline_coverage(build_report(open_trace(path), platform))`, the share of
    attributed kernel time (`report.unified.instances`, column `Kernel Time (µs)`) on ops
    with a finite `Pct Roofline`. `open_trace` grafts graph-capture operators onto graph
    replays (a `capture_traces/` folder beside the trace, or the trace's own capture
    window); the execution column then shows "<merged>/<graph launches> cap". Platform: for
    a trace with a TraceLens reference folder, the platform file that reference used
    (reference README table: h100_* and torch_compile_triton -> H100.json, b200_* ->
    B200.json, the rest MI300X.json); otherwise the catalogue platform the trace suggests
    (`health.gpu.suggested_platform`), else MI300X.
  * TraceLens: from `reference/tracelens/<folder>/perf_report_csvs/unified_perf_summary.csv`,
    the share of `Kernel Time (µs)_sum` on rows with a non-empty `Pct Roofline_mean`.
  * the three uncovered op names with the most kernel time (share of all attributed time).
Targets: mean coverage over traces with shapes >= 97 %, and every trace with shapes >= 90 %.
The targets hold over the standalone corpus; the folders in `OUTSIDE_TARGETS` (trace pairs for
the comparative analysis, the 8-rank V100 DLRM job) are measured and printed but kept out of
the verdict: their fbgemm and fused-MoE ops have no shape-derived model yet.
The verdict is printed; the exit status is 0 regardless.

Run:  python benchmarks/roofline_coverage.py [--json-out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooflens.analyzers.perf.platforms import Platform, get_platform, load_platform_file
from rooflens.analyzers.report.build import PerfReport, build_report
from rooflens.analyzers.report.files import roofline_coverage
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.health import assess
from rooflens.analyzers.trace.open_trace import open_trace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for devkit.shared: reference folder -> trace file
from devkit.shared import REFERENCE_FOLDERS, trace_path  # noqa: E402

SIDECARS = {"execution_details.json"}  # capture metadata next to some traces, not traces
# The platform file each reference folder was produced with (reference/tracelens/README.md).
PLATFORM_BY_PREFIX = {"h100_": "H100.json", "b200_": "B200.json", "torch_compile_": "H100.json"}
MEAN_TARGET, MIN_TARGET = 97.0, 90.0
OUTSIDE_TARGETS = ("comparative_units/", "multirank/")
TOP_UNCOVERED = 3
NAME_WIDTH = 60  # op names in the printed table (kernel names can run to 1,000+ characters)


def shared_dir() -> Path:
    env = os.environ.get("ROOFLENS_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared"


def engine_version() -> str:
    def git(*args: str) -> str:
        cmd = ["git", "-C", str(REPO), *args]
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()

    dirty = git("status", "--porcelain", "-uno", "analyzers")
    return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")


def reference_platform(shared: Path, folder: str) -> Platform:
    name = next((f for p, f in PLATFORM_BY_PREFIX.items() if folder.startswith(p)), "MI300X.json")
    return load_platform_file(shared / "reference/tracelens/platforms" / name)


def tracelens_coverage(shared: Path, folder: str) -> float | None:
    """TraceLens's share (%) of kernel time on unified rows with a Pct Roofline, or None."""
    csv = shared / "reference/tracelens" / folder / "perf_report_csvs/unified_perf_summary.csv"
    if not csv.exists():
        return None
    df = pd.read_csv(csv, keep_default_na=False, na_values=[""])
    time_us = pd.to_numeric(df["Kernel Time (µs)_sum"], errors="coerce").fillna(0.0)
    total = float(time_us.sum())
    return float(time_us[df["Pct Roofline_mean"].notna()].sum() / total * 100) if total else None


def uncovered(report: PerfReport) -> list[tuple[str, float]]:
    """The op names without a Pct Roofline that hold the most kernel time (% of all)."""
    if report.unified is None:
        return []
    inst = report.unified.instances
    total = float(inst["Kernel Time (µs)"].sum())
    if total <= 0:
        return []
    missing = ~np.isfinite(inst["Pct Roofline"].to_numpy(dtype=float))
    by_name = inst.loc[missing].groupby("name", sort=False)["Kernel Time (µs)"].sum()
    top = by_name.sort_values(ascending=False).head(TOP_UNCOVERED)
    return [(str(name), float(t) / total * 100) for name, t in top.items()]


def measure(shared: Path, path: Path, folder: str | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    model = open_trace(path)  # a graph replay gets its capture_traces/ operators
    health = assess(model)
    merge = health.capture_merge
    if folder is not None:
        platform = reference_platform(shared, folder)
    else:
        platform = get_platform(health.gpu.suggested_platform or "MI300X")
    report = build_report(model, platform)
    coverage = roofline_coverage(report)
    return {
        "trace": str(path.relative_to(shared / "traces")),
        "reference": folder,
        "platform": platform.name,
        "shapes": health.shapes_recorded,
        "execution": health.execution
        + (f" {merge.merged_graph_launches}/{merge.graph_launches} cap" if merge else ""),
        "ours_pct": None if coverage is None else coverage * 100,
        "tracelens_pct": None if folder is None else tracelens_coverage(shared, folder),
        "uncovered": uncovered(report),
        "seconds": time.perf_counter() - t0,
    }


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def short(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 3] + "..."


def print_table(rows: list[dict[str, Any]]) -> None:
    width = max(len(r["trace"]) for r in rows)
    head = f"{'trace':<{width}} | shapes | {'execution':<16} | platform | ours % | TL %  | "
    print(head + "top uncovered ops (% of attributed kernel time)")
    for r in rows:
        top = ", ".join(f"{short(n)} {s:.1f}" for n, s in r["uncovered"]) or "-"
        print(
            f"{r['trace']:<{width}} | {'yes' if r['shapes'] else 'no':<6} | "
            f"{r['execution']:<16} | {r['platform']:<8} | {pct(r['ours_pct']):>6} | "
            f"{pct(r['tracelens_pct']):>5} | {top}"
        )


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means and minimum (traces without a coverage figure, i.e. no ops, are left out)."""
    both = [r for r in rows if r["ours_pct"] is not None and r["tracelens_pct"] is not None]
    outside = [r for r in rows if r["trace"].startswith(OUTSIDE_TARGETS)]
    shaped = [r for r in rows if r["shapes"] and r["ours_pct"] is not None and r not in outside]
    lowest = min(shaped, key=lambda r: r["ours_pct"]) if shaped else None
    out: dict[str, Any] = {
        "reference_traces": len(both),
        "reference_mean_ours": statistics.fmean(r["ours_pct"] for r in both) if both else None,
        "reference_mean_tracelens": (
            statistics.fmean(r["tracelens_pct"] for r in both) if both else None
        ),
        "shaped_traces": len(shaped),
        "shaped_mean": statistics.fmean(r["ours_pct"] for r in shaped) if shaped else None,
        "shaped_min": lowest["ours_pct"] if lowest else None,
        "shaped_min_trace": lowest["trace"] if lowest else None,
        "outside_targets": {r["trace"]: r["ours_pct"] for r in outside},
    }
    out["mean_pass"] = out["shaped_mean"] is not None and out["shaped_mean"] >= MEAN_TARGET
    out["min_pass"] = out["shaped_min"] is not None and out["shaped_min"] >= MIN_TARGET
    out["below_min"] = [r["trace"] for r in shaped if r["ours_pct"] < MIN_TARGET]
    return out


def print_summary(s: dict[str, Any]) -> None:
    print()
    print(
        f"mean over {s['reference_traces']} reference traces: ours "
        f"{pct(s['reference_mean_ours'])} %, TraceLens {pct(s['reference_mean_tracelens'])} %"
    )
    print(f"mean over {s['shaped_traces']} traces with shapes: {pct(s['shaped_mean'])} %")
    if s["outside_targets"]:
        shown = ", ".join(f"{t} {pct(v)} %" for t, v in s["outside_targets"].items())
        print(f"outside the targets ({', '.join(OUTSIDE_TARGETS)}): {shown}")
    print(f"minimum over traces with shapes: {pct(s['shaped_min'])} % ({s['shaped_min_trace']})")
    print(
        f"{'PASS' if s['mean_pass'] else 'FAIL'}  mean coverage (traces with shapes) "
        f">= {MEAN_TARGET:g} %: {pct(s['shaped_mean'])} %"
    )
    below = ", ".join(s["below_min"]) or "none"
    print(
        f"{'PASS' if s['min_pass'] else 'FAIL'}  every trace with shapes >= {MIN_TARGET:g} %: "
        f"{len(s['below_min'])} below ({below})"
    )


def measure_all(shared: Path, *, progress: bool = False) -> list[dict[str, Any]]:
    """One row per trace under `<shared>/traces` (unreadable files are skipped, and said)."""
    folders = {trace_path(shared, f).resolve(): f for f in REFERENCE_FOLDERS}
    paths = sorted(
        p
        for p in (shared / "traces").rglob("*")
        if p.name.endswith((".json", ".json.gz")) and p.name not in SIDECARS
    )
    rows: list[dict[str, Any]] = []
    for path in paths:
        try:
            row = measure(shared, path, folders.get(path.resolve()))
        except TraceError as exc:
            print(f"skipped {path}: {exc}", file=sys.stderr)
            continue
        if progress:
            print(f"  {row['trace']}: {pct(row['ours_pct'])} % in {row['seconds']:.1f} s")
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--json-out", type=Path, help="also save rows and summary as JSON")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    shared = shared_dir()
    version = engine_version()
    print(f"engine: {version}; shared: {shared}")
    rows = measure_all(shared, progress=True)
    print()
    print_table(rows)
    summary = summarise(rows)
    print_summary(summary)
    if args.json_out:
        args.json_out.write_text(
            json.dumps({"engine": version, "rows": rows, "summary": summary}, indent=2) + "\n"
        )


if __name__ == "__main__":
    main()
