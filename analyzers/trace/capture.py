"""Graph-capture traces: the shapes a CUDA/HIP-graph replay does not record.

See docs/trace.md#graph-capture-merge.

A replayed graph runs hundreds of kernels under one `cudaGraphLaunch`, with no operator or
shape above any of them. The trace of the capture step has both: every launch made between
`StreamBeginCapture` and `StreamEndCapture`, under the `cpu_op`s and Python frames that made
it. This module reads a folder of such traces and describes each capture window; `graft.py`
pairs windows with replays and copies the capture-time operators under the replay.

Each capture trace has a batch size and a mode (one FULL graph per forward, or PIECEWISE,
one graph per piece between attention layers). They come from `execution_details.json` in the
folder when it is there, else from a `capture_<batch>_<MODE>` annotation, else from the trace:
FULL when it holds one capture window, the commonest leading dimension of the operators'
inputs as batch size.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np
import pandas as pd

from rooflens.analyzers.trace.columns import name_matches
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.input_file import InputFileError, read_side_file
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.read import SUFFIXES
from rooflens.analyzers.trace.schema import GRAPH_LAUNCH_NAMES, LAUNCH_CATEGORIES

DETAILS_FILE = "execution_details.json"
DEFAULT_FOLDER = "capture_traces"  # where vLLM/SGLang/xDiT helpers write them, beside the replay
BEGIN_CAPTURE = re.compile(r"^(cuda|hip)StreamBeginCapture")
END_CAPTURE = re.compile(r"^(cuda|hip)StreamEndCapture")
CAPTURE_ANNOTATION = re.compile(r"^capture_(\d+)_([A-Za-z]+)$")
MEMCPY, MEMSET = "<memcpy>", "<memset>"


class CaptureEntry(msgspec.Struct, forbid_unknown_fields=False):
    """One line of `execution_details.json`."""

    file: str
    batch_size: int
    mode: str


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


def default_capture_folder(trace_path: str | Path) -> Path | None:
    """`capture_traces/` beside the replay trace, when it holds at least one trace."""
    folder = Path(trace_path).parent / DEFAULT_FOLDER
    return folder if folder.is_dir() and _trace_files(folder) else None


def load_captures(
    folder: str | Path, *, allow: Callable[[Path], bool] | None = None
) -> tuple[CaptureTrace, ...]:
    """Every capture trace in `folder`; TraceError when the folder holds nothing usable.

    `allow` (a server's path policy) must accept the real path of the folder and of each
    file read from it, `execution_details.json` included.
    """
    from rooflens.analyzers.trace.model import build_model  # model imports this module

    folder = Path(folder)
    sidecar = (folder / DETAILS_FILE,) if os.path.lexists(folder / DETAILS_FILE) else ()
    for target in (folder, *(_trace_files(folder) if folder.is_dir() else ()), *sidecar):
        if allow is not None and not allow(Path(os.path.realpath(target))):
            raise TraceError(
                target,
                "this capture path resolves outside the allowed directories",
                "Copy the capture traces into an allowed directory.",
            )
    if not folder.is_dir():
        raise TraceError(
            folder,
            "this capture folder does not exist or is not a folder",
            "Pass the folder that holds the graph-capture traces (often 'capture_traces' "
            "beside the replay trace).",
        )
    files = _trace_files(folder)
    if not files:
        raise TraceError(
            folder,
            "this capture folder holds no .json or .json.gz trace",
            "Profile the graph-capture step and save its trace there.",
        )
    details = _read_details(folder)
    captures = []
    for path in files:
        trace = load_trace(path)
        windows = capture_windows(trace.events)
        if not windows:
            continue  # not a capture trace (no StreamBeginCapture): nothing to graft
        model = build_model(trace)
        batch, mode, source = _classify(path.name, trace.events, len(windows), details)
        captures.append(
            CaptureTrace(
                file=path.name,
                batch_size=batch,
                mode=mode,
                source=source,
                events=model.events,  # with its pseudo ops (pseudo.py), so they graft
                parent=model.tree.parent,
                windows=windows,
            )
        )
    if not captures:
        raise TraceError(
            folder,
            "no trace in this capture folder contains a StreamBeginCapture call",
            "Profile the graph-capture step itself (for vLLM: the capture_model phase).",
        )
    return tuple(captures)


def _trace_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and p.name != DETAILS_FILE and p.name.endswith(SUFFIXES)
    )


def _read_details(folder: Path) -> dict[str, CaptureEntry]:
    path = folder / DETAILS_FILE
    if not path.exists():
        return {}
    try:  # a regular file only, and a small one (a FIFO would block: input_file.py)
        text = read_side_file(path, "capture details file")
    except InputFileError as exc:
        raise TraceError(path, exc.problem, exc.hint) from None
    try:
        entries = msgspec.json.decode(text, type=list[CaptureEntry])
    except msgspec.DecodeError as exc:
        raise TraceError(
            path,
            f"not a list of {{file, batch_size, mode}} entries ({exc})",
            "Fix or delete it; the capture traces are then classified from their own events.",
        ) from None
    return {e.file: e for e in entries}


def _classify(
    file: str, events: pd.DataFrame, n_windows: int, details: dict[str, CaptureEntry]
) -> tuple[int | None, str, str]:
    """Batch size, mode, and where they came from."""
    if file in details:
        entry = details[file]
        return entry.batch_size, entry.mode.upper(), DETAILS_FILE
    names = events.loc[(events["cat"] == "user_annotation").to_numpy(), "name"].astype(str)
    for name in names.unique():
        if m := CAPTURE_ANNOTATION.match(name):
            return int(m.group(1)), m.group(2).upper(), f"annotation {name}"
    mode = "FULL" if n_windows <= 1 else "PIECEWISE"
    return _commonest_leading_dim(events), mode, "inferred from the trace"


def _commonest_leading_dim(events: pd.DataFrame) -> int | None:
    """The most frequent first dimension of the first input over all cpu_ops."""
    dims = events.loc[(events["cat"] == "cpu_op").to_numpy(), "input_dims"].dropna()
    counts: Counter[int] = Counter()
    for text, n in dims.astype(str).value_counts().items():
        try:
            first = msgspec.json.decode(text)[0]
        except (msgspec.DecodeError, IndexError, TypeError):
            continue
        if isinstance(first, list) and first and isinstance(first[0], int):
            counts[first[0]] += int(n)
    return counts.most_common(1)[0][0] if counts else None


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
