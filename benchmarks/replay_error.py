"""Identity replay error on every shared trace: the dependency graph replayed with nothing
changed should give back the steps the trace measured
(docs/what-if.md#step-times-and-the-identity-replay-error).

For each trace: the measured and replayed step (median over iterations with a marked end; the
whole window when none is marked), the mean identity error over iterations, the window, the
size of the graph, the time the graph and the replay took, and the time each assumption
covers. A trace the graph cannot be built for (no launch links: a GPU-only trace) says why
instead of printing a number. Targets: mean error <= 2 %, none over 5 %.

Run:  python benchmarks/replay_error.py [TRACE ...]   (default: every trace of ../shared/traces)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rooflens.analyzers.replay.graph import CannotReplay, build_graph
from rooflens.analyzers.replay.step_times import replay_steps
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.iterations import find_iterations

SHARED = Path(__file__).resolve().parents[2] / "shared/traces"
MEAN_TARGET, MAX_TARGET = 2.0, 5.0


def shared_traces() -> list[Path]:
    found = sorted(SHARED.rglob("*.json.gz")) + sorted(SHARED.rglob("*.json"))
    return [p for p in found if p.is_file()]


def main(paths: list[Path]) -> int:
    errors: list[float] = []
    print(f"{'trace':72s} {'step ms':>10s} {'replayed':>10s} {'error %':>8s} {'window ms':>10s}")
    for path in paths:
        name = str(path.relative_to(SHARED)) if path.is_relative_to(SHARED) else str(path)
        try:
            model, _ = read_trace(path)
            began = time.perf_counter()
            graph = build_graph(model)
            steps = replay_steps(graph, find_iterations(model))
            seconds = time.perf_counter() - began
        except CannotReplay as exc:
            print(f"{name:72s} cannot replay: {exc}")
            continue
        except TraceError as exc:
            print(f"{name:72s} unreadable: {exc}")
            continue
        errors.append(steps.replay_error_pct)
        print(
            f"{name:72s} {steps.measured_step_ms:10.3f} {steps.replayed_step_ms:10.3f} "
            f"{steps.replay_error_pct:8.3f} {steps.window_measured_ms:10.2f}  "
            f"({len(graph.host.uid)} calls, {len(graph.gpu.uid)} GPU events, {seconds:.2f} s)"
        )
        for a in steps.assumptions:
            if a.events:
                print(f"{'':6s}{a.rule}: {a.events} events, {a.us / 1e3:.3f} ms")
    if not errors:
        return 1
    mean, worst = sum(errors) / len(errors), max(errors)
    print(f"{len(errors)} traces replayed: mean error {mean:.3f} %, worst {worst:.3f} %")
    return 0 if mean <= MEAN_TARGET and worst <= MAX_TARGET else 1


if __name__ == "__main__":
    sys.exit(main([Path(a) for a in sys.argv[1:]] or shared_traces()))
