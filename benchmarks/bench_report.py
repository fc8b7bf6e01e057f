"""Benchmark the whole perf report (trace -> CSV folder + XLSX) against a bare `json.load`.

Trace: the largest under `<shared>/traces` by uncompressed size (`<shared>` = ROOFLENS_SHARED
or the `shared` folder next to the repository), or `--trace PATH`; decompressed once to a
temporary plain .json that every run reads.

What is measured, each in a fresh child process (`--child MODE PATH`), `--repeat` times
(default 3), reporting the median:
  * json: `json.load(open(path))`, plain stdlib, GC left on as a user would have it.
  * report: `load_trace` -> (`load_captures`) -> `build_model` -> `assess` (GPU name,
    suggested platform) -> `build_report` -> `write_perf_report(report, out_dir, name, gpu)` (CSV
    folder + XLSX, into a temporary folder), i.e. what `rooflens report` does. A graph
    replay's capture traces (the `capture_traces/` folder beside the trace, as `rooflens
    report` finds them, or `--capture-folder`) are read and merged too, in phase "captures"
    (`--no-captures` leaves them out); json.load is still timed on the replay file alone.
Each child reports the wall time of the work alone (`time.perf_counter`, imports excluded and
shown apart), its VmRSS after imports and its peak RSS (VmHWM); the report child also
times each phase: load, model (+ health), report tables, CSV, XLSX. CSV and XLSX are timed by
wrapping the two writers `write_perf_report` calls, so `write_perf_report` itself runs unchanged.
MB = 10**6 bytes.

Target: report time <= 2 x json.load time (printed as PASS/FAIL; the exit status is always 0).
`--profile N` also runs the report once under cProfile and prints the N hottest functions.

Run:  python benchmarks/bench_report.py [--trace PATH] [--repeat N] [--profile N]
      [--json-out FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_load import decompressed_size, largest_trace, status_mb

from rooflens.analyzers.trace.capture_folder import default_capture_folder

MB = 1e6
TARGET = 2.0
PHASES = ("load", "captures", "model", "report", "csv", "xlsx")
CAPTURES_ENV = "ROOFLENS_BENCH_CAPTURES"  # the capture folder, handed to the child processes


def shared_dir() -> Path:
    env = os.environ.get("ROOFLENS_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared"


def git(*args: str) -> str:
    cmd = ["git", "-C", str(Path(__file__).resolve().parents[1]), *args]
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()


def run_report(path: str, out_dir: Path, phases: dict[str, float]) -> None:
    """The whole report, as `rooflens report` runs it, with per-phase perf_counter times."""
    from rooflens.analyzers.perf.platforms import get_platform
    from rooflens.analyzers.report import files
    from rooflens.analyzers.report.build import build_report
    from rooflens.analyzers.trace.capture_folder import load_captures
    from rooflens.analyzers.trace.health import assess
    from rooflens.analyzers.trace.load import load_trace
    from rooflens.analyzers.trace.model import build_model

    def timed(phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - t0

        return wrapper

    files.write_csv_folder = timed("csv", files.write_csv_folder)  # type: ignore[assignment]
    files.write_xlsx = timed("xlsx", files.write_xlsx)  # type: ignore[assignment]
    trace = timed("load", load_trace)(path)
    folder = os.environ.get(CAPTURES_ENV)
    captures = timed("captures", load_captures)(folder) if folder else ()
    model = timed("model", build_model)(trace, captures=captures, capture_folder=folder or "")
    health = timed("model", assess)(model)
    platform = get_platform(health.gpu.suggested_platform or "MI300X")
    report = timed("report", build_report)(model, platform)
    files.write_perf_report(report, out_dir, Path(path).name, health.gpu.model)


def child(mode: str, path: str, top: int) -> None:
    """One measurement in this (fresh) process, printed as one JSON line."""
    t_import = time.perf_counter()
    if mode in ("report", "profile"):
        import rooflens.analyzers.report.build
        import rooflens.analyzers.report.files
        import rooflens.analyzers.trace.health
        import rooflens.analyzers.trace.load  # noqa: F401
    imports = time.perf_counter() - t_import
    if mode == "profile":
        profile(path, top)
        return
    baseline = status_mb("VmRSS")
    phases: dict[str, float] = {}
    out_dir = Path(tempfile.mkdtemp(prefix="bench_report_out_"))
    t0 = time.perf_counter()
    try:
        if mode == "report":
            run_report(path, out_dir, phases)
        else:
            with open(path, encoding="utf-8") as f:
                json.load(f)
        seconds = time.perf_counter() - t0
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    peak = status_mb("VmHWM")  # this process alone (ru_maxrss carries the parent's peak)
    result = {"seconds": seconds, "imports": imports, "peak_mb": peak, "baseline_mb": baseline}
    print(json.dumps(result | {"phases": phases}))


def profile(path: str, top: int) -> None:
    """The report once under cProfile (imports done first); the hottest functions."""
    import cProfile
    import pstats

    out_dir = Path(tempfile.mkdtemp(prefix="bench_report_prof_"))
    prof = cProfile.Profile()
    try:
        prof.runcall(run_report, path, out_dir, {})
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def measure(mode: str, path: Path, repeat: int) -> dict[str, Any]:
    """`repeat` fresh child runs; the median of each figure."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode, str(path)]
    runs = []
    for _ in range(repeat):
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    out: dict[str, Any] = {
        k: statistics.median(r[k] for r in runs)
        for k in ("seconds", "imports", "peak_mb", "baseline_mb")
    }
    out["runs_s"] = [r["seconds"] for r in runs]
    middle = sorted(runs, key=lambda r: r["seconds"])[(len(runs) - 1) // 2]
    out["phases"] = {p: middle["phases"][p] for p in PHASES if p in middle["phases"]}
    out["phases_run_s"] = middle["seconds"]  # the breakdown is that of the median run
    return out


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--trace", type=Path, help="trace (default: largest under shared/traces)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile top N")
    ap.add_argument("--json-out", type=Path, help="also save the results as JSON")
    ap.add_argument("--capture-folder", type=Path, help="graph-capture traces of the replay")
    ap.add_argument("--no-captures", action="store_true", help="do not merge capture traces")
    return ap.parse_args()


def write_plain(source: Path, dest: Path) -> None:
    """Copy a trace as plain JSON, so gunzip is timed neither in json.load nor in the report."""
    raw = source.read_bytes()
    dest.write_bytes(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def measure_all(
    source: Path, folder: Path | None, args: argparse.Namespace
) -> tuple[dict[str, Any], dict[str, Any], float, str]:
    """json.load and report of the trace, json.load of each capture file, and the profile text."""
    workdir = Path(tempfile.mkdtemp(prefix="bench_report_"))
    profile_text = ""
    plain = workdir / (source.name.removesuffix(".gz").removesuffix(".json") + ".json")
    try:
        write_plain(source, plain)
        js = measure("json", plain, args.repeat)
        rep = measure("report", plain, args.repeat)
        js_captures = 0.0  # json.load of every capture file, the other input of the report
        for capture in sorted(Path(folder).glob("*.json*")) if folder is not None else ():
            if capture.name == "execution_details.json":
                continue
            copy = workdir / ("capture_" + capture.name.removesuffix(".gz"))
            write_plain(capture, copy)
            js_captures += measure("json", copy, args.repeat)["seconds"]
        if args.profile:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "profile", str(plain)]
            cmd += ["--profile", str(args.profile)]
            profile_text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return js, rep, js_captures, profile_text


def print_table(js: dict[str, Any], rep: dict[str, Any]) -> None:
    """Wall time, runs and RSS of both, then the phases of the median report run."""
    print(f"{'':<10} {'wall s':>8} {'runs s':>20} {'peak RSS MB':>12} {'peak-base MB':>13}")
    for name, m in (("json.load", js), ("report", rep)):
        runs = " ".join(f"{s:.2f}" for s in m["runs_s"])
        delta = m["peak_mb"] - m["baseline_mb"]
        print(f"{name:<10} {m['seconds']:>8.2f} {runs:>20} {m['peak_mb']:>12.0f} {delta:>13.0f}")
    total = rep["phases_run_s"]
    imports = f"imports before it, not counted: {rep['imports']:.2f} s"
    print(f"\nreport breakdown of the median run ({total:.2f} s; {imports}):")
    for phase, seconds in rep["phases"].items():
        print(f"  {phase:<8} {seconds:>6.2f}  {seconds / total:>6.1%}")
    other = total - sum(rep["phases"].values())
    print(f"  {'other':<8} {other:>6.2f}  {other / total:>6.1%}  (platform lookup, summary facts)")


def print_verdict(
    ratio: float, js: dict[str, Any], rep: dict[str, Any], js_captures: float
) -> None:
    """PASS/FAIL against the target; with captures, against json.load of every input."""
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    if js_captures:
        both = rep["seconds"] / (js["seconds"] + js_captures)
        print(f"\njson.load of the capture files: {js_captures:.2f} s")
        verdict = "PASS" if both <= TARGET else "FAIL"
        print(
            f"{verdict}  report / json.load of the same inputs (trace + captures) = {both:.2f} "
            f"(target <= {TARGET:g}); against the replay file alone {ratio:.2f}"
        )
    else:
        print(f"\n{verdict}  report / json.load = {ratio:.2f} (target <= {TARGET:g})")


def main() -> None:
    args = parse_args()
    if args.child:
        child(*args.child, top=args.profile)
        return

    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    source = args.trace or largest_trace(shared_dir() / "traces")
    dirty = git("status", "--porcelain", "-uno", "analyzers")
    version = git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")
    print(f"trace: {source} ({decompressed_size(source) / MB:.1f} MB uncompressed)")
    folder = None if args.no_captures else (args.capture_folder or default_capture_folder(source))
    if folder is not None:
        os.environ[CAPTURES_ENV] = str(folder)
        sizes = sum(decompressed_size(p) for p in Path(folder).glob("*.json*"))
        print(f"captures: {folder} ({sizes / MB:.1f} MB uncompressed), merged in the report")
    print(f"engine: {version}; {args.repeat} runs each, median; {os.cpu_count()} CPUs\n")
    js, rep, js_captures, profile_text = measure_all(source, folder, args)

    size = decompressed_size(source) / MB
    ratio = rep["seconds"] / js["seconds"]
    print_table(js, rep)
    print_verdict(ratio, js, rep, js_captures)
    rss = (rep["peak_mb"] - rep["baseline_mb"]) / size
    print(f"JSON {size:.1f} MB; report peak-baseline RSS = {rss:.2f} x JSON")
    if args.json_out:
        payload = {"trace": str(source), "engine": version, "repeat": args.repeat}
        payload |= {"json_mb": size, "json": js, "report": rep, "ratio": ratio}
        payload |= {"captures": str(folder) if folder else None, "json_captures_s": js_captures}
        args.json_out.write_text(json.dumps(payload, indent=2) + "\n")
    if profile_text:
        print(f"\ncProfile of one report run, imports excluded (top {args.profile}):")
        print(profile_text)


if __name__ == "__main__":
    main()
