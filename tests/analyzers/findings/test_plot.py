"""Tests for the headless performance plot."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from rooflens.analyzers import layout
from rooflens.analyzers.findings.plot import (
    REMAINDER_LABEL,
    PlotResult,
    compute_segments,
    read_savings,
    render_plot,
)
from rooflens.analyzers.findings.priorities import PriorityData, Recommendation, RollupPriority
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.prepare.manifest import Manifest
from tests.helpers.pipeline_runs import entry, manifest, written

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _manifest(total: float = 100.0) -> Manifest:
    return manifest(
        {"total_time_ms": total},
        [
            entry("cpu_idle", "system", display_name="CPU/Idle"),
            entry("gemm", gpu_kernel_time_ms=30.0, display_name="GEMM"),
            entry("elementwise", gpu_kernel_time_ms=45.0),
            entry("reduce", gpu_kernel_time_ms=0.0),
            entry("sdpa_fwd", gpu_kernel_time_ms=10.0, display_name="SDPA_fwd"),
        ],
    )


def _recommendation(category: str, mid: float, low: float, high: float) -> Recommendation:
    return Recommendation(
        category=category,
        impact_score=mid,
        impact_score_low=low,
        impact_score_high=high,
        operation_count=1,
    )


RANKED = PriorityData(
    baseline_ms=100.0,
    priorities=[],
    recommendations=[
        _recommendation("gemm", 5.0, 4.0, 8.0),
        _recommendation("sdpa_fwd", 10.0, 6.0, 12.0),
        _recommendation("gemm", 1.0, 1.0, 1.0),
    ],
    findings=[],
    all_estimates=[],
    failed_categories=[],
)

PRIORITY = PriorityData(
    baseline_ms=200.0,
    priorities=[],
    recommendations=[
        _recommendation("gemm", 5.0, 4.0, 8.0),
        _recommendation("sdpa_fwd", 10.0, 6.0, 12.0),
        _recommendation("gemm", 1.0, 1.0, 1.0),
        _recommendation("other", 0.0, 0.0, 0.0),
    ],
    findings=[],
    all_estimates=[],
    failed_categories=[],
)


def test_segments_sorted_desc_with_remainder() -> None:
    total, segs = compute_segments(_manifest())
    assert total == 100.0
    assert [s.name for s in segs] == ["elementwise", "gemm", "sdpa_fwd", "non_compute"]
    assert segs[-1].time_ms == pytest.approx(15.0)
    assert segs[-1].label == REMAINDER_LABEL
    assert segs[0].label == "Elementwise"
    assert len({s.color for s in segs}) == len(segs)


def test_no_remainder_when_compute_fills_baseline() -> None:
    _, segs = compute_segments(_manifest(total=85.0))
    assert "non_compute" not in [s.name for s in segs]


def test_savings_read_from_priority_data() -> None:
    sav = read_savings(PRIORITY, 200.0, {"gemm": "GEMM"})
    by = {s.category: s for s in sav}
    assert set(by) == {"gemm", "sdpa_fwd"}
    assert by["sdpa_fwd"].mid_ms == pytest.approx(20.0)
    assert (by["sdpa_fwd"].low_ms, by["sdpa_fwd"].high_ms) == pytest.approx((12.0, 24.0))
    # gemm rows summed: mid 5+1, low 4+1, high 8+1; a zero saving is no bar
    assert by["gemm"].mid_ms == pytest.approx(12.0)
    assert (by["gemm"].low_ms, by["gemm"].high_ms) == pytest.approx((10.0, 18.0))
    assert by["gemm"].label == "GEMM"
    assert sav[0].category == "sdpa_fwd"  # sorted by mid savings desc


def test_savings_fall_back_to_priorities_key() -> None:
    row = RollupPriority(
        rank=1,
        category="gemm",
        display_name="GEMM",
        impact_score=2.0,
        impact_score_low=1.0,
        impact_score_high=3.0,
        source="findings_rollup",
    )
    pri = RANKED.model_copy(update={"recommendations": [], "priorities": [row]})
    (s,) = read_savings(pri, 50.0, {})
    assert (s.low_ms, s.mid_ms, s.high_ms) == pytest.approx((0.5, 1.0, 1.5))
    assert read_savings(None, 50.0, {}) == []


@pytest.mark.parametrize("with_priority", [True, False])
def test_render_gives_a_valid_png_the_folder_writes(tmp_path: Path, with_priority: bool) -> None:
    res = render_plot(
        _manifest(), RANKED if with_priority else None, "Model on MI300X — Performance Breakdown"
    )
    assert res.drawn and res.reason is None
    assert written(tmp_path) == set()  # rendering writes nothing
    data = res.png_bytes
    assert data is not None and data[:8] == PNG_MAGIC
    assert len(data) > 10_000
    img = Image.open(io.BytesIO(data))
    assert img.format == "PNG"
    assert 1100 < img.size[0] < 1700  # 12 in × 120 dpi, trimmed to what is drawn
    assert img.size[1] > 600
    # not blank: many distinct colours (the bars, the palette, the text)
    assert len(img.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 50
    assert res.categories_drawn == ["elementwise", "gemm", "sdpa_fwd", "non_compute"]
    RunFolder(tmp_path).write_plot(res)
    assert written(tmp_path) == {layout.PLOT, layout.PLOT_BASE64}
    assert (tmp_path / "perf_improvement.png").read_bytes() == data
    b64 = (tmp_path / "perf_improvement_base64.txt").read_text()
    assert base64.b64decode(b64) == data


def _edges_blank(img: Image.Image, band: int = 6) -> bool:
    """No ink within `band` pixels of any edge: nothing was cut off."""
    grey = img.convert("L")
    width, height = grey.size
    boxes = [(0, 0, band, height), (width - band, 0, width, height)]
    boxes += [(0, 0, width, band), (0, height - band, width, height)]
    return all(grey.crop(box).getextrema()[0] > 240 for box in boxes)


def test_a_long_title_and_labels_are_never_cut_off() -> None:
    """The title wraps, and the image grows to hold every label and range text."""
    title = "A very long model name " * 8 + "on MI300X — Performance Breakdown"
    res = render_plot(_manifest(), RANKED, title)
    short = render_plot(_manifest(), RANKED, "Short")
    assert res.png_bytes is not None and short.png_bytes is not None
    img = Image.open(io.BytesIO(res.png_bytes))
    short_img = Image.open(io.BytesIO(short.png_bytes))
    assert _edges_blank(img) and _edges_blank(short_img)
    assert abs(img.size[0] - short_img.size[0]) < 150  # wrapped, not widened past the figure


def test_an_undrawn_plot_writes_nothing(tmp_path: Path) -> None:
    RunFolder(tmp_path).write_plot(PlotResult(None, reason="no segments"))
    assert written(tmp_path) == set()


def test_no_plot_when_baseline_not_positive() -> None:
    res = render_plot(_manifest(total=0.0), RANKED, "t")
    assert not res.drawn and res.png_bytes is None and "baseline" in (res.reason or "")


def test_no_plot_without_segments() -> None:
    m = manifest(
        {"total_time_ms": 10.0},
        [entry("gemm", gpu_kernel_time_ms=0.0), entry("cpu_idle", "system")],
    )
    res = render_plot(m, None, "t")
    assert not res.drawn and "segments" in (res.reason or "")
    assert res.categories_drawn == []


def test_single_category_filling_baseline() -> None:
    m = manifest({"total_time_ms": 10.0}, [entry("gemm", gpu_kernel_time_ms=10.0)])
    assert render_plot(m, None, "t").categories_drawn == ["gemm"]
