"""Truth corpus: an inference loop bound by pageable host<->device copies over PCIe
(`write_copy_bound_trace`, docs/analysis.md#copies).

Planted (COPY_BOUND, H100 SXM: PCIe 5.0 x16, 64 GB/s one way): 4 steps, each a 128 MB
host-to-device copy from pageable memory in 10 ms (12.8 GB/s), ten 200 µs GEMMs, and a 4 MB
device-to-host copy to pageable memory in 0.5 ms (8 GB/s). Window 50.33 ms; copies 42 ms, all
exposed; computation 8 ms; idle 0.33 ms.

The saving by hand (docs/analysis.md#copies), per group over its exposed time E = T:
  H2D, B = 512 MB, T = 40 ms: pinned at 75/87.5/100 % of 64 GB/s = 10.667/9.143/8 ms, so
    faster = 29.333/30.857/32 ms, plus 25/50/75 % of the rest: 32.0/35.4286/38.0 ms;
  D2H, B = 16 MB, T = 2 ms: pinned = 0.3333/0.2857/0.25 ms, faster = 1.6667/1.7143/1.75 ms,
    plus the overlap share of the rest: 1.75/1.8571/1.9375 ms;
  together 33.75 / 37.2857 / 39.9375 ms of the 42 ms exposed (cap), 67.06/74.08/79.35 %.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.synthetic.copies import COPY_BOUND, write_copy_bound_trace
from rooflens.cli.main import main

pytestmark = pytest.mark.slow  # whole analyses, in the tests or their module fixtures

WINDOW_MS = 50.33
SAVING_MS = (33.75, 37.2857, 39.9375)
SAVING_PERCENT = (67.06, 74.08, 79.35)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("copy_bound")
    trace = write_copy_bound_trace(folder / "copy_bound.json.gz")
    out = folder / "run"
    assert main(["analyze", str(trace), "--platform", "H100", "--out", str(out)]) == 0
    return out


def _json(run: Path, name: str) -> dict:
    return json.loads((run / name).read_text(encoding="utf-8"))


def test_the_plan_is_what_the_docstring_says() -> None:
    assert COPY_BOUND.window_us == pytest.approx(WINDOW_MS * 1000)


def test_the_top_priority_is_the_copy_item_with_the_hand_computed_range(run: Path) -> None:
    items = _json(run, "priority_data.json")["priorities"]
    top = items[0]
    assert (top["p_number"], top["category"], top["kind"]) == (1, "multi_kernel", "system")
    saving = top["saving"]
    assert saving["pool"] == "exposed_memcpy"
    assert saving["cap_ms"] == pytest.approx(42.0)
    got = (saving["low_ms"], saving["mid_ms"], saving["high_ms"])
    assert got == pytest.approx(SAVING_MS, abs=1e-3)
    assert (top["percent_low"], top["percent_mid"], top["percent_high"]) == SAVING_PERCENT
    link = "of the 64 GB/s `PCIe 5.0 x16` link"  # the link's name is a code span
    assert f"H2D from pageable memory at 12.8 GB/s {link}" in top["title"]


def test_copies_are_counted_in_one_item_only(run: Path) -> None:
    data = _json(run, "priority_data.json")
    pools = [i["saving"]["pool"] for i in data["priorities"] if i["saving"] is not None]
    on_copies = [pool for pool in pools if pool == "exposed_memcpy"]
    assert len(on_copies) == 1
    # the copy-only aten::copy_ rows left the compute categories: no elementwise category
    manifest = _json(run, "category_data/category_manifest.json")
    compute = {c["name"] for c in manifest["categories"] if c["tier"] == "compute_kernel"}
    assert compute == {"gemm"}
    for finding in data["tracelens_compute"]["findings"]:
        assert all("copy" not in m["operation"] for m in finding["members"])


def test_no_share_above_100_percent(run: Path) -> None:
    data = _json(run, "priority_data.json")
    quantified = [item for item in data["priorities"] if item["saving"] is not None]
    assert quantified
    for item in quantified:
        assert 0 <= item["percent_low"] <= item["percent_mid"] <= item["percent_high"] <= 100
    assert data["saving_totals"]["percent_mid"] <= 100
    report = (run / "analysis.md").read_text(encoding="utf-8")
    assert "| Top Bottleneck Category | `GEMM` (100.0% of compute time) |" in report


def test_the_copy_analysis_judges_each_group_against_the_link(run: Path) -> None:
    copies = _json(run, "category_data/multi_kernel_metrics.json")["copies"]
    h2d, d2h = copies["groups"]
    assert (h2d["route"], h2d["host_memory"], h2d["count"]) == ("H2D", "pageable", 4)
    assert (h2d["achieved_gbps"], h2d["percent_of_link"], h2d["at_link_ms"]) == (12.8, 20.0, 8.0)
    assert (d2h["route"], d2h["host_memory"], d2h["achieved_gbps"]) == ("D2H", "pageable", 8.0)
    assert h2d["link"] == d2h["link"] == "PCIe 5.0 x16"
    assert copies["exposed_ms"] == 42.0
    assert copies["fixes"][0].startswith("pin the host buffer")


def test_the_copy_finding_names_copy_fixes_and_never_fusion(run: Path) -> None:
    findings = (run / "system_findings/multi_kernel_findings.md").read_text(encoding="utf-8")
    report = (run / "analysis.md").read_text(encoding="utf-8")
    card = report[report.index("### 🔴 P1:") :].split("\n---", 1)[0]
    block = report[report.index("#### 🔴 P1:") :].split("\n## ", 1)[0]
    for text in (findings, card, block):
        assert "fuse" not in text.lower()
        assert "pin the host buffer" in text.lower()
        assert "non_blocking=True" in text
    assert "20.0% of the `PCIe 5.0 x16` link" in card
    assert "- Capped by the exposed copy time, 42.00 ms" in block


def test_the_run_validates(run: Path) -> None:
    assert main(["validate", str(run)]) == 0
