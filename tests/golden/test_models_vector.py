"""Golden: elementwise, reduce, norm and fused perf models against TraceLens's unified rows.

Rows TraceLens modelled are recomputed from their recorded args: GFLOPS and Data Moved (MB)
within 0.5 %, equal perf_params and Compute Spec. Rows where one of our deliberate fixes
applies (reduce output size, norm flags, bool element size) are listed in DEVIATIONS and held
to our own hand-derived values. Rows TraceLens left unmodelled (softmax, cat, gelu, vLLM
kernels, ...) must now get FLOPs or bytes, except the few in UNSUPPORTED whose shapes the
trace does not record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rooflens.analyzers.perf import elementwise, fused, norm, reduce
from rooflens.analyzers.perf.base import PerfModel, Unsupported, Work
from tests.helpers.deviations import (
    EXACT,
    Deviation,
    mismatches,
    normalise,
    reference_work,
    within,
)
from tests.helpers.deviations import (
    VECTOR_DEVIATIONS as DEVIATIONS,
)
from tests.helpers.golden import REFERENCE_FOLDERS, ReferenceRow, unified_rows

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

MODELS: dict[str, PerfModel] = {
    **elementwise.MODELS,
    **reduce.MODELS,
    **norm.MODELS,
    **fused.MODELS,
}


# rows TraceLens did not model and we cannot either: the trace lacks the shapes
UNSUPPORTED: dict[str, tuple[str, str]] = {
    "aten::index without index shapes": ("aten::index", "((1, 5, 768), ())"),
    "aten::cat of an unrecorded tensor list": ("aten::cat", "((), ())"),
}


def work_of(row: ReferenceRow) -> Work:
    return reference_work(row, MODELS)


def rows_of(shared: Path, folder: str, modelled: bool) -> list[ReferenceRow]:
    flag = "True" if modelled else "False"
    return [
        row
        for row in unified_rows(shared, folder)
        if row.args.name in MODELS and row.row["has_perf_model"] == flag
    ]


def deviation_of(row: ReferenceRow) -> Deviation | None:
    found = [d for d in DEVIATIONS.values() if d.applies(row)]
    assert len(found) <= 1, f"{row.args.name}: several deviations apply"
    return found[0] if found else None


def row_mismatches(row: ReferenceRow) -> dict[str, tuple[Any, Any]]:
    """{what: (ours, expected)} for one row; empty when it matches."""
    return mismatches(row, work_of(row), deviation_of(row))


def is_expected_unsupported(row: ReferenceRow) -> bool:
    return (row.args.name, row.row["Input Dims"]) in UNSUPPORTED.values()


@pytest.mark.parametrize("folder", REFERENCE_FOLDERS)
def test_vector_models_match_tracelens_rows(shared: Path, folder: str) -> None:
    failures = {
        f"{row.args.name} {row.row['Input Dims']}": diff
        for row in rows_of(shared, folder, modelled=True)
        if (diff := row_mismatches(row))
    }
    assert not failures, f"(ours, expected): {failures}"


@pytest.mark.parametrize("folder", REFERENCE_FOLDERS)
def test_ops_tracelens_left_unmodelled_now_get_flops_or_bytes(shared: Path, folder: str) -> None:
    uncovered = []
    for row in rows_of(shared, folder, modelled=False):
        if is_expected_unsupported(row):
            with pytest.raises(Unsupported):
                work_of(row)
            continue
        work = work_of(row)
        if not (work.flops > 0 or (work.bytes or 0) > 0):
            uncovered.append(f"{row.args.name} {row.row['Input Dims']}")
    assert not uncovered


def test_vector_models_cover_the_reference_rows(shared: Path) -> None:
    """Every family is exercised, modelled and newly covered alike."""
    names = {
        row.args.name
        for folder in REFERENCE_FOLDERS
        for modelled in (True, False)
        for row in rows_of(shared, folder, modelled)
    }
    assert {"aten::copy_", "aten::add", "aten::mean", "aten::layer_norm"} <= names
    assert {"aten::native_batch_norm_backward", "aten::_fused_rms_norm_backward"} <= names
    assert {"aten::_softmax", "aten::cat", "aten::gelu", "_C::fused_add_rms_norm"} <= names
    assert {"_C::rotary_embedding", "_C::static_scaled_fp8_quant", "aten::index_select"} <= names


def test_tracelens_modelled_sets_agree_with_the_reference(shared: Path) -> None:
    """Our TRACELENS_MODELLED lists match which rows TraceLens gave a perf model."""
    ours = elementwise.TRACELENS_MODELLED | reduce.TRACELENS_MODELLED | norm.TRACELENS_MODELLED
    ours |= fused.TRACELENS_MODELLED
    for folder in REFERENCE_FOLDERS:
        assert {r.args.name for r in rows_of(shared, folder, modelled=True)} <= ours
        assert not {r.args.name for r in rows_of(shared, folder, modelled=False)} & ours


@pytest.mark.parametrize("case", sorted(DEVIATIONS))
def test_each_deviation_matches_a_reference_row(shared: Path, case: str) -> None:
    """No stale entries: each deviation applies to a modelled row and moves its value."""
    deviation = DEVIATIONS[case]
    rows = [
        row
        for folder in REFERENCE_FOLDERS
        for row in rows_of(shared, folder, modelled=True)
        if deviation.applies(row)
    ]
    assert rows
    for row in rows:
        ref_params = row.perf_params or {}
        moved = any(normalise(ref_params.get(k)) != v for k, v in deviation.params.items())
        moved |= deviation.gflops is not None and deviation.gflops != row.number("GFLOPS")
        moved |= deviation.data_moved_mb is not None and not within(
            deviation.data_moved_mb, row.number("Data Moved (MB)"), EXACT
        )
        assert moved


@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_each_unsupported_case_matches_a_reference_row(shared: Path, case: str) -> None:
    name, dims = UNSUPPORTED[case]
    assert any(
        row.args.name == name and row.row["Input Dims"] == dims
        for folder in REFERENCE_FOLDERS
        for row in rows_of(shared, folder, modelled=False)
    )
