"""Model identification on a real trace (Qwen1.5-0.5B-Chat on MI300X)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.findings.composing.model_info import model_identification, op_rows
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.trace.open_trace import open_trace

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared


def test_qwen_run_is_identified_from_modules_and_shapes(shared: Path) -> None:
    trace = shared / "traces/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    report = build_report(open_trace(trace), get_platform("MI300X"))
    rows = op_rows(report.sheets["unified_perf_summary"])
    assert rows is not None
    info = model_identification(rows)
    assert info.model == "Qwen2"
    # hidden 1024, 24 decoder layers, vocabulary 151,936: 12·24·1024² + 151936·1024 ≈ 0.46B
    assert (info.hidden_size, info.num_layers, info.vocab_size) == (1024, 24, 151936)
    assert info.precision == "bf16"
    assert info.scale == "~0.5B"
    assert info.confidence == "high"
