"""Graph-capture traces: the shapes a CUDA/HIP-graph replay does not record.

See docs/trace.md#graph-capture-merge.

A replayed graph runs hundreds of kernels under one `cudaGraphLaunch`, with no operator or
shape above any of them. The trace of the capture step has both: every launch made between
`StreamBeginCapture` and `StreamEndCapture`, under the `cpu_op`s and Python frames that made
it. This module describes a capture trace and its capture windows; `capture_folder.py` reads a
folder of such traces and `graft.py` pairs windows with replays and copies the capture-time
operators under the replay.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import name_matches
from .schema import GRAPH_LAUNCH_NAMES, LAUNCH_CATEGORIES

DETAILS_FILE = "execution_details.json"
DEFAULT_FOLDER = "capture_traces"  # where vLLM/SGLang/xDiT helpers write them, beside the replay
BEGIN_CAPTURE = re.compile(r"^(cuda|hip)StreamBeginCapture")
END_CAPTURE = re.compile(r"^(cuda|hip)StreamEndCapture")
MEMCPY, MEMSET = "<memcpy>", "<memset>"


@dataclass(frozen=True, slots=True)
class Window:
    """One StreamBeginCapture..StreamEndCapture window: its launches in order, with keys.

    `keys` is what the launch put in the graph: the kernel name from the runtime call's
    `kernel` argument, `<memcpy>` / `<memset>` for copies and sets, or None when the runtime
    did not record the kernel's name (alignment then falls back to position).
    """

    start: float
    launches: np.ndarray  # capture uids, in launch order
    keys: tuple[str | None, ...]


@dataclass(frozen=True)
class CaptureTrace:
    """A capture-step trace with its linked tree and its capture windows."""

    file: str
    batch_size: int | None
    mode: str
    source: str  # where batch size and mode came from
    events: pd.DataFrame
    parent: np.ndarray
    windows: tuple[Window, ...]

    @property
    def single_graph(self) -> bool:
        """FULL (one graph per forward) rather than PIECEWISE."""
        return self.mode.upper() != "PIECEWISE"


def capture_windows(events: pd.DataFrame) -> tuple[Window, ...]:
    """The capture windows of one trace, each with its launches in order."""
    cat = events["cat"]
    runtime = cat.isin(LAUNCH_CATEGORIES).to_numpy()
    names = events["name"]
    begins = np.flatnonzero(runtime & name_matches(names, lambda n: bool(BEGIN_CAPTURE.match(n))))
    ends = np.flatnonzero(runtime & name_matches(names, lambda n: bool(END_CAPTURE.match(n))))
    if not len(begins):
        return ()
    ts = events["ts"].to_numpy()
    end_ts = ts + np.nan_to_num(events["dur"].to_numpy())
    thread = list(zip(events["pid"].to_numpy(), events["tid"].to_numpy(), strict=True))
    is_launch = runtime & _launch_like(names)
    launch_uids = np.flatnonzero(is_launch)
    launch_uids = launch_uids[np.argsort(ts[launch_uids], kind="stable")]
    kernel = events["launch_kernel"]
    windows = []
    for b in begins[np.argsort(ts[begins], kind="stable")]:
        later = [e for e in ends if thread[e] == thread[b] and ts[e] >= ts[b]]
        if not later:
            continue  # capture never ended inside the profiled window
        e = min(later, key=lambda u: ts[u])
        inside = launch_uids[(ts[launch_uids] >= ts[b]) & (ts[launch_uids] <= end_ts[e])]
        inside = np.array([u for u in inside if thread[u] == thread[b]], dtype=np.int64)
        keys = tuple(_launch_key(str(names.iat[u]), kernel.iat[u]) for u in inside)
        windows.append(Window(start=float(ts[b]), launches=inside, keys=keys))
    return tuple(windows)


def _launch_like(names: pd.Series) -> np.ndarray:
    """Runtime calls that put a node in the graph: kernel launches, copies, sets."""

    def test(n: str) -> bool:
        low = n.lower()
        if n in GRAPH_LAUNCH_NAMES:
            return False
        return "launchkernel" in low or "memcpy" in low or "memset" in low

    return name_matches(names, test)


def _launch_key(name: str, kernel: object) -> str | None:
    low = name.lower()
    if "memcpy" in low:
        return MEMCPY
    if "memset" in low:
        return MEMSET
    return kernel if isinstance(kernel, str) and kernel else None


def gpu_key(cat: str, name: str) -> str:
    """The replay-side counterpart of `_launch_key`."""
    if cat == "gpu_memcpy":
        return MEMCPY
    if cat == "gpu_memset":
        return MEMSET
    return name
