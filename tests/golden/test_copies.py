"""Copies judged as copies on OWLv2 / H100 (docs/analysis.md#copies): the trace copies 146 MB
device-to-host into pageable memory at 11.3 GB/s and 31 MB host-to-device from pageable memory,
14.57 ms in all, none of it beside a kernel. Before, those copies were the top compute finding
(scored against HBM, "fuse them") and a system finding besides. Now no compute category holds
a copy, and the copies are one item, judged against the 64 GB/s PCIe 5.0 link."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from devkit.shared import trace_path
from rooflens.cli.main import main

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

FOLDER = "h100_google_owlv2-large-patch14-ensemble__1016001"
EXPOSED_MS = 14.57


@pytest.fixture(scope="module")
def run(shared: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("owlv2") / "run"
    trace = trace_path(shared, FOLDER)
    assert main(["analyze", str(trace), "--platform", "H100", "--out", str(out)]) == 0
    return out


def _json(run: Path, name: str) -> dict:
    return json.loads((run / name).read_text(encoding="utf-8"))


def test_no_compute_category_holds_a_copy(run: Path) -> None:
    manifest = _json(run, "category_data/category_manifest.json")
    compute = [c for c in manifest["categories"] if c["tier"] == "compute_kernel"]
    assert compute
    for entry in compute:
        with (run / entry["csv_file"]).open(encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                assert "Memcpy" not in row["kernel_details_summary"], (entry["name"], row["name"])
    for finding in _json(run, "priority_data.json")["tracelens_compute"]["findings"]:
        assert finding["category"] != "multi_kernel"


def test_copies_are_one_item_judged_against_the_link(run: Path) -> None:
    items = _json(run, "priority_data.json")["priorities"]
    on_copies = [i for i in items if i["saving"]["pool"] == "exposed_memcpy"]
    assert len(on_copies) == 1
    item = on_copies[0]
    assert (item["category"], item["kind"]) == ("multi_kernel", "system")
    assert "D2H to pageable memory at 11.3 GB/s of the 64 GB/s `PCIe 5.0 x16` link" in item["title"]
    assert item["saving"]["cap_ms"] == pytest.approx(EXPOSED_MS, abs=0.01)
    copies = _json(run, "category_data/multi_kernel_metrics.json")["copies"]
    assert item["saving"]["mid_ms"] == pytest.approx(copies["saving_ms"][1], abs=1e-3)
    d2h = copies["groups"][0]
    assert (d2h["route"], d2h["host_memory"], d2h["count"]) == ("D2H", "pageable", 55)
    assert (d2h["megabytes"], d2h["percent_of_link"]) == (146.4186, 17.73)
    for other in items:
        if other is not item:
            assert "cop" not in other["title"].lower(), other["title"]


def test_one_card_speaks_of_copies_and_it_never_says_fuse(run: Path) -> None:
    report = (run / "analysis.md").read_text(encoding="utf-8").split("\n## Detailed Analysis")[0]
    cards = [c for c in report.split("\n### ")[1:] if "Memcpy" in c.split("\n---")[0]]
    assert len(cards) == 1
    card = cards[0].split("\n---")[0]
    assert card.startswith(("🟢 P", "🟡 P", "🔴 P")) and "Copies take 14.57 ms" in card
    assert "fuse" not in card.lower()
    assert "Pin the host buffer" in card and "non_blocking=True" in card
