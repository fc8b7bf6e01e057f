"""The one way every front end opens a trace: decode, link, and merge graph captures.

Capture traces are looked for beside the replay (`capture_traces/`) unless a folder is named
or captures are turned off; with none there, a trace that captured its graphs itself (CUDA-
graph trees record and replay in one step) is its own capture. An automatic lookup never
makes a trace unreadable: when its capture folder cannot be used, the model is built without
it and says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np

from .capture_folder import default_capture_folder, load_captures
from .columns import name_matches
from .errors import TraceError
from .graft import CaptureMerge
from .load import Trace, load_trace
from .model import TraceModel, build_model
from .own_capture import own_captures
from .schema import GRAPH_LAUNCH_NAMES, LAUNCH_CATEGORIES

AUTO = "auto"
CaptureChoice = Path | str | Literal["auto"] | None


def open_trace(
    path: str | Path,
    *,
    captures: CaptureChoice = AUTO,
    allow: Callable[[Path], bool] | None = None,
    on_read: Callable[[bytes], object] | None = None,
    text: Callable[[], bytes | bytearray] | None = None,
) -> TraceModel:
    """Load and link a trace; graft capture-time operators onto graph replays.

    `captures`: "auto" (the `capture_traces/` folder beside the trace, if any), a folder,
    or None (no merge). A named folder that cannot be used raises TraceError. `allow` is
    a server's path policy, applied to every capture file's real path. `on_read` sees the
    trace file's bytes as they are read (not the captures'); `text` hands over the trace's
    JSON text when the caller read it already (load.py).
    """
    trace = load_trace(path, on_read=on_read, text=text)
    replays = graph_launch_count(trace)
    if captures == AUTO:
        folder = default_capture_folder(path) if replays else None
        if folder is None:
            return _self_captured(trace) if replays else build_model(trace)
        try:
            return _merged(trace, folder, allow)
        except TraceError as exc:
            return replace(build_model(trace), capture=_failed(folder, replays, str(exc)))
    if captures is None:
        return build_model(trace)
    return _merged(trace, Path(captures), allow)


def graph_launch_count(trace: Trace) -> int:
    ev = trace.events
    runtime = ev["cat"].isin(LAUNCH_CATEGORIES).to_numpy()
    return int(
        np.count_nonzero(runtime & name_matches(ev["name"], GRAPH_LAUNCH_NAMES.__contains__))
    )


def _merged(trace: Trace, folder: Path, allow: Callable[[Path], bool] | None) -> TraceModel:
    captures = load_captures(folder, allow=allow)
    return build_model(trace, captures=captures, capture_folder=str(folder))


def _self_captured(trace: Trace) -> TraceModel:
    """A trace that captured its graphs itself (CUDA-graph trees) merges with itself."""
    model = build_model(trace)
    own = own_captures(model.trace, model.tree.parent)  # events and tree incl. pseudo ops
    if not own:
        return model
    return build_model(trace, captures=own, capture_folder=str(trace.path.parent))


def _failed(folder: Path, replays: int, why: str) -> CaptureMerge:
    return CaptureMerge(
        folder=str(folder),
        captures=(),
        graph_launches=replays,
        merged_launches=0,
        merged_gpu_events=0,
        added_events=0,
        problems=(f"capture folder not used: {why}",),
    )
