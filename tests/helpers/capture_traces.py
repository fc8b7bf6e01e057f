"""Hand-written graph-capture traces: a replay and the capture traces beside it.

The replay holds one graph launch per iteration and the kernels it replayed, with no
operator above them; each capture trace (in `capture_traces/`) holds the
StreamBeginCapture..EndCapture window where the same kernels were launched by `aten::mm` /
`aten::gelu` with shapes. Built with a `TraceBuilder` (tests/helpers/trace_builder.py).
"""

from __future__ import annotations

import json

MM_DIMS = {"Input Dims": [[32, 64], [64, 128]], "Input type": ["c10::BFloat16"] * 2}
GELU_DIMS = {"Input Dims": [[32, 128]], "Input type": ["c10::BFloat16"]}
MM2_DIMS = {"Input Dims": [[32, 128], [128, 64]], "Input type": ["c10::BFloat16"] * 2}


def capture_events(tb, batch: int = 32, kernel_names: bool = True, second: str = "act"):
    """One capture window: mm -> gemm_a, gelu -> `second`, mm -> gemm_a (plus a stray op)."""

    def launch(ts: float, kernel: str) -> dict:
        args = {"kernel": kernel} if kernel_names else {}
        return tb.runtime("hipLaunchKernel", ts, 3, args=args)

    return [
        {"ph": "X", "cat": "user_annotation", "name": f"capture_{batch}_FULL", "pid": 1}
        | {"tid": 1, "ts": -10, "dur": 200},
        tb.cpu_op("aten::empty", -5, 2),  # before the window: never grafted
        tb.runtime("hipStreamBeginCapture", 0, 1),
        tb.cpu_op("aten::mm", 10, 20, args=MM_DIMS),
        launch(12, "gemm_a"),
        tb.cpu_op("aten::gelu", 40, 10, args=GELU_DIMS),
        launch(42, second),
        tb.cpu_op("aten::view", 52, 2),  # no launch: not grafted
        tb.cpu_op("aten::mm", 60, 20, args=MM2_DIMS),
        launch(62, "gemm_a"),
        tb.runtime("hipStreamEndCapture", 90, 2),
    ]


def replay_events(tb, iterations: int = 1, batch: int = 16, swap: bool = False):
    """`iterations` graph launches, each replaying gemm_a, act, gemm_a (act first if swap)."""
    events = []
    for i in range(iterations):
        t0 = i * 1000
        names = ["act", "gemm_a", "gemm_a"] if swap else ["gemm_a", "act", "gemm_a"]
        events.append(
            {"ph": "X", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": t0, "dur": 900}
            | {"name": f"execute_{batch}_context_0(sq0sk0sqsq0sqsk0)_generation_{batch}(x)"}
        )
        events.append(tb.cpu_op("model_step", t0 + 5, 100))
        events.append(tb.runtime("hipGraphLaunch", t0 + 10, 20, correlation=100 + i))
        for j, name in enumerate(names):
            events.append(tb.kernel(name, t0 + 50 + 20 * j, 10, correlation=100 + i))
    return events


def write_case(tb, *, captures=((32, True),), iterations=1, batch=16, swap=False, details=None):
    folder = tb.folder / "capture_traces"
    folder.mkdir(exist_ok=True)
    for bs, names in captures:
        tb.write(capture_events(tb, bs, names), name=f"capture_traces/bs{bs}.json")
    if details is not None:
        (folder / "execution_details.json").write_text(json.dumps(details))
    return tb.write(replay_events(tb, iterations, batch, swap), name="replay.json")
