"""A trace that captures a graph and replays it is its own capture trace.

See docs/trace.md#graph-capture-merge.

torch.compile's CUDA-graph trees (`mode="reduce-overhead"`, xDiT's compiled transformer)
record a graph the first time it runs and replay it at once, so a profile of that step holds
both halves of the graph-capture merge: between `StreamBeginCapture` and `StreamEndCapture`,
the launches under the operators that made them (`aten::mm`/`aten::addmm` with Input Dims,
inductor's `triton_*` ops), none of which starts GPU work; and, after it, a graph launch whose
replayed kernels have no operator above them but the graph launch. Handing the trace to the
graft (graft.py) as its own capture gives those kernels their operators; the graft's pairing
by kernel name decides, as for any capture trace, whether a window and a replay belong
together.
"""

from __future__ import annotations

import numpy as np

from .capture import CaptureTrace, capture_windows
from .columns import name_matches
from .load import Trace
from .schema import GRAPH_LAUNCH_NAMES, LAUNCH_CATEGORIES

SOURCE = "this trace (graphs captured and replayed in one profile)"


def own_captures(trace: Trace, parent: np.ndarray) -> tuple[CaptureTrace, ...]:
    """The trace as its own capture trace, if it has a capture window and a graph launch.

    Batch size is left unknown (None): the replays are of this very run, so no capture size
    has to be chosen. Mode follows the number of windows, as for a capture trace without
    `execution_details.json`: one window FULL, several PIECEWISE.
    """
    events = trace.events
    launches = events["cat"].isin(LAUNCH_CATEGORIES).to_numpy()
    if not (launches & name_matches(events["name"], lambda n: n in GRAPH_LAUNCH_NAMES)).any():
        return ()
    windows = capture_windows(events)
    if not windows:
        return ()
    return (
        CaptureTrace(
            file=trace.path.name,
            batch_size=None,
            mode="FULL" if len(windows) == 1 else "PIECEWISE",
            source=SOURCE,
            events=events,
            parent=parent,
            windows=windows,
        ),
    )
