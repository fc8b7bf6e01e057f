"""Trace 2's system analyses on reference pairs (docs/compare.md#system-analyses-of-both-
traces): on bert-small and OWLv2 (MI300X trace 1 against H100 trace 2) trace 2's CPU/idle
document gives the idle share TraceLens writes as the manifest's `trace2_gpu_utilization`,
while trace 1's document stays the reference's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers import layout
from tests.helpers.golden import comparative_run, reference_dir

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

BERT = "mi300_vs_h100_gaunernst_bert-small-uncased__1016001"
OWLV2 = "mi300_vs_h100_google_owlv2-large-patch14-ensemble__1016001"


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("folder", [BERT, OWLV2])
def test_trace2_idle_is_the_references_trace2_utilisation(shared: Path, folder: str) -> None:
    out, pipeline = comparative_run(folder)
    theirs = read(reference_dir(folder) / layout.MANIFEST)["trace2_gpu_utilization"]
    util2 = read(out / layout.trace2_metrics("cpu_idle"))["gpu_utilization"]
    assert util2["idle_time_percent"] == round(theirs["idle_time_percent"], 2)  # 92.08, 47.44
    assert util2["total_time_ms"] == round(theirs["total_time_ms"], 3)
    assert util2["computation_percent"] == round(theirs["computation_time_percent"], 2)
    assert util2["memcpy_percent"] == round(theirs["exposed_memcpy_time_percent"], 2)
    # trace 1's document is still TraceLens's
    ours1 = read(out / layout.metrics("cpu_idle"))["gpu_utilization"]
    ref1 = read(reference_dir(folder) / layout.metrics("cpu_idle"))["gpu_utilization"]
    assert ours1 == pytest.approx(ref1, abs=0.011)
    system = pipeline.report_comparison().system
    assert system is not None
    assert (system.one.idle_pct, system.two.idle_pct) == (
        round(read(out / layout.MANIFEST)["gpu_utilization"]["idle_time_percent"], 2),
        util2["idle_time_percent"],
    )
