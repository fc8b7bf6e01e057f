"""The GPU-bound fp32 run without shapes (SITUATIONS["gpu_bound_fp32"], synthetic/busy.py):
98.4 % busy with its launch queue full, every kernel fp32 on CUDA cores and no shapes, so no
roofline. Planted answer: compute first, and the compute item is precision, read from the
kernel names. P1 is "fp32 SIMT kernels take 76.6 % of compute" naming the planted call site
`scudnn_128x64_relu_interior_nn_v1` with its share, priced at 50/67/75 % of the SIMT kernels'
time; the 1.6 % idle (a GPU-side wait) is not P1; the card says fp16 autocast (a V100: no bf16
or TF32 tensor cores) and channels_last.

Hand-derived: each cycle runs the convolution's scudnn kernel 700 µs and the GEMM's
volta_sgemm 640 µs of 1,750 µs of kernel time, so they hold 1,340 / 1,750 = 76.57 % of compute,
scudnn 40.0 % and volta_sgemm 36.57 %.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from rooflens.analyzers.findings.ranking.precision_item import FRACTIONS, KEY
from rooflens.analyzers.markdown_text import md_code
from rooflens.analyzers.synthetic.busy import FP32_CYCLE, SCUDNN, SGEMM
from rooflens.analyzers.synthetic.situations import SITUATIONS
from tests.helpers.truth import assert_truthful, ranked

NAME = "gpu_bound_fp32"


def _us(kernel: str) -> float:
    return sum(us for _, kernels in FP32_CYCLE for name, us in kernels if name == kernel)


CYCLE_US = sum(us for _, kernels in FP32_CYCLE for _, us in kernels)
SHARE = (_us(SCUDNN) + _us(SGEMM)) / CYCLE_US * 100  # 76.57 %
SCUDNN_SHARE = _us(SCUDNN) / CYCLE_US * 100  # 40.0 %


@cache
def _run(folder: Path):
    situation = SITUATIONS[NAME]
    trace = situation.write(folder / f"{NAME}.json.gz")
    return ranked(trace, "V100", until="reported"), situation.planted


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("gpu_bound"))


def test_p1_is_the_precision_item_naming_the_planted_call_site(run) -> None:
    steps, planted = run
    top = steps.priorities().items[0]
    assert (top.p_number, top.kind, top.category) == (1, "compute", KEY), top.title
    assert planted.p1 == "compute" and planted.action == "precision"
    assert top.title.startswith(f"fp32 SIMT kernels take {SHARE:.1f} % of compute: ")
    assert f"{md_code(planted.call_site, 80)} {SCUDNN_SHARE:.1f} %" in top.title
    # a V100 (`volta_sgemm`): fp16 autocast, no bf16 or TF32 tensor cores before Ampere
    assert "AMP (fp16: no bf16 or TF32 tensor cores before Ampere)" in top.title
    assert "channels_last" in top.title
    # priced on the SIMT kernels' time, 2-4x faster on tensor cores, capped by that time
    gpu = steps.category_data().manifest.gpu_utilization
    simt_ms = gpu.total_time_ms * gpu.computation_time_percent / 100 * SHARE / 100
    assert top.saving.cap_ms == pytest.approx(simt_ms, rel=2e-3)
    assert top.saving.range_ms == pytest.approx(
        tuple(top.saving.cap_ms * f for f in FRACTIONS), abs=1e-6
    )
    assert "kernel names, not a roofline" in top.saving.basis
    assert_truthful(steps)


def test_the_idle_is_not_p1(run) -> None:
    steps, _ = run
    items = steps.priorities().items
    assert items[0].category != "cpu_idle"
    idle = [i for i in items if i.category == "cpu_idle"]
    assert all(i.p_number > 1 for i in idle)
    top = items[0].saving.mid_ms
    assert all(i.saving is None or i.saving.mid_ms < top for i in idle)


def test_the_report_says_it(run) -> None:
    steps, _ = run
    report = steps.results.report_text or ""
    assert f"fp32 SIMT kernels take {SHARE:.1f} % of compute" in report
    assert "torch.autocast(device_type='cuda', dtype=torch.float16)" in report
    assert "GradScaler" in report and "torch.channels_last" in report
    assert "not a roofline" in report
