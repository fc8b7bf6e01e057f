"""Truth corpus: a benchmark that profiles its model load (`setup_weight_upload`,
SETUP_UPLOAD, H100).

Before the first `ProfilerStep#` 48 weights of 40 MiB go to the device from pageable memory,
3.5 ms each: 168 ms, 73.7 % of the GPU's busy time, all in set-up. Then five steps of 30 bf16
GEMMs (4096³, 400 µs each) back to back: 60 ms. The planted answer: P1 is the GEMMs (compute,
`aten::mm`, priced on their roofline); the upload is named by its source (`aten::to` under
`bench.py(22): load_model`), said to be set-up only and priced at nothing, and it is no "top
fix"; the set-up's idle is reported apart, not as warm-up.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from rooflens.analyzers.categories.copies import ONE_TIME
from rooflens.analyzers.markdown_text import md_code
from rooflens.analyzers.synthetic.copies import SETUP_UPLOAD as PLAN
from rooflens.analyzers.synthetic.situations import SITUATIONS
from tests.helpers.truth import assert_truthful, ranked

NAME = "setup_weight_upload"


@cache
def _run(folder: Path):
    trace = SITUATIONS[NAME].write(folder / f"{NAME}.json.gz")
    steps = ranked(trace, "H100_SXM", until="reported")
    assert_truthful(steps)
    return steps


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("upload"))


def test_the_plan_is_what_the_docstring_says() -> None:
    assert (PLAN.upload_ms, PLAN.gemm_ms) == (168.0, 60.0)
    assert PLAN.upload_ms / (PLAN.upload_ms + PLAN.gemm_ms) == pytest.approx(0.737, abs=5e-4)


def test_p1_is_the_steady_gemms(steps) -> None:
    planted = SITUATIONS[NAME].planted
    top = steps.priorities().items[0]
    assert planted.p1 == "compute"
    assert (top.p_number, top.kind, top.category) == (1, "compute", "gemm"), top.title
    assert md_code(planted.call_site, 80) in top.title
    assert top.saving is not None and top.saving.cap_ms == pytest.approx(PLAN.gemm_ms)
    assert top.saving.mid_ms > 0


def test_the_upload_is_set_up_named_and_priced_at_nothing(steps) -> None:
    copies = steps.metrics_of("multi_kernel").copies
    (upload,) = copies.groups
    assert (upload.route, upload.host_memory, upload.count) == ("H2D", "pageable", PLAN.tensors)
    assert upload.time_ms == pytest.approx(PLAN.upload_ms)
    assert upload.timing.by_phase_us == {"setup": pytest.approx(PLAN.upload_ms * 1e3)}
    assert upload.timing.steady_count == 0 and upload.saving_ms == (0.0, 0.0, 0.0)
    assert upload.fixes[0] == ONE_TIME
    (source,) = upload.sources
    assert (source.call_site, source.frame) == ("aten::to", "bench.py(22): load_model")
    item = next(i for i in steps.priorities().items if i.category == "multi_kernel")
    assert item.p_number > 1 and item.saving is not None and item.saving.high_ms == 0.0
    assert "in set-up only: not a per-step cost" in item.title


def test_the_summary_says_set_up_and_offers_no_empty_fix(steps) -> None:
    report = steps.results.report_text or ""
    summary = report.split("## Priorities")[0]
    fixes = summary.split("- **Top fixes**:")[1]
    assert "P1:" in fixes and "P2:" not in fixes  # the upload saves nothing: no fix
    line = next(x for x in summary.splitlines() if x.startswith("- **Before the steady state**"))
    assert "in set-up, before the first iteration" in line and "warm-up" not in line
    iterations = steps.metrics_of("cpu_idle").host_side.iterations
    assert iterations.count == PLAN.steps
    assert iterations.median_ms == pytest.approx(PLAN.step_us / 1e3, abs=1e-3)
