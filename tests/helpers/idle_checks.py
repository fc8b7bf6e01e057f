"""What every idle split must satisfy, whatever the trace."""

from __future__ import annotations

import pytest

from rooflens.analyzers.trace.idle_causes import CAUSES


def assert_parts_sum_to_timeline_idle(model, result) -> None:
    idle_ms = model.gpu_timeline().pooled.idle_time / 1e3
    assert result.idle_ms == pytest.approx(idle_ms, rel=1e-9, abs=1e-9)
    assert sum(p.idle_ms for p in result.parts) == pytest.approx(idle_ms, rel=1e-9, abs=1e-9)
    assert all(p.idle_ms >= 0 for p in result.parts)
    assert [p.cause for p in result.parts] == list(CAUSES)
