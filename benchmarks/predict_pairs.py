"""Predictions held against measurements: trace 1 replayed with trace 2's GPU times (paired
by the tree diff, compare/as_trace2.py) against trace 2's own measured step
(docs/what-if.md#predictions-against-measurements).

Pairs: the six comparative_units pairs of ../shared/traces and the five models traced on both
MI300X (trace 1) and H100 (trace 2). For each: trace 1's and trace 2's measured step (median
iteration, the window when none is marked), the prediction, its error against trace 2, the
GPU busy time predicted and measured, and the GPU time the pairing dropped (trace 1 only) or
could not place (trace 2 only). The step is measured twice: as the median iteration's host
span (ProfilerStep) and as time per step (replay/step_region.py: when each step's host work
and GPU work are done), the measure the priorities and `what-if` predict in.

Run:  python benchmarks/predict_pairs.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from rooflens.analyzers.compare.as_trace2 import as_trace2
from rooflens.analyzers.compare.tree_diff import diff_traces
from rooflens.analyzers.replay.graph import CannotReplay, build_graph
from rooflens.analyzers.replay.simulate import replay
from rooflens.analyzers.replay.step_region import step_region
from rooflens.analyzers.replay.step_times import replay_steps
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.trace.intervals import merge
from rooflens.analyzers.trace.iterations import find_iterations

SHARED = Path(__file__).resolve().parents[2] / "shared/traces"


def pairs() -> list[tuple[str, Path, Path]]:
    units = sorted((SHARED / "comparative_units").glob("test*"))
    found = [(u.name, u / "trace1.json", u / "trace2.json") for u in units]
    for mi300 in sorted((SHARED / "mi300").glob("*__*.json.gz")):
        h100 = SHARED / "h100" / mi300.name
        if h100.is_file():
            found.append((mi300.name.split("__")[0], mi300, h100))
    return found


def busy_ms(graph, replayed=None) -> float:
    """GPU busy time (the union of the GPU events), recorded or replayed."""
    start = graph.gpu.start if replayed is None else replayed.gpu_start
    end = graph.gpu.start + graph.gpu.dur if replayed is None else replayed.gpu_end
    return merge(start, end).length() / 1e3


def per_step_ms(model, graph, changes=None) -> float:
    """Time per step (replay/step_region.py: when each step's host work and GPU work are
    done), every marked step counted."""
    region = step_region(model, graph, find_iterations(model))
    replayed = replay(graph) if changes is None else replay(graph, changes)
    removed = () if changes is None else changes.host_removed
    return region.per_step_us(graph, replayed, removed) / 1e3


def one(name: str, path1: Path, path2: Path) -> tuple[float, float] | None:
    model1, _ = read_trace(path1)
    model2, _ = read_trace(path2)
    try:
        graph1, graph2 = build_graph(model1), build_graph(model2)
    except CannotReplay as exc:
        print(f"{name:34s} cannot replay: {exc}")
        return None
    measured1 = replay_steps(graph1, find_iterations(model1)).measured_step_ms
    measured2 = replay_steps(graph2, find_iterations(model2)).measured_step_ms
    paired = as_trace2(diff_traces(model1, model2), graph1)
    predicted = replay_steps(graph1, find_iterations(model1), paired.changes).replayed_step_ms
    error = 100.0 * abs(predicted - measured2) / measured2 if measured2 else 0.0
    work2 = per_step_ms(model2, graph2)
    work_pred = per_step_ms(model1, graph1, paired.changes)
    work_error = 100.0 * abs(work_pred - work2) / work2 if work2 else 0.0
    print(
        f"{name:34s} {measured1:10.3f} {measured2:10.3f} {predicted:10.3f} {error:7.1f} "
        f"{work_pred:10.3f} {work2:10.3f} {work_error:7.1f} "
        f"{busy_ms(graph1, replay(graph1, paired.changes)):10.3f} {busy_ms(graph2):10.3f} "
        f"{paired.dropped_us / 1e3:8.3f} {paired.unplaced_us / 1e3:8.3f} {paired.paired_groups:6d}"
    )
    return error, work_error


def main() -> int:
    print(
        f"{'pair':34s} {'trace1 ms':>10s} {'trace2 ms':>10s} {'predicted':>10s} {'err %':>7s} "
        f"{'work pred':>10s} {'work meas':>10s} {'err %':>7s} "
        f"{'busy pred':>10s} {'busy meas':>10s} {'dropped':>8s} {'unplaced':>8s} {'groups':>6s}"
    )
    found = [e for e in (one(*p) for p in pairs()) if e is not None]
    for label, errors in (
        ("step", [e[0] for e in found]),
        ("work per step", [e[1] for e in found]),
    ):
        if errors:
            print(
                f"{len(errors)} pairs, {label}: mean error {np.mean(errors):.1f} %, "
                f"worst {max(errors):.1f} %"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
