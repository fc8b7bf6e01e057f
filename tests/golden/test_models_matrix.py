"""Golden: GEMM, CONV and SDPA perf models against TraceLens's unified_perf_summary rows.

Every reference row whose op we model (and that TraceLens modelled) is recomputed from its
recorded args: GFLOPS and Data Moved (MB) within 0.5 %, equal perf_params and Compute Spec.
Rows touched by one of our deliberate fixes are listed in DEVIATIONS and asserted against our
own hand-derived values instead (docs/deviations.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rooflens.analyzers.perf import conv, gemm, sdpa
from rooflens.analyzers.perf.base import OpArgs, PerfModel, Work
from tests.helpers.deviations import (
    MATRIX_DEVIATIONS as DEVIATIONS,
)
from tests.helpers.deviations import (
    Deviation,
    mismatches,
    normalise,
    reference_work,
)
from tests.helpers.golden import REFERENCE_FOLDERS, ReferenceRow, unified_rows

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

MODELS: dict[str, PerfModel] = {**gemm.MODELS, **conv.MODELS, **sdpa.MODELS}
# added by TraceLens from the op's kernel names, not from its args: not the model's business
KERNEL_DERIVED_PARAMS = frozenset({"transpose"})


def work_of(row: ReferenceRow) -> Work:
    return reference_work(row, MODELS)


def modelled_rows(shared: Path, folder: str) -> list[ReferenceRow]:
    return [
        row
        for row in unified_rows(shared, folder)
        if row.args.name in MODELS and row.row["has_perf_model"] == "True"
    ]


def deviation_of(row: ReferenceRow) -> Deviation | None:
    found = [d for d in DEVIATIONS.values() if d.applies(row)]
    assert len(found) <= 1, f"{row.args.name}: several deviations apply"
    return found[0] if found else None


def row_mismatches(row: ReferenceRow) -> dict[str, tuple[Any, Any]]:
    """{what: (ours, expected)} for one row; empty when it matches."""
    return mismatches(row, work_of(row), deviation_of(row), KERNEL_DERIVED_PARAMS)


@pytest.mark.parametrize("folder", REFERENCE_FOLDERS)
def test_matrix_models_match_tracelens_rows(shared: Path, folder: str) -> None:
    failures = {
        f"{row.args.name} {row.row['Input Dims']}": diff
        for row in modelled_rows(shared, folder)
        if (diff := row_mismatches(row))
    }
    assert not failures, f"(ours, expected): {failures}"


def test_matrix_models_cover_the_reference_rows(shared: Path) -> None:
    """Every modelled op name in the reference is exercised (140 rows at the pinned commit)."""
    rows = [row for folder in REFERENCE_FOLDERS for row in modelled_rows(shared, folder)]
    names = {row.args.name for row in rows}
    assert len(rows) >= 140
    assert {"aten::mm", "aten::addmm", "aten::bmm", "aten::convolution"} <= names
    assert {"aten::convolution_backward", "aten::_scaled_dot_product_flash_attention"} <= names


@pytest.mark.parametrize("case", sorted(DEVIATIONS))
def test_each_deviation_matches_a_reference_row(shared: Path, case: str) -> None:
    """No stale entries: each listed deviation still applies to at least one reference row."""
    deviation = DEVIATIONS[case]
    rows = [
        row
        for folder in REFERENCE_FOLDERS
        for row in modelled_rows(shared, folder)
        if deviation.applies(row)
    ]
    assert rows
    for row in rows:  # and the fix really moves the reference value or param
        ref_params = row.perf_params or {}
        moved = any(normalise(ref_params.get(k)) != v for k, v in deviation.params.items())
        moved |= deviation.gflops is not None and deviation.gflops != row.number("GFLOPS")
        assert moved


def test_a_forward_name_in_a_backward_category_is_compared_with_the_backward_formula():
    """Sole-backward rows (e.g. an SDPA forward name in SDPA_bwd) carry the backward pass."""
    shape = (1, 2, 4, 8)  # B, H, N, d
    args = OpArgs(
        "aten::_scaled_dot_product_flash_attention",
        (shape, shape, shape, (), (), (), ()),
        ("c10::BFloat16",) * 3 + ("Scalar",) * 4,
        (),
        ("", "", "", "0.", "False", "False", "0.125"),
    )
    forward_row = ReferenceRow("synthetic", {"op category": "SDPA_fwd"}, args)
    backward_row = ReferenceRow("synthetic", {"op category": "SDPA_bwd"}, args)
    scores = 2 * 4 * 4
    assert work_of(forward_row).flops == 4 * scores * 8
    assert work_of(backward_row).flops == 5 * 2 * scores * 8  # recompute + 4 gradient GEMMs
