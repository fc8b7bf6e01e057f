"""Tests for the headless performance plot."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from rooflens.analyzers import layout
from rooflens.analyzers.findings.composing.comparative import ReportComparison, category_times
from rooflens.analyzers.findings.composing.model_info import ModelIdentification
from rooflens.analyzers.findings.composing.plot import (
    LABEL_WIDTH,
    REMAINDER_LABEL,
    PlotResult,
    Savings,
    bar_label,
    compute_segments,
    draw_png,
    plot_title,
    read_savings,
    render_plot,
)
from rooflens.analyzers.findings.composing.plot_process import PlotProcess
from rooflens.analyzers.findings.ranking.impact_scale import Candidate, Saving, rank_items, totals
from rooflens.analyzers.findings.ranking.priorities import PriorityData
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.prepare.categories import GpuUtilization
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


def _candidate(category: str, kind: str, mid: float, method: str = "quantified") -> Candidate:
    if method == "unquantified":
        return Candidate(category=category, kind=kind, title=f"{category} {kind} item",
                         estimate_method=method, saving=None, source_rank=1,
                         unquantified_reason="input shapes not recorded")  # fmt: skip
    pool = "idle" if kind == "system" else "kernels"
    saving = Saving(low_ms=mid / 2, mid_ms=mid, high_ms=mid * 1.5, cap_ms=50.0, pool=pool,
                    basis="b")  # fmt: skip
    rank = None if kind == "system" else 1
    return Candidate(category=category, kind=kind, title=f"{category} {kind} item",
                     estimate_method=method, saving=saving, source_rank=rank)  # fmt: skip


# 100 ms window: 85 ms of kernels, 15 ms idle. The idle item (6 ms at the mid) ranks first,
# then sdpa (5 ms), fusion (3 ms), GEMM (2 ms); the unquantified elementwise one comes last
# and gets no bar.
CANDIDATES = [
    _candidate("gemm", "compute", 2.0),
    _candidate("sdpa_fwd", "compute", 5.0),
    _candidate("kernel_fusion", "kernel_fusion", 3.0),
    _candidate("cpu_idle", "system", 6.0),
    _candidate("elementwise", "compute", 4.0, method="unquantified"),
]
UTIL = GpuUtilization(total_time_ms=100.0, computation_time_percent=85.0, idle_time_percent=15.0)
ITEMS = rank_items(CANDIDATES, 100.0)
RANKED = PriorityData(
    baseline_ms=100.0,
    priorities=[],
    recommendations=[],
    findings=[],
    all_estimates=[],
    failed_categories=[],
    items=ITEMS,
    saving_totals=totals(ITEMS, UTIL),
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


def test_one_bar_per_item_in_p_order() -> None:
    bars = read_savings(RANKED)
    assert [b.label for b in bars] == [
        "P1 cpu_idle system item", "P2 sdpa_fwd compute item",
        "P3 kernel_fusion kernel_fusion item", "P4 gemm compute item",
    ]  # fmt: skip
    assert [b.kind for b in bars] == ["system", "compute", "kernel_fusion", "compute"]
    first = bars[0]
    assert (first.low_ms, first.mid_ms, first.high_ms, first.mid_pct) == (3.0, 6.0, 9.0, 6.0)
    assert ITEMS[-1].p_number == 5 and ITEMS[-1].saving is None  # ranked, but no bar
    assert read_savings(None) == []


def test_long_titles_wrap_above_their_bar_and_only_overlong_ones_are_shortened() -> None:
    long = _candidate("gemm", "compute", 2.0).model_copy(update={"title": "GEMM " * 30})
    (bar,) = read_savings(RANKED.model_copy(update={"priorities": rank_items([long], 100.0)}))
    assert bar.label.startswith("P1 GEMM GEMM")  # the whole title: the drawing wraps it
    text, cut = bar_label(bar.label)
    assert not cut and text.replace("\n", " ") == bar.label
    assert len(text.splitlines()) == 2 and all(len(x) <= LABEL_WIDTH for x in text.splitlines())
    text, cut = bar_label("P2 " + "word " * 80)
    assert cut and len(text.splitlines()) == 2 and text.endswith("…")


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


def test_default_title_never_shows_the_unknown_sentinel() -> None:
    mi300x = get_platform("MI300X")
    assert plot_title(ModelIdentification(), mi300x) == (
        "Unidentified model on MI300X - Performance Breakdown"
    )
    named = ModelIdentification(model="Llama")
    assert plot_title(named, None) == "Llama on an unknown platform - Performance Breakdown"


def _compared() -> ReportComparison:
    """Trace 2 of `_manifest()`: 80 ms window, GEMM 20 ms, elementwise 45 ms, no SDPA, and a
    norm category only trace 2 has (5 ms)."""
    util2 = GpuUtilization(total_time_ms=80.0, computation_time_percent=87.5)
    times = category_times([
        {"op category": "GEMM", "total_direct_kernel_time_ms": 20.0},
        {"op category": "elementwise", "total_direct_kernel_time_ms": 45.0},
        {"op category": "NORM_fwd", "total_direct_kernel_time_ms": 5.0},
    ])  # fmt: skip
    return ReportComparison("H100_SXM", util2, times)


def test_segments_carry_trace_2_time_per_category() -> None:
    total, segs = compute_segments(_manifest(), _compared())
    assert total == 100.0
    got = [(s.name, s.time_ms, s.time2_ms) for s in segs]
    assert got == [
        ("elementwise", 45.0, 45.0),
        ("gemm", 30.0, 20.0),  # matched case-insensitively (GEMM)
        ("sdpa_fwd", 10.0, 0.0),  # trace 2 has none
        ("norm_fwd", 0.0, 5.0),  # trace 2 only
        ("non_compute", 15.0, 10.0),  # 100 - 85, 80 - 70
    ]
    assert all(s.time2_ms is None for s in compute_segments(_manifest())[1])
    assert segs[3].label == "NORM_fwd"  # its display name, as trace 1's categories have


@pytest.mark.slow
def test_a_comparison_draws_both_traces_and_the_helper_can_draw_it() -> None:
    res = render_plot(_manifest(), RANKED, "Model: MI300X vs H100", comparison=_compared())
    assert res.drawn and res.categories_drawn[-2:] == ["norm_fwd", "non_compute"]
    alone = render_plot(_manifest(), RANKED, "Model: MI300X vs H100")
    taller = Image.open(io.BytesIO(res.png_bytes)).size[1]
    assert taller > Image.open(io.BytesIO(alone.png_bytes)).size[1]  # the second bar
    total, segs = compute_segments(_manifest(), _compared())
    savings = Savings([], 0, 0.0, 0.0)
    with PlotProcess() as helper:  # comparative segments go through the helper's pickle
        assert helper.draw("pair", total, segs, savings) == draw_png("pair", total, segs, savings)
