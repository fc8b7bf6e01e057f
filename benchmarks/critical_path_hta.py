"""rooflens's critical path against Holistic Trace Analysis's (`critical_path_analysis`), on the
first ProfilerStep of shared traces: an independent computation of the same question.

HTA runs in a Python of its own (`--hta-python`, where `HolisticTraceAnalysis` is installed;
its pandas must be older than 2.2), never in CI. For each trace: the path's length, its split
into host and GPU time by both tools, and the overlap: the share of HTA's GPU time on the path
spent in kernels rooflens also puts on the path (matched by name and start, HTA's times being
relative to the trace's first event).

Run:  python benchmarks/critical_path_hta.py --hta-python /path/to/venv/bin/python [TRACE ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from rooflens.analyzers.replay.critical_path import HOST_KINDS, critical_path
from rooflens.analyzers.replay.graph import build_graph
from rooflens.analyzers.replay.simulate import map_time, replay
from rooflens.analyzers.replay.step_times import step_thread
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.trace.intervals import intersect_length, merge
from rooflens.analyzers.trace.iterations import find_iterations

SHARED = Path(__file__).resolve().parents[2] / "shared/traces"
DEFAULT = [
    SHARED / "h100/gaunernst_bert-small-uncased__1016001.json.gz",
    SHARED / "h100/Falconsai_nsfw_image_detection__1016002.json.gz",
    SHARED / "mi300/gaunernst_bert-small-uncased__1016001.json.gz",
]
GPU_KINDS = {"gpu", "stream_gap", "gpu_wait"}

HTA_SIDE = """
import json, sys
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
cp, ok = a.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=0)
bd = cp.get_critical_path_breakdown()
df = cp.trace_df if hasattr(cp, "trace_df") else cp.t
ops = bd[bd["type"] == "critical_path_operator"].dropna(subset=["event_idx"])
kernels = []
for idx, dur in zip(ops["event_idx"].astype(int), ops["duration"]):
    row = df.loc[idx]
    if row["stream"] >= 0:
        kernels.append([a.t.symbol_table.sym_table[int(row["name"])], float(row["ts"]), float(dur)])
by = {str(k): float(v) for k, v in bd.groupby("bound_by")["duration"].sum().items()}
print(json.dumps({"ok": bool(ok), "bound_by": by, "kernels": kernels}))
"""


def hta_path(python: str, trace: Path) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(trace, Path(folder) / ("rank-0" + "".join(trace.suffixes[-2:])))
        done = subprocess.run(
            [python, "-c", HTA_SIDE, folder], capture_output=True, text=True, check=True
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def our_path(trace: Path) -> tuple[float, set[tuple[str, int]], float, float, tuple]:
    """(GPU µs, kernels on the path by (name, start rel. to the first event), span µs, the
    path's host time inside top-level operators µs, the step's (start, end) rel. to the
    first event)."""
    model, _ = read_trace(trace)
    graph = build_graph(model)
    replayed = replay(graph)
    iterations = find_iterations(model)
    first = next(i for i in iterations.iterations if not i.open_end)
    thread = step_thread(graph)
    begin, end = (
        map_time(graph, replayed, thread, iterations.origin_us + ms * 1e3)
        for ms in (first.host_start_ms, first.host_end_ms)
    )
    path = critical_path(model, graph, replayed, thread, begin, end)
    kinds = path.by_kind()
    gpu = sum(v for k, v in kinds.items() if k in GPU_KINDS)
    origin = float(np.nanmin(model.recorded["ts"].to_numpy(float)))
    kernels = {(s.name, round(s.start_us - origin)) for s in path.segments if s.kind == "gpu"}
    host = merge(
        *np.asarray(
            [(s.start_us, s.end_us) for s in path.segments if s.kind in HOST_KINDS], dtype=float
        )
        .reshape(-1, 2)
        .T
    )
    in_ops = intersect_length(host, _top_level_operators(model, thread, begin, end))
    return gpu, kernels, path.span_us, in_ops, (begin - origin, end - origin)


def _top_level_operators(model, thread: int, begin: float, end: float):
    """The step thread's operators with no operator above them, inside [begin, end)."""
    ev = model.recorded
    is_op = (ev["cat"] == "cpu_op").to_numpy()
    parent = model.tree.parent[: len(ev)]
    above = np.zeros(len(ev), dtype=bool)
    node = parent.copy()
    for _ in range(64):  # an operator with an operator anywhere above it is nested
        live = node >= 0
        if not live.any():
            break
        above[live] |= is_op[node[live]]
        node = np.where(live, parent[np.maximum(node, 0)], -1)
    ts, dur = ev["ts"].to_numpy(float), ev["dur"].to_numpy(float)
    top = np.flatnonzero(is_op & ~above & (model.thread_code[: len(ev)] == thread))
    lo, hi = np.clip(ts[top], begin, end), np.clip(ts[top] + dur[top], begin, end)
    return merge(lo[hi > lo], hi[hi > lo])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hta-python", required=True)
    parser.add_argument("traces", nargs="*", type=Path)
    args = parser.parse_args(argv)
    for trace in args.traces or DEFAULT:
        theirs = hta_path(args.hta_python, trace)
        gpu, kernels, span, in_ops, (step_lo, step_hi) = our_path(trace)
        by = theirs["bound_by"]
        their_gpu = sum(v for k, v in by.items() if k.startswith("gpu"))
        their_total = sum(by.values()) or 1.0
        their_kernels = theirs["kernels"]
        shared = sum(d for n, ts, d in their_kernels if (n, round(ts)) in kernels)
        on_path = sum(d for _, _, d in their_kernels) or 1.0
        late = [ts for _, ts, _ in their_kernels]
        where = (
            f"{100 * (min(late) - step_lo) / (step_hi - step_lo):.0f}–"
            f"{100 * (max(late) - step_lo) / (step_hi - step_lo):.0f} % into the step"
            if late
            else "none"
        )
        print(
            f"{trace.name}: rooflens {span / 1e3:.3f} ms, GPU {100 * gpu / span:.1f} %, host "
            f"inside top-level operators {in_ops / 1e3:.3f} ms; HTA {their_total / 1e3:.3f} ms, "
            f"GPU {100 * their_gpu / their_total:.1f} % "
            f"({json.dumps({k: round(v / 1e3, 3) for k, v in by.items() if k})}); "
            f"HTA's path kernels also on rooflens's: {100 * shared / on_path:.0f} %, "
            f"they start {where}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
