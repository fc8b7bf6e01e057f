"""The `tb` trace builder of tests/analyzers/trace, plus the few events report tests need.

Conventions (as there): host events on pid 1 / tid 1, GPU events on pid 0 / stream tid 7.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rooflens.analyzers.trace.model import TraceModel
from tests.analyzers.trace.conftest import Event, TraceBuilder


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


@pytest.fixture
def tb(tmp_path: Path) -> ReportTraceBuilder:
    return ReportTraceBuilder(tmp_path)
