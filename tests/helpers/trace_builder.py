"""Tiny builders for hand-written Kineto traces.

Tests get them through the `tb` fixture of their folder's conftest (a builder bound to the
test's tmp_path), or build one on a folder of their own.

Conventions of the hand-written traces: host events live on pid 1 / tid 1 unless said
otherwise; GPU events on pid 0 (the device) and tid 7 (the stream).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from rooflens.analyzers.trace.load import Trace, load_trace
from rooflens.analyzers.trace.model import TraceModel, build_model

Event = dict[str, Any]


def _x(cat: str, name: str, ts: float, dur: float, pid: Any, tid: Any, args: dict) -> Event:
    event: Event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts}
    event["dur"] = dur
    if args:
        event["args"] = args
    return event


class TraceBuilder:
    """Event builders plus `write` (dict -> .json/.json.gz) and `load`/`model` shortcuts."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    # --- events -------------------------------------------------------------------------
    @staticmethod
    def cpu_op(
        name: str, ts: float, dur: float, pid: Any = 1, tid: Any = 1, args: dict | None = None
    ) -> Event:
        return _x("cpu_op", name, ts, dur, pid, tid, dict(args or {}))

    @staticmethod
    def python_function(name: str, ts: float, dur: float, pid: Any = 1, tid: Any = 1) -> Event:
        return _x("python_function", name, ts, dur, pid, tid, {})

    @staticmethod
    def runtime(
        name: str,
        ts: float,
        dur: float,
        correlation: int | None = None,
        pid: Any = 1,
        tid: Any = 1,
        cat: str = "cuda_runtime",
        args: dict | None = None,
    ) -> Event:
        full = dict(args or {})
        if correlation is not None:
            full["correlation"] = correlation
        return _x(cat, name, ts, dur, pid, tid, full)

    @staticmethod
    def kernel(
        name: str,
        ts: float,
        dur: float,
        correlation: int | None = None,
        pid: Any = 0,
        tid: Any = 7,
        cat: str = "kernel",
        args: dict | None = None,
    ) -> Event:
        full: dict[str, Any] = {"device": pid, "stream": tid}
        if correlation is not None:
            full["correlation"] = correlation
        full.update(args or {})
        return _x(cat, name, ts, dur, pid, tid, full)

    @staticmethod
    def flow(ph: str, id: int, pid: Any, tid: Any, ts: float) -> Event:
        event: Event = {"ph": ph, "id": id, "pid": pid, "tid": tid, "ts": ts}
        event.update(cat="ac2g", name="ac2g")
        if ph == "f":
            event["bp"] = "e"
        return event

    @classmethod
    def launch(
        cls,
        correlation: int,
        ts: float,
        kernel_ts: float,
        kernel_dur: float,
        kernel_name: str = "gemm_kernel",
        stream: int = 7,
        name: str = "cudaLaunchKernel",
        pid: Any = 1,
        tid: Any = 1,
    ) -> list[Event]:
        """A runtime launch (dur 4), its ac2g s/f flow pair and the kernel it started."""
        return [
            cls.runtime(name, ts, 4, correlation, pid=pid, tid=tid),
            cls.flow("s", correlation, pid, tid, ts),
            cls.flow("f", correlation, 0, stream, kernel_ts),
            cls.kernel(kernel_name, kernel_ts, kernel_dur, correlation, tid=stream),
        ]

    # --- files ----------------------------------------------------------------------------
    def write(self, events: list[Event] | Any, name: str = "trace.json", **top: Any) -> Path:
        """Write `{"traceEvents": events, **top}` (or `events` itself if it is not a list)."""
        document = {"traceEvents": events, **top} if isinstance(events, list) else events
        return self.write_json(document, name)

    def write_json(self, document: Any, name: str) -> Path:
        path = self.folder / name
        data = json.dumps(document).encode("utf-8")
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        return path

    def load(self, events: list[Event], name: str = "trace.json", **top: Any) -> Trace:
        return load_trace(self.write(events, name, **top))

    def model(self, events: list[Event], **kwargs: Any) -> TraceModel:
        return build_model(self.load(events), **kwargs)


class ReportTraceBuilder(TraceBuilder):
    """`TraceBuilder` with thread names, graph replays and a uid lookup by name."""

    @staticmethod
    def thread_name(name: str, pid: Any = 1, tid: Any = 1) -> Event:
        return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}

    @classmethod
    def graph_launch(
        cls, correlation: int, ts: float, kernels: list[tuple[str, float, float]], tid: Any = 1
    ) -> list[Event]:
        """A `cudaGraphLaunch` (dur 4) and its (name, ts, dur) kernels, linked by id alone."""
        launch = cls.runtime("cudaGraphLaunch", ts, 4, correlation, tid=tid)
        return [launch, *(cls.kernel(n, t, d, correlation) for n, t, d in kernels)]

    @staticmethod
    def uid(model: TraceModel, name: str) -> int:
        """The uid of the one event called `name` (fails when there is not exactly one)."""
        (found,) = np.flatnonzero(model.events["name"].astype(str).to_numpy() == name)
        return int(found)
