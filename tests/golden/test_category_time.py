"""On every shared trace the compute categories add up to the timeline's computation time
(within 2 %) and no category holds more than 100 % of it (docs/analysis.md#category-time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.findings.validation.run_checks import validate_run
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.prepare.category_data import prepare
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from rooflens.cli.main import main
from tests.helpers.golden import shared_traces, trace_id, when_shared

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

TOLERANCE_PCT = 2.0
# the platform changes no time figure; one catalogued GPU is enough for the preparation
PLATFORM = "MI300X"
# the MI210 GPU-only trace included: its categories come from kernel names
TRACES = [p for p in shared_traces() if "capture_traces" not in p.parts]
VALIDATED = ("b200/eager_trace.json.gz", "mi210/gpu_only_trace/gpu_only_trace.json.gz")


@pytest.mark.parametrize("path", when_shared(TRACES), ids=trace_id)
def test_categories_add_up_to_the_computation_time(shared: Path, path: Path, tmp_path) -> None:
    model = build_model(load_trace(path))
    platform = get_platform(PLATFORM)
    data = prepare(model, build_report(model, platform), platform, str(path), str(tmp_path))
    util = data.manifest.gpu_utilization
    computation = util.total_time_ms * util.computation_time_percent / 100
    kernel_ms = [
        c.gpu_kernel_time_ms or 0.0 for c in data.manifest.categories if c.tier == "compute_kernel"
    ]
    assert computation > 0
    assert abs(sum(kernel_ms) - computation) <= TOLERANCE_PCT / 100 * computation, (
        sum(kernel_ms),
        computation,
    )
    assert max(kernel_ms) <= computation * (1 + 1e-9)


@pytest.mark.parametrize("name", VALIDATED)
def test_validate_passes_on_the_run(shared: Path, tmp_path: Path, name: str) -> None:
    """The two traces whose category time failed the time check before
    (B200: 10.09 % above the computation time; MI210: no categories)."""
    run = tmp_path / "run"
    assert main(["analyze", str(shared / "traces" / name), "--out", str(run)]) == 0
    result = validate_run(run)
    assert result.passed, result.summary()
