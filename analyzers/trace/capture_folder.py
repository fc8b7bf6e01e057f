"""A folder of graph-capture traces read into `CaptureTrace`s (docs/trace.md#graph-capture-merge).

Each capture trace has a batch size and a mode (one FULL graph per forward, or PIECEWISE,
one graph per piece between attention layers). They come from `execution_details.json` in the
folder when it is there, else from a `capture_<batch>_<MODE>` annotation, else from the trace:
FULL when it holds one capture window, the commonest leading dimension of the operators'
inputs as batch size. Each capture trace is built into its own trace model (with its pseudo
ops, so they graft), which is why this module comes after `model.py`.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import msgspec
import pandas as pd

from .capture import (
    DEFAULT_FOLDER,
    DETAILS_FILE,
    CaptureTrace,
    capture_windows,
)
from .errors import TraceError
from .input_file import InputFileError, read_side_file
from .load import load_trace
from .model import build_model
from .read import SUFFIXES

CAPTURE_ANNOTATION = re.compile(r"^capture_(\d+)_([A-Za-z]+)$")


class CaptureEntry(msgspec.Struct, forbid_unknown_fields=False):
    """One line of `execution_details.json`."""

    file: str
    batch_size: int
    mode: str


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
