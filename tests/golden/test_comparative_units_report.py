"""`rooflens compare` on the six synthetic pairs: each report validates, its What changed
headline and its top priority name the difference the case was built for."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.findings.validation.analysis_checks import validate_report
from rooflens.cli.main import main
from tests.helpers.golden import COMPARATIVE_UNIT_CASES

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

# case -> (start of the What changed headline, the P1 line of the Top fixes or None)
EXPECTED = {
    "test01_moe_fused_vs_unfused": (
        "`moe_layer` is faster in trace 2: 1,160.0 → 800.0 µs",
        # replayed (docs/what-if.md): the four kernels (120, 480, 480, 80 µs) at what the
        # 0.270-0.360 ms gap leaves (f = 1 - gap / 1,160 µs) start at 130 (the first), 330 (the
        # second, launched at 317), then 10 µs behind each other: done at 350 + 1,040 f
        # instead of 1,390, so 0.242-0.323 ms saved
        "P1: Fuse `moe_layer` (4 kernels) — could save 0.242–0.323 ms",
    ),
    "test02_attention_both_unfused": (
        "`aten::bmm` is faster in trace 2: 180.0 → 80.0 µs",
        "P1: `GEMM`: `aten::bmm` slower than trace 2 (memory-bound, cuBLAS)",  # its kernel's vendor
    ),
    "test03_attention_fused_vs_unfused": (  # trace 1 is the faster: nothing to recover
        "`attention` is slower in trace 2: 350.0 → 780.0 µs",
        None,
    ),
    "test04_gemm_mm_vs_linear": (
        "`aten::mm | aten::addmm` is faster in trace 2: 730.0 → 480.0 µs",
        "P1: `GEMM`: `aten::mm` slower than trace 2 (compute-bound, Tensile)",
    ),
    "test05_gemm_identical_runtime_roofline": (
        "No shared operator's time changed by more than 5% (and 1 µs).",
        None,
    ),
    "test06_conv_gap_exceeds_roofline": (
        "`aten::convolution` is faster in trace 2: 2,000.0 → 40.0 µs",
        "P1: `CONV_fwd`: `aten::convolution` slower than trace 2 (compute-bound, MIOpen)",
    ),
}


def test_every_case_has_an_expectation() -> None:
    assert set(EXPECTED) == set(COMPARATIVE_UNIT_CASES)


@pytest.mark.parametrize("case", COMPARATIVE_UNIT_CASES)
def test_report_names_the_planted_difference(
    case: str, shared: Path, tmp_path: Path, capsys
) -> None:
    folder = shared / "traces" / "comparative_units" / case
    out = tmp_path / case
    argv = ["compare", str(folder / "trace1.json"), str(folder / "trace2.json"),
            "--platform", "MI300X", "--platform2", "H100", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert validate_report(out) == []
    text = (out / "analysis.md").read_text(encoding="utf-8")
    headline, top = EXPECTED[case]
    assert text.startswith("# Unidentified model - Comparative Analysis: `MI300X` vs `H100_SXM`")
    assert f"## What changed\n\n{headline}" in text
    assert f"- **Largest difference**: {headline}" in text  # in the Executive Summary too
    fixes = [ln.strip() for ln in text.splitlines() if ln.startswith("  - P")]
    if top is None:
        assert not any("slower than trace 2" in ln or "Fuse" in ln for ln in fixes)
        if case.startswith("test05"):  # nothing at all to rank: the summary says so
            assert "  none: no finding has an estimated saving" in printed
    else:
        assert fixes and fixes[0].startswith(f"- {top}")
    if case.startswith("test03"):  # trace 2's top category is one trace 1 lacks: its name
        row = "| `SDPA_fwd` (100.0% of compute time) | `GEMM` (66.7% of compute time) |"
        assert row in text


@pytest.mark.parametrize(
    ("model", "headline"),
    [
        ("gaunernst_bert-small-uncased__1016001",
         "`aten::_flash_attention_forward` is faster in trace 2: 113.7 → 37.4 µs"),
        ("Qwen_Qwen1.5-0.5B-Chat__1016005",
         "`aten::mm` is faster in trace 2: 8,663.6 → 6,668.7 µs"),
    ],
)  # fmt: skip
def test_model_pair_report_validates(model: str, headline: str, shared: Path, tmp_path) -> None:
    """Two model pairs end to end (bert: the attention backend; Qwen: a measured fusion that
    shares its gap with the SDPA finding, counted once)."""
    out = tmp_path / model
    argv = ["compare", str(shared / "traces" / "mi300" / f"{model}.json.gz"),
            str(shared / "traces" / "h100" / f"{model}.json.gz"),
            "--platform", "MI300X", "--platform2", "H100", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    assert validate_report(out) == []
    text = (out / "analysis.md").read_text(encoding="utf-8")
    assert f"- **Largest difference**: {headline}" in text
    assert ("counted there" in text) == model.startswith("Qwen")
