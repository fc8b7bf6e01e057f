"""The `tb` fixture: a `TraceBuilder` (tests/helpers/trace_builder.py) on the test's tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.trace_builder import TraceBuilder


@pytest.fixture
def tb(tmp_path: Path) -> TraceBuilder:
    return TraceBuilder(tmp_path)
