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
from tests.golden.cases import REFERENCE_FOLDERS
from tests.golden.deviation import (
    EXACT,
    Deviation,
    mismatches,
    normalise,
    reference_work,
    within,
)
from tests.golden.reference_rows import ReferenceRow, unified_rows

MODELS: dict[str, PerfModel] = {
    **elementwise.MODELS,
    **reduce.MODELS,
    **norm.MODELS,
    **fused.MODELS,
}


_REDUCE = "§10.22: output elements from the dim/keepdim Concrete Inputs (TraceLens: always 1)"
_AFFINE = "§10.23: affine/bias only when the optional tensor has a shape (TraceLens: always)"
_BOOL = "dtypes: bool is 1 byte (TraceLens: unknown size, no Data Moved)"
_NO_AFFINE = {"is_affine": False, "has_bias": False}

DEVIATIONS: dict[str, Deviation] = {
    # in 16·559·1024 = 9,158,656 fp32, dim [-1] -> out 16·559 = 8,944; (in + out)·4 B
    "reduce/qwen_mean": Deviation(
        "aten::mean",
        _REDUCE,
        "((16, 559, 1024), (), (), ())",
        data_moved_mb=(9_158_656 + 8_944) * 4 / 2**20,
        params={"num_output_elems": 8_944},
    ),
    # in 1·8·768 = 6,144 bf16, dim [1] -> out 768; (6,144 + 768)·2 = 13,824 B
    "reduce/timesformer_mean": Deviation(
        "aten::mean",
        _REDUCE,
        "((1, 8, 768), (), (), ())",
        data_moved_mb=13_824 / 2**20,
        params={"num_output_elems": 768},
    ),
    # in 5184·768 = 3,981,312 bf16, dim [-1] (input 2) -> out 5,184; (in + out)·2 B
    "reduce/owlv2_linalg_norm": Deviation(
        "aten::linalg_norm",
        _REDUCE,
        "((1, 5184, 768), (), (), (), ())",
        data_moved_mb=(3_981_312 + 5_184) * 2 / 2**20,
        params={"num_output_elems": 5_184},
    ),
    # in 10·1000 bf16, dim [0] -> out 1,000; (10,000 + 1,000)·2 = 22,000 B
    "reduce/resnet_sum": Deviation(
        "aten::sum",
        _REDUCE,
        "((10, 1000), (), (), ())",
        data_moved_mb=22_000 / 2**20,
        params={"num_output_elems": 1_000},
    ),
    # in 10·512·7·7 = 250,880 bf16, dims [-1, -2] -> out 5,120; (in + out)·2 = 512,000 B
    "reduce/resnet_mean": Deviation(
        "aten::mean",
        _REDUCE,
        "((10, 512, 7, 7), (), (), ())",
        data_moved_mb=512_000 / 2**20,
        params={"num_output_elems": 5_120},
    ),
    # in 8·16 = 128 fp32, dim [0] -> out 16; (128 + 16)·4 = 576 B
    "reduce/normalization_sum": Deviation(
        "aten::sum",
        _REDUCE,
        "((8, 16), (), (), ())",
        data_moved_mb=576 / 2**20,
        params={"num_output_elems": 16},
    ),
    # N = 131,072 fp32, C = 16, training: N·8 + W·C·4 with W = 2 (mean, var) + 2 (training)
    # = 1,048,576 + 256 = 1,048,832 B (TraceLens W = 6); FLOPs 6C + 5N unchanged
    "norm/batch_norm_no_weight": Deviation(
        "aten::batch_norm",
        _AFFINE,
        "((8, 16, 32, 32), (), (), (16,), (16,), (), (), (), ())",
        data_moved_mb=1_048_832 / 2**20,
        params=_NO_AFFINE,
    ),
    "norm/instance_norm_no_weight": Deviation(
        "aten::instance_norm",
        _AFFINE,
        "((8, 16, 32, 32), (), (), (), (), (), (), (), ())",
        data_moved_mb=1_048_832 / 2**20,
        params=_NO_AFFINE,
    ),
    "norm/group_norm_no_weight": Deviation(
        "aten::group_norm",
        _AFFINE,
        "((8, 16, 32, 32), (), (), (), (), ())",
        data_moved_mb=1_048_832 / 2**20,
        params=_NO_AFFINE,
    ),
    # C = 16·32·32 = 16,384: N·8 + 4·C·4 = 1,048,576 + 262,144 = 1,310,720 B = 1.25 MB
    "norm/layer_norm_no_weight": Deviation(
        "aten::layer_norm",
        _AFFINE,
        "((8, 16, 32, 32), (), (), (), (), ())",
        data_moved_mb=1.25,
        params=_NO_AFFINE,
    ),
    # C = 16 / 4 groups = 4, training, mask[0]: N·4 + 2·N·4 + C·4 = 1,572,880 B; FLOPs 9N same
    "norm/group_norm_backward_no_weight": Deviation(
        "aten::native_group_norm_backward",
        _AFFINE,
        "((8, 16, 32, 32), (8, 16, 32, 32), (8, 4), (8, 4), (), (), (), (), (), ())",
        data_moved_mb=1_572_880 / 2**20,
        params=_NO_AFFINE,
    ),
    # C = 16: N·4 + 2·N·4 + C·4 = 1,572,864 + 64 = 1,572,928 B
    "norm/batch_norm_backward_no_weight": Deviation(
        "aten::native_batch_norm_backward",
        _AFFINE,
        "((8, 16, 32, 32), (8, 16, 32, 32), (), (16,), (16,), (16,), (16,), (), (), ())",
        data_moved_mb=1_572_928 / 2**20,
        params=_NO_AFFINE,
    ),
    # N = 131,072, C = 128: 3·N·4 + C·4 = 1,572,864 + 512 = 1,573,376 B
    "norm/batch_norm_backward_no_weight_c128": Deviation(
        "aten::native_batch_norm_backward",
        _AFFINE,
        "((1, 128, 32, 32), (1, 128, 32, 32), (), (), (), (128,), (128,), (), (), ())",
        data_moved_mb=1_573_376 / 2**20,
        params=_NO_AFFINE,
    ),
    # mask [True, False], no weight: FLOPs N + 6N = 917,504; bytes 3·N·4 = 1,572,864 B = 1.5 MB
    "norm/rms_norm_backward_no_weight": Deviation(
        "aten::_fused_rms_norm_backward",
        _AFFINE,
        "((8, 16, 32, 32), (8, 16, 32, 32), (), (8, 16, 1, 1), (), ())",
        gflops=917_504 / 1e9,
        data_moved_mb=1.5,
        params={"is_affine": False},
    ),
    # C = 1,024, no weight: FLOPs 128·(2·1024 + 2) + N = 262,400 + 131,072 = 393,472;
    # bytes 2·N·4 = 1,048,576 B = 1 MB
    "norm/rms_norm_no_weight": Deviation(
        "aten::_fused_rms_norm",
        _AFFINE,
        "((8, 16, 32, 32), (), (), ())",
        gflops=393_472 / 1e9,
        data_moved_mb=1.0,
        params={"is_affine": False},
    ),
    # one bool element in, one out: 2 B
    "dtype/copy_bool": Deviation(
        "aten::copy_",
        _BOOL,
        "((1,), (1,), ())",
        data_moved_mb=2 / 2**20,
        input_type="('bool', 'bool', 'Scalar')",
    ),
    # 25 bool in, 25 bf16 out: 25·(1 + 2) = 75 B
    "dtype/copy_bool_to_bf16": Deviation(
        "aten::copy_",
        _BOOL,
        "((1, 1, 5, 5), (1, 1, 5, 5), ())",
        data_moved_mb=75 / 2**20,
        input_type="('bool', 'c10::BFloat16', 'Scalar')",
    ),
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
