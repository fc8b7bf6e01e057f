"""The `tb` fixture of the report tests: a `ReportTraceBuilder` (tests/helpers/trace_builder.py,
with thread names, graph replays and a uid lookup) on the test's tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.trace_builder import ReportTraceBuilder


@pytest.fixture
def tb(tmp_path: Path) -> ReportTraceBuilder:
    return ReportTraceBuilder(tmp_path)
