"""cpu_idle / multi_kernel metrics against TraceLens's documents, every reference folder.

Two runs per folder: from the reference's own inputs (its multi_kernel_data.json, and the
manifest's gpu_utilization as timeline), and from the inputs our pipeline prepares in memory
from the trace. Numbers must agree within 1e-6 relative or 0.01; strings, booleans and lists
exactly.

Deliberate differences:
* b200_eager_trace: our multi_kernel_data counts the symmetric-memory `multimem_all_reduce`
  kernels as communication (TraceLens: computation), so our communication figures, the
  computation cross-check and the comm assessments are asserted on our own values.
* mi210_gpu_only: TraceLens wrote no multi_kernel_data.json (nor manifest) there, hence its
  ERROR document; we always have the multi-kernel data, so ours is SUCCESS. The ERROR path
  is checked by leaving it out. Our error message is in our words, not TraceLens's.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from rooflens.analyzers.categories.cpu_idle import analyze_cpu_idle
from rooflens.analyzers.categories.multi_kernel import analyze_multi_kernel
from rooflens.analyzers.categories.system_inputs import SystemInputs, Timeline
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.prepare.categories import GpuUtilization
from rooflens.analyzers.prepare.category_data import CategoryData, prepare
from rooflens.analyzers.prepare.multi_kernel import MultiKernelData
from rooflens.analyzers.report.build import PerfReport
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import TraceModel, build_model
from tests.helpers.golden import REFERENCE_FOLDERS, our_report, platform_for, shared_dir, trace_path

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

CATEGORY_DATA = Path("analysis_output/category_data")
SYMMETRIC_MEMORY = "b200_eager_trace"
NO_REFERENCE_INPUTS = "mi210_gpu_only"
FOLDERS = [
    f
    for f in REFERENCE_FOLDERS
    if (Path(str(shared_dir())) / "reference/tracelens" / f / CATEGORY_DATA).is_dir()
] or list(REFERENCE_FOLDERS)


def assert_matches(ours: Any, ref: Any, where: str = "") -> None:
    if isinstance(ref, dict):
        assert isinstance(ours, dict), where
        assert sorted(ours) == sorted(ref), f"{where}: keys {sorted(ours)} != {sorted(ref)}"
        for key in ref:
            assert_matches(ours[key], ref[key], f"{where}.{key}")
    elif isinstance(ref, list):
        assert isinstance(ours, list) and len(ours) == len(ref), where
        for i, (o, r) in enumerate(zip(ours, ref, strict=True)):
            assert_matches(o, r, f"{where}[{i}]")
    elif ref is None or isinstance(ref, str | bool):
        assert ours == ref, f"{where}: {ours!r} != {ref!r}"
    else:
        assert isinstance(ours, int | float) and not isinstance(ours, bool), where
        ok = math.isclose(ours, ref, rel_tol=1e-6) or abs(ours - ref) <= 0.01
        assert ok, f"{where}: {ours} != {ref}"


def reference_doc(shared: Path, folder: str, name: str) -> dict[str, Any]:
    path = shared / "reference/tracelens" / folder / CATEGORY_DATA / f"{name}_metrics.json"
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def _model(folder: str) -> TraceModel:
    shared = shared_dir()
    assert shared is not None
    return build_model(load_trace(trace_path(shared, folder)))


@cache
def _prepared(folder: str) -> tuple[CategoryData, PerfReport]:
    shared = shared_dir()
    assert shared is not None
    report = our_report(folder)
    platform = platform_for(shared, folder)
    trace = str(trace_path(shared, folder))
    return prepare(_model(folder), report, platform, trace, "run"), report


def our_inputs(folder: str) -> SystemInputs:
    """What our pipeline hands the system analyses for the folder's trace."""
    data, report = _prepared(folder)
    shared = shared_dir()
    assert shared is not None
    return SystemInputs(
        manifest=data.manifest,
        timeline=Timeline.from_sheet(report.sheets["gpu_timeline"]),
        multi_kernel=data.multi_kernel,
        fusion_candidates=data.fusion_candidates,
        unified=report.sheets.get("unified_perf_summary"),
        platform=platform_for(shared, folder),
    )


def reference_inputs(shared: Path, folder: str) -> SystemInputs:
    """The reference's own inputs: its multi_kernel_data.json and its manifest's GPU
    utilisation as the timeline (TraceLens's analyses had no timeline CSV to read)."""
    ours = our_inputs(folder)
    data = shared / "reference/tracelens" / folder / CATEGORY_DATA
    manifest = ours.manifest
    if (data / "category_manifest.json").is_file():
        util = json.loads((data / "category_manifest.json").read_text())["gpu_utilization"]
        manifest = manifest.model_copy(update={"gpu_utilization": GpuUtilization(**util)})
    multi = data / "multi_kernel_data.json"
    return replace(
        ours,
        manifest=manifest,
        timeline=None,
        multi_kernel=MultiKernelData.model_validate_json(multi.read_bytes())
        if multi.is_file()
        else None,
    )


# --- from the reference's own inputs: the rules alone -------------------------------------


@pytest.mark.parametrize("folder", FOLDERS)
def test_rules_on_reference_inputs(shared: Path, folder: str) -> None:
    inputs = reference_inputs(shared, folder)
    ours = analyze_multi_kernel(inputs).model_dump(mode="json")
    ref = reference_doc(shared, folder, "multi_kernel")
    if folder == NO_REFERENCE_INPUTS:
        assert ours["error"].startswith("the run has no multi-kernel data")
        ours["error"] = ref["error"]  # same failure, our words instead of theirs
    assert_matches(ours, ref)
    if folder != NO_REFERENCE_INPUTS:  # no manifest there (TraceLens read its CSV)
        assert_matches(analyze_cpu_idle(inputs).model_dump(mode="json"), ref_cpu(shared, folder))


def ref_cpu(shared: Path, folder: str) -> dict[str, Any]:
    return reference_doc(shared, folder, "cpu_idle")


# --- from our own run folder ----------------------------------------------------------------


@pytest.mark.parametrize("folder", FOLDERS)
def test_cpu_idle_matches_reference(shared: Path, folder: str, tmp_path: Path) -> None:
    ours = analyze_cpu_idle(our_inputs(folder))
    ref = ref_cpu(shared, folder)
    dumped = ours.model_dump(mode="json")
    if folder == SYMMETRIC_MEMORY:
        # our timeline moves the multimem all-reduce time from computation to communication:
        # the two percents differ, their sum (and everything else) does not.
        util, ref_util = dumped["gpu_utilization"], ref["gpu_utilization"]
        moved = util["communication_percent"] - ref_util["communication_percent"]
        assert moved > 1
        assert util["computation_percent"] == pytest.approx(
            ref_util["computation_percent"] - moved, abs=0.02
        )
        util["computation_percent"] = ref_util["computation_percent"]
        util["communication_percent"] = ref_util["communication_percent"]
    assert_matches(dumped, ref)
    written = RunFolder(tmp_path).write_metrics("cpu_idle", ours)
    assert json.loads(written.read_text()) == ours.model_dump(mode="json")


@pytest.mark.parametrize("folder", [f for f in FOLDERS if f != SYMMETRIC_MEMORY])
def test_multi_kernel_matches_reference(shared: Path, folder: str) -> None:
    inputs = our_inputs(folder)
    ours = analyze_multi_kernel(inputs).model_dump(mode="json")
    ref = reference_doc(shared, folder, "multi_kernel")
    if folder == NO_REFERENCE_INPUTS:
        # TraceLens had no multi_kernel_data.json here; ours exists: a clean SUCCESS document
        # (no copies, no communication, nothing flagged, timeline agrees with itself).
        assert ours["status"] == "SUCCESS"
        assert ours["patterns_detected"] == []
        assert ours["memcpy_summary"]["total_count"] == 0
        assert ours["nccl_blocking_assessment"] == {
            "flagged": False,
            "details": "No communication events detected",
        }
        assert ours["total_time_ms"] == ref_cpu(shared, folder)["gpu_utilization"]["total_time_ms"]
        missing = analyze_multi_kernel(replace(inputs, multi_kernel=None)).model_dump(mode="json")
        missing["error"] = ref["error"]  # same failure, our words instead of theirs
        assert_matches(missing, ref)
        return
    assert_matches(ours, ref)


def test_multi_kernel_b200_symmetric_memory(shared: Path) -> None:
    """b200: ours counts the multimem all-reduce kernels as communication. Everything that does
    not depend on the communication bucket still equals the reference."""
    ours = analyze_multi_kernel(our_inputs(SYMMETRIC_MEMORY)).model_dump(mode="json")
    ref = reference_doc(shared, SYMMETRIC_MEMORY, "multi_kernel")
    for key in ("status", "total_time_ms", "memcpy_summary", "memcpy_assessment"):
        assert_matches(ours[key], ref[key], key)
    assert ours["impact_estimates"] == []
    assert ours["patterns_detected"][0] == ref["patterns_detected"][0]  # high_h2d_memcpy
    # ours: communication now includes the symmetric-memory kernels
    overlap = ours["overlap_analysis"]
    nccl = ours["nccl_summary"]
    assert nccl["total_count"] > ref["nccl_summary"]["total_count"]
    assert overlap["total_comm_time_us"] > ref["overlap_analysis"]["total_comm_time_us"]
    blocking = ours["nccl_blocking_assessment"]
    assert blocking["exposed_percent_of_total"] == overlap["comm_percent_of_total"]
    assert blocking["flagged"] == (overlap["comm_percent_of_total"] > 5)
    # cross-validation: our timeline shares the bucketing, so every check agrees
    assert ours["cross_validation"]["status"] == "PASS"
    assert ours["cross_validation"]["warnings"] == []
