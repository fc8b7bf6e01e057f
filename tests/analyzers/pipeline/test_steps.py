"""The declared pipeline on the generator's sample trace: order, per-category state, what a
step asked for too early says, and what a second whole run keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.findings.drafting.submission import PItemProse
from rooflens.analyzers.pipeline.steps import (
    NotAnalysable,
    StepMissing,
    state,
)
from tests.helpers.pipeline_runs import sample_pipeline, written


def test_a_step_asked_too_early_names_the_earliest_missing_step(tmp_path: Path) -> None:
    steps, _ = sample_pipeline(tmp_path, with_folder=False)
    with pytest.raises(StepMissing, match="not been prepared yet; run prepared first"):
        steps.draft("gemm")  # needs analysed:gemm, which needs prepared: prepared is named
    with pytest.raises(StepMissing, match="not been prepared yet"):
        steps.aggregate()
    steps.prepare()
    with pytest.raises(StepMissing, match="gemm of the sample run has not been analysed yet"):
        steps.draft("gemm")
    with pytest.raises(StepMissing, match="no category of the sample run is analysed yet"):
        steps.aggregate()
    with pytest.raises(StepMissing, match="not been aggregated yet; run aggregated first"):
        steps.compose()


def test_unknown_category_lists_the_analysable_ones(tmp_path: Path) -> None:
    steps, _ = sample_pipeline(tmp_path, with_folder=False)
    steps.prepare()
    keys = steps.analysable()
    assert keys[:3] == ["cpu_idle", "multi_kernel", "kernel_fusion"]  # system analyses first
    assert {"gemm", "elementwise"} <= set(keys[3:])
    with pytest.raises(NotAnalysable, match="analysable: cpu_idle, multi_kernel, kernel_fusion"):
        steps.analyze("nope")


def test_kernel_fusion_runs_before_the_first_compute_category(tmp_path: Path) -> None:
    steps, ledger = sample_pipeline(tmp_path, with_folder=False)
    steps.prepare()
    steps.analyze("gemm")
    assert ledger.steps == ["loaded", "prepared", "analysed:kernel_fusion", "analysed:gemm"]
    steps.analyze("elementwise")  # fusion is not analysed twice
    assert ledger.steps.count(state("analysed", "kernel_fusion")) == 1


def test_without_a_folder_nothing_is_written(tmp_path: Path) -> None:
    steps, ledger = sample_pipeline(tmp_path, with_folder=False)
    steps.run()
    assert not (tmp_path / "run").exists()
    assert ledger.steps[-2:] == ["aggregated", "reported"]
    assert steps.results.report_text and "## " in steps.results.report_text


def test_a_second_whole_run_keeps_the_submitted_findings(tmp_path: Path) -> None:
    steps, _ = sample_pipeline(tmp_path, with_folder=True)
    steps.run(until="drafted")
    draft = steps.findings_of("gemm")
    assert draft.cards, "the sample trace's GEMMs give the draft at least one P-item"
    prose = PItemProse(rank=1, title="Planted title for the first GEMM item")
    steps.submit("gemm", [prose], status="findings", note=None)
    prepared_data = steps.results.category_data
    steps.run()
    assert steps.results.category_data is prepared_data  # not recomputed
    kept = steps.findings_of("gemm")
    assert kept.cards[0].title == "Planted title for the first GEMM item"
    on_disk = (tmp_path / "run" / layout.findings("gemm")).read_text()
    assert "Planted title for the first GEMM item" in on_disk
    assert layout.PRIORITIES in written(tmp_path / "run")
