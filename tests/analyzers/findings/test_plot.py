"""Tests for the headless performance plot."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from PIL import Image

from rooflens.analyzers.findings.plot import (
    REMAINDER_LABEL,
    compute_segments,
    read_savings,
    render_plot,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _manifest(total: float = 100.0) -> dict:
    return {
        "gpu_utilization": {"total_time_ms": total},
        "categories": [
            {"name": "cpu_idle", "display_name": "CPU/Idle", "tier": "system"},
            {"name": "gemm", "display_name": "GEMM", "tier": "compute_kernel",
             "gpu_kernel_time_ms": 30.0},
            {"name": "elementwise", "display_name": "elementwise", "tier": "compute_kernel",
             "gpu_kernel_time_ms": 45.0},
            {"name": "reduce", "display_name": "reduce", "tier": "compute_kernel",
             "gpu_kernel_time_ms": 0.0},
            {"name": "sdpa_fwd", "display_name": "SDPA_fwd", "tier": "compute_kernel",
             "gpu_kernel_time_ms": 10.0},
        ],
    }  # fmt: skip


def _run(tmp_path: Path, manifest: dict | None, priority: dict | None = None) -> Path:
    if manifest is not None:
        (tmp_path / "category_data").mkdir()
        (tmp_path / "category_data" / "category_manifest.json").write_text(json.dumps(manifest))
    if priority is not None:
        (tmp_path / "priority_data.json").write_text(json.dumps(priority))
    return tmp_path


PRIORITY = {
    "recommendations": [
        {"category": "gemm", "impact_score": 5.0, "impact_score_low": 4.0,
         "impact_score_high": 8.0},
        {"category": "sdpa_fwd", "impact_score": 10.0, "impact_score_low": 6.0,
         "impact_score_high": 12.0},
        {"category": "gemm", "impact_score": 1.0},
        {"category": "other", "impact_score": None},
    ]
}  # fmt: skip


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
    # gemm rows summed: mid 5+1, low 4+1 (missing low falls back to mid), high 8+1
    assert by["gemm"].mid_ms == pytest.approx(12.0)
    assert (by["gemm"].low_ms, by["gemm"].high_ms) == pytest.approx((10.0, 18.0))
    assert by["gemm"].label == "GEMM"
    assert sav[0].category == "sdpa_fwd"  # sorted by mid savings desc


def test_savings_fall_back_to_priorities_key() -> None:
    pri = {"priorities": [{"category": "gemm", "impact_score": 2.0, "impact_score_low": 1.0,
                           "impact_score_high": 3.0}]}  # fmt: skip
    (s,) = read_savings(pri, 50.0, {})
    assert (s.low_ms, s.mid_ms, s.high_ms) == pytest.approx((0.5, 1.0, 1.5))
    assert read_savings(None, 50.0, {}) == []


@pytest.mark.parametrize("with_priority", [True, False])
def test_render_writes_valid_png(tmp_path: Path, with_priority: bool) -> None:
    run = _run(tmp_path, _manifest(), PRIORITY if with_priority else None)
    res = render_plot(run, "Model on MI300X — Performance Breakdown")
    assert res.drawn and res.reason is None
    assert res.path == run / "perf_improvement.png"
    data = res.path.read_bytes()
    assert data == res.png_bytes
    assert data[:8] == PNG_MAGIC
    assert len(data) > 10_000
    img = Image.open(io.BytesIO(data))
    assert img.format == "PNG"
    assert 1100 < img.size[0] < 1700  # 12 in × 120 dpi, trimmed to what is drawn
    assert img.size[1] > 600
    # not blank: many distinct colours (the bars, the palette, the text)
    assert len(img.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 50
    b64 = (run / "perf_improvement_base64.txt").read_text()
    assert base64.b64decode(b64) == data
    assert res.categories_drawn == ["elementwise", "gemm", "sdpa_fwd", "non_compute"]


def _edges_blank(img: Image.Image, band: int = 6) -> bool:
    """No ink within `band` pixels of any edge: nothing was cut off."""
    grey = img.convert("L")
    width, height = grey.size
    boxes = [(0, 0, band, height), (width - band, 0, width, height)]
    boxes += [(0, 0, width, band), (0, height - band, width, height)]
    return all(grey.crop(box).getextrema()[0] > 240 for box in boxes)


def test_a_long_title_and_labels_are_never_cut_off(tmp_path: Path) -> None:
    """The title wraps, and the image grows to hold every label and range text."""
    run = _run(tmp_path, _manifest(), PRIORITY)
    title = "A very long model name " * 8 + "on MI300X — Performance Breakdown"
    res = render_plot(run, title)
    img = Image.open(io.BytesIO(res.png_bytes))
    short = Image.open(io.BytesIO(render_plot(run, "Short").png_bytes))
    assert _edges_blank(img) and _edges_blank(short)
    assert abs(img.size[0] - short.size[0]) < 150  # wrapped, not widened past the figure


def test_no_plot_without_manifest(tmp_path: Path) -> None:
    res = render_plot(tmp_path, "t")
    assert not res.drawn and "manifest" in res.reason
    assert not (tmp_path / "perf_improvement.png").exists()


def test_no_plot_when_baseline_not_positive(tmp_path: Path) -> None:
    res = render_plot(_run(tmp_path, _manifest(total=0.0)), "t")
    assert not res.drawn and "baseline" in res.reason


def test_no_plot_without_segments(tmp_path: Path) -> None:
    manifest = {
        "gpu_utilization": {"total_time_ms": 10.0},
        "categories": [
            {"name": "gemm", "tier": "compute_kernel", "gpu_kernel_time_ms": 0.0},
            {"name": "cpu_idle", "tier": "system", "gpu_kernel_time_ms": None},
        ],
    }
    res = render_plot(_run(tmp_path, manifest), "t")
    assert not res.drawn and "segments" in res.reason
    assert not (tmp_path / "perf_improvement.png").exists()


def test_single_category_filling_baseline(tmp_path: Path) -> None:
    manifest = {
        "gpu_utilization": {"total_time_ms": 10.0},
        "categories": [{"name": "gemm", "tier": "compute_kernel", "gpu_kernel_time_ms": 10.0}],
    }
    assert render_plot(_run(tmp_path, manifest), "t").categories_drawn == ["gemm"]


def test_unreadable_manifest(tmp_path: Path) -> None:
    (tmp_path / "category_data").mkdir()
    (tmp_path / "category_data" / "category_manifest.json").write_text("{not json")
    assert not render_plot(tmp_path, "t").drawn
