"""A small generated training loop with planted findings, for the annotated trace and the
page: four iterations of six GEMMs and one elementwise add whose kernel runs 400 times
longer than its bytes need (the slow kernel), and, before the third iteration's launches,
a single-process DataLoader fetch of 20 ms on the main thread while the GPU has nothing to
do (the planted idle gap). Names can be swapped for hostile ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rooflens.analyzers.synthetic.devices import H100
from rooflens.analyzers.synthetic.kernels import ADD_BF16, NV_GEMM, loader_frames
from rooflens.analyzers.synthetic.writer import Writer

PID = 4242
START_US = 1_000_000.0
STEPS, GEMMS, GAP_STEP = 4, 6, 2
GEMM_US, SLOW_US, LOADER_US, EXTRA_US = 150.0, 800.0, 20_000.0, 400.0
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
MM_ARGS = {
    "Input Dims": [[4096, 4096], [4096, 4096]],
    "Input type": ["c10::BFloat16", "c10::BFloat16"],
    "Input Strides": [[4096, 1], [4096, 1]],
    "Concrete Inputs": ["", ""],
}
ADD_ARGS = {
    "Input Dims": [[1024, 1024], [1024, 1024], []],
    "Input type": ["c10::BFloat16", "c10::BFloat16", "Scalar"],
    "Input Strides": [[1024, 1], [1024, 1], []],
    "Concrete Inputs": ["", "", "1"],
}


@dataclass(frozen=True)
class Planted:
    """What the generator planted, on the trace's clock (µs)."""

    path: Path
    loader: tuple[float, float]  # the DataLoader fetch on the host
    gap: tuple[float, float]  # the GPU idle around it: last kernel's end to the next start
    slow: list[tuple[float, float]]  # each instance of the slow kernel
    span: tuple[float, float]  # first to last timestamp of the trace's events


def write_findings_trace(
    path: Path,
    *,
    slow_op: str = "aten::add",
    slow_kernel: str = ADD_BF16,
    extra_op: str = "",
    loader: str = LOADER,
) -> Planted:
    """The trace (see the module docstring) at `path`; `extra_op`: a name for one more
    operator and its kernel in each iteration (e.g. a hostile one); `loader`: the name of
    the DataLoader's annotation."""
    w = Writer(device=H100, host_pid=PID, main_tid=PID)
    t, slow, fetch, gap = START_US, [], (0.0, 0.0), (0.0, 0.0)
    for k in range(STEPS):
        begin = t
        if k == GAP_STEP:
            drained = w.drained()
            fetch = (t, t + LOADER_US)
            w.annotation(loader, *fetch)
            loader_frames(w, t + 1.0, t + LOADER_US - 1.0, workers=False)
            t += LOADER_US + 2.0
        first = None
        for i in range(GEMMS):
            got = w.launching_op("aten::mm", NV_GEMM, t + 20.0 * i, GEMM_US, op_args=MM_ARGS)
            first = first or got
        if k == GAP_STEP:
            gap = (drained, first.start)
        got = w.launching_op(slow_op, slow_kernel, t + 20.0 * GEMMS, SLOW_US, op_args=ADD_ARGS)
        slow.append((got.start, got.end))
        if extra_op:
            w.launching_op(extra_op, extra_op, t + 20.0 * GEMMS + 20.0, EXTRA_US)
        end = w.sync(t + 20.0 * GEMMS + 40.0) + 2.0
        w.step(k + 1, begin, end)
        t = end + 3.0
    w.write(path, "findings_trace")
    timed = [e for e in w.events if "ts" in e]
    span = (
        min(e["ts"] for e in timed),
        max(e["ts"] + e.get("dur", 0.0) for e in timed),
    )
    return Planted(path, fetch, gap, slow, span)
