"""Benchmark the trace loading pipeline against a bare `json.load`.

What is measured, per trace file:
  * `json.load`: `json.load(open(path))`, plain stdlib, GC left on as a user would have it.
  * engine: "load + tree + timeline" = `build_model(load_trace(path)).gpu_timeline()`.
Each measurement runs in a fresh child process (`--child MODE PATH`) that reports the wall
time of the work alone (`time.perf_counter`), its VmRSS right before the work (after imports)
and its peak RSS. MB = 10**6 bytes throughout. The peak is VmHWM, not `ru_maxrss`: Linux
carries `ru_maxrss` over exec from the spawning parent (which holds the base trace, ~350 MB),
so it would floor every child's peak at the parent's size; `ru_maxrss` is kept in --json-out.

Files: the largest trace under /work/shared/traces by decompressed size (or `--trace PATH`),
decompressed to plain JSON (factor 1), plus synthetic inflations in which its `traceEvents`
are repeated N times, each copy shifted in time past the previous one and with all ids
(correlation, External id, Sequence number, Python (parent) id, flow ids) made unique.

Checks: engine/json time ratio <= 1; engine peak-minus-baseline RSS <= 2 x JSON size; and
linearity between the smallest inflated factor and the largest (20 vs 2 by default): engine
time and peak-minus-baseline RSS within +/-20 % of the factor-scaled value.

Run:  python benchmarks/bench_load.py  [--factors 1,2,20] [--trace PATH] [--workdir DIR]
      [--repeat N (best time, worst peak of N runs)] [--keep] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"  # ../shared/traces
MB = 1e6
ID_ARGS = ("correlation", "External id", "Sequence number", "Python id", "Python parent id")
GAP_US = 1000.0
TOLERANCE = 0.20
ENGINE = "analyzers/trace"  # the engine's sources, relative to the repo


def decompressed_size(path: Path) -> int:
    """Uncompressed size: the gzip ISIZE trailer (size mod 2**32) or the file size."""
    if path.name.endswith(".gz"):
        with path.open("rb") as f:
            f.seek(-4, 2)
            return int.from_bytes(f.read(4), "little")
    return path.stat().st_size


def largest_trace(root: Path) -> Path:
    files = [p for p in root.rglob("*") if p.name.endswith((".json", ".json.gz"))]
    if not files:
        sys.exit(f"no traces under {root}")
    return max(files, key=decompressed_size)


def is_flow(event: dict[str, Any]) -> bool:
    return event.get("ph") in ("s", "f") and event.get("cat") == "ac2g"


def id_offset(events: list[dict[str, Any]]) -> int:
    """A power of ten above every id in the base trace."""
    top = 0
    for e in events:
        args = e.get("args") or {}
        for key in ID_ARGS:
            if isinstance(args.get(key), int):
                top = max(top, args[key])
        if is_flow(e) and isinstance(e.get("id"), int):
            top = max(top, e["id"])
    return 10 ** len(str(top))


def shifted(event: dict[str, Any], dt: float, did: int) -> dict[str, Any]:
    """A copy of one event moved `dt` µs later, every id raised by `did`."""
    out = dict(event)
    if isinstance(out.get("ts"), int | float):
        out["ts"] = out["ts"] + dt
    if is_flow(out) and isinstance(out.get("id"), int):
        out["id"] += did
    args = out.get("args")
    if isinstance(args, dict) and any(isinstance(args.get(k), int) for k in ID_ARGS):
        out["args"] = args = dict(args)
        for key in ID_ARGS:
            if isinstance(args.get(key), int):  # null / absent ids stay as they are
                args[key] += did
    return out


def write_inflated(base: dict[str, Any], factor: int, dest: Path) -> int:
    """Stream `factor` shifted copies of the base events to `dest`; returns the event count."""
    events: list[dict[str, Any]] = base["traceEvents"]
    timed = [e for e in events if isinstance(e.get("ts"), int | float)]
    start = min(e["ts"] for e in timed)
    end = max(e["ts"] + (e.get("dur") or 0) for e in timed)
    span, offset = end - start + GAP_US, id_offset(events)
    with dest.open("w", encoding="utf-8", buffering=1 << 22) as f:
        f.write('{"traceEvents": [')
        sep = ""
        for copy in range(factor):
            for event in events:
                f.write(sep + json.dumps(shifted(event, copy * span, copy * offset)))
                sep = ",\n"
        f.write("]")
        for key, value in base.items():
            if key != "traceEvents":
                f.write(f", {json.dumps(key)}: {json.dumps(value)}")
        f.write("}\n")
    return factor * len(events)


def status_mb(field: str) -> float:
    """A memory line of /proc/self/status (VmRSS: current, VmHWM: peak of this process)."""
    lines = Path("/proc/self/status").read_text().splitlines()
    return next(int(ln.split()[1]) * 1024 / MB for ln in lines if ln.startswith(f"{field}:"))


def child(mode: str, path: str) -> None:
    """Run one measurement in this (fresh) process and print it as one JSON line."""
    if mode == "engine":
        from rooflens.analyzers.trace.load import load_trace
        from rooflens.analyzers.trace.model import build_model
    baseline = status_mb("VmRSS")
    t0 = time.perf_counter()
    if mode == "engine":
        build_model(load_trace(path)).gpu_timeline()
    else:
        with open(path, encoding="utf-8") as f:
            json.load(f)
    seconds = time.perf_counter() - t0
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB
    out = {"seconds": seconds, "peak_mb": status_mb("VmHWM"), "baseline_mb": baseline}
    print(json.dumps(out | {"ru_maxrss_mb": maxrss}))


def measure(mode: str, path: Path, repeat: int) -> dict[str, float]:
    """`repeat` fresh child runs: the best time and the worst peak RSS."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode, str(path)]
    runs = [
        json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        for _ in range(repeat)
    ]
    return {
        "seconds": min(r["seconds"] for r in runs),
        "peak_mb": max(r["peak_mb"] for r in runs),
        "baseline_mb": min(r["baseline_mb"] for r in runs),
        "ru_maxrss_mb": max(r["ru_maxrss_mb"] for r in runs),
    }


def engine_version() -> str:
    """Git commit (+dirty) and `src:` a hash of the engine's sources (to spot edits mid-run)."""
    root = Path(__file__).resolve().parents[1]
    git = ["git", "-C", str(root)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain", "-uno", ENGINE], capture_output=True)
    sources = hashlib.sha1(b"".join(p.read_bytes() for p in sorted((root / ENGINE).glob("*.py"))))
    plus = "+dirty" if dirty.stdout.strip() else ""
    return f"{head.stdout.strip()}{plus} src:{sources.hexdigest()[:8]}"


def measure_file(path: Path, factor: int, events: int, repeat: int) -> dict[str, Any]:
    """One table row: json.load and engine, each in its own fresh process(es)."""
    js, eng = measure("json", path, repeat), measure("engine", path, repeat)
    print(f"  json.load {js['seconds']:.2f} s, engine {eng['seconds']:.2f} s")
    return {
        "file": path.name, "factor": factor, "json_mb": path.stat().st_size / MB, "events": events,
        "json_s": js["seconds"], "engine_s": eng["seconds"],
        "ratio": eng["seconds"] / js["seconds"],
        "json_peak_mb": js["peak_mb"], "json_delta_mb": js["peak_mb"] - js["baseline_mb"],
        "engine_peak_mb": eng["peak_mb"], "engine_baseline_mb": eng["baseline_mb"],
        "engine_delta_mb": eng["peak_mb"] - eng["baseline_mb"],
        "json_ru_maxrss_mb": js["ru_maxrss_mb"], "engine_ru_maxrss_mb": eng["ru_maxrss_mb"],
    }  # fmt: skip


def checks(rows: list[dict[str, Any]]) -> list[tuple[str, bool, str]]:
    out: list[tuple[str, bool, str]] = []
    for r in rows:
        ratio, mem = r["ratio"], r["engine_delta_mb"] / r["json_mb"]
        out.append((f"x{r['factor']} engine/json time <= 1.0", ratio <= 1.0, f"{ratio:.2f}"))
        out.append((f"x{r['factor']} engine peak-baseline <= 2 x JSON", mem <= 2.0, f"{mem:.2f}x"))
    inflated = sorted((r for r in rows if r["factor"] > 1), key=lambda r: r["factor"])
    if len(inflated) >= 2:
        lo, hi = inflated[0], inflated[-1]
        scale = hi["factor"] / lo["factor"]
        name = f"x{hi['factor']} ~ {scale:g} * x{lo['factor']}"
        for label, key in (("engine time", "engine_s"), ("peak-baseline", "engine_delta_mb")):
            actual, expected = hi[key], scale * lo[key]
            dev, detail = actual / expected - 1, f"{actual:.2f} vs expected {expected:.2f}"
            out.append((f"linearity {label}: {name} (±{TOLERANCE:.0%})", abs(dev) <= TOLERANCE,
                        f"{detail} ({dev:+.1%})"))  # fmt: skip
    return out


def print_report(rows: list[dict[str, Any]]) -> list[tuple[str, bool, str]]:
    head = ("file", "JSON MB", "events", "json.load s", "engine s", "eng/json",
            "peak RSS MB", "peak-base MB", "RSS/JSON", "json Δrss MB")  # fmt: skip
    width = max(len(h) for h in (head[0], *(r["file"] for r in rows)))
    print(" | ".join([f"{head[0]:<{width}}", *(f"{h:>12}" for h in head[1:])]))
    for r in rows:
        cells = (r["file"], f"{r['json_mb']:.1f}", f"{r['events']:,}", f"{r['json_s']:.2f}",
                 f"{r['engine_s']:.2f}", f"{r['ratio']:.2f}", f"{r['engine_peak_mb']:.0f}",
                 f"{r['engine_delta_mb']:.0f}", f"{r['engine_delta_mb'] / r['json_mb']:.2f}",
                 f"{r['json_delta_mb']:.0f}")  # fmt: skip
        print(" | ".join([f"{cells[0]:<{width}}", *(f"{c:>12}" for c in cells[1:])]))
    print()
    results = checks(rows)
    for name, ok, detail in results:
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--trace", type=Path, help="base trace (default: largest under shared/traces)")
    ap.add_argument("--factors", default="1,2,20", help="inflation factors (default 1,2,20)")
    ap.add_argument("--workdir", type=Path, help="where inflated files go (default: temp in /tmp)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement (best time)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--json-out", type=Path, help="also save the results as JSON")
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return

    sys.stdout.reconfigure(line_buffering=True)  # progress shows up when logged to a file
    base_path = args.trace or largest_trace(TRACES)
    factors = sorted({int(f) for f in args.factors.split(",")})
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_load_", dir="/tmp"))
    workdir.mkdir(parents=True, exist_ok=True)
    version = engine_version()
    print(f"base trace: {base_path}\nengine: {version}\nworkdir: {workdir}\n")
    raw = base_path.read_bytes()
    raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    base = json.loads(raw)
    if isinstance(base, list):  # Chrome's "JSON array" form: the events alone
        base = {"traceEvents": base}
    stem = base_path.name.removesuffix(".gz").removesuffix(".json")
    rows: list[dict[str, Any]] = []
    written: list[Path] = []
    try:
        for factor in factors:
            dest = workdir / f"{stem}_x{factor}.json"
            written.append(dest)
            t0 = time.perf_counter()
            if factor == 1:
                dest.write_bytes(raw)
                events = len(base["traceEvents"])
            else:
                events = write_inflated(base, factor, dest)
            size = dest.stat().st_size / MB
            print(f"wrote {dest.name} ({size:.0f} MB) in {time.perf_counter() - t0:.0f} s")
            rows.append(measure_file(dest, factor, events, args.repeat))
    finally:
        if not args.keep:
            for path in written:
                path.unlink(missing_ok=True)
            if args.workdir is None:
                shutil.rmtree(workdir, ignore_errors=True)
    if (after := engine_version()).split("src:")[1] != version.split("src:")[1]:
        print(f"\nWARNING: engine sources changed during the run ({version} -> {after})")
    print()
    results = print_report(rows)
    if args.json_out:
        checks_out = [{"check": n, "pass": ok, "detail": d} for n, ok, d in results]
        payload = {"base_trace": str(base_path), "engine": version, "repeat": args.repeat}
        payload |= {"rows": rows, "checks": checks_out}
        args.json_out.write_text(json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
