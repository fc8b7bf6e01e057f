"""The perf report against TraceLens's CSVs for every reference trace (same platform files).

Rows are matched on (name, Input Dims, Input type, Concrete Inputs). Where our numbers differ
on purpose, `DEVIATES` names the row and docs/deviations.md says why.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.helpers.deviations import MATRIX_DEVIATIONS, VECTOR_DEVIATIONS, Deviation
from tests.helpers.golden import REFERENCE_FOLDERS, close, our_report

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

WITH_OPS = [f for f in REFERENCE_FOLDERS if f != "mi210_gpu_only"]
KEY = ["name", "Input Dims", "Input type", "Concrete Inputs"]

# Rows whose GFLOPS / Data Moved differ on purpose. The model goldens pin our value for each
# (test_models_matrix.py, test_models_vector.py); this one pins the Triton kernel below.
TRITON_BITWISE = Deviation(
    "triton_poi_fused_add_bitwise_and_bitwise_not_bitwise_or_ge_lt_mul_sub_0",
    "bitwise_and/or/not count one FLOP per element (TraceLens's op list lacks them) and the "
    "bool input is 1 byte per element (TraceLens: unknown size)",
    gflops=8 * 888 / 1e9,  # eight fused ops over xnumel 888
    # its int32, int64 and bool pointers (the output among them), each once: 888 * (4 + 8 + 1)
    data_moved_mb=888 * 13 / 2**20,
)
OUTPUT_ONCE = "the output pointer is among the recorded args; TraceLens writes it once more"
TRITON_POINTWISE = [
    # in (8,4096,8192) + out (32768,8192), bf16: 2 * 256 Mi elements * 2 bytes
    Deviation("triton_poi_fused__unsafe_view_mul_silu_2", OUTPUT_ONCE, data_moved_mb=1024.0),
    # two inputs + out, each 8*4096*2048 bf16: 3 * 128 MiB
    Deviation("triton_poi_fused__unsafe_view_add_3", OUTPUT_ONCE, data_moved_mb=384.0),
]
MODEL_DEVIATIONS = [
    *MATRIX_DEVIATIONS.values(),
    *VECTOR_DEVIATIONS.values(),
    TRITON_BITWISE,
    *TRITON_POINTWISE,
]
# (folder, op name) -> why the row's kernel time moved to other rows or out of the table.
ATTRIBUTION_DEVIATES: dict[tuple[str, str], str] = {
    ("b200_eager_trace", "symm_mem::multimem_all_reduce_"): (
        "its multimem_all_reduce kernels are communication here, and communication kernels "
        "are not attributed to operators (docs/deviations.md, symmetric-memory collectives)"
    ),
    ("b200_eager_trace", "vllm::moe_forward"): (
        "its flashinfer trtllm-gen MoE kernels (GEMMs, finalize, mxfp8 quantize) belong to "
        "pseudo ops (docs/deviations.md, trtllm-gen MXFP4 MoE); TraceLens keeps them here"
    ),
}
# categories of those pseudo ops, whose kernel time TraceLens counts as `other`
B200_PSEUDO_CATEGORIES = ["MoE_unfused", "MoE_aux"]


def reference(shared: Path, folder: str, sheet: str) -> pd.DataFrame:
    return pd.read_csv(
        shared / "reference/tracelens" / folder / "perf_report_csvs" / f"{sheet}.csv"
    )


def _freeze(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def ours_key(text: Any) -> Any:
    return _freeze(json.loads(text)) if isinstance(text, str) else ()


def ref_key(text: Any) -> Any:
    return _freeze(ast.literal_eval(text)) if isinstance(text, str) and text else ()


def deviation_for(row: pd.Series) -> Deviation | None:
    return next(
        (
            d
            for d in MODEL_DEVIATIONS
            if d.matches(row["name"], row["Input Dims"], row["Input type"])
        ),
        None,
    )


def keyed(frame: pd.DataFrame, parse) -> pd.DataFrame:
    keys = frame[KEY[1:]].map(parse)
    frame = frame.assign(**{c: keys[c] for c in KEY[1:]})
    return frame.groupby(KEY, sort=False).agg(
        operation_count=("operation_count", "sum"),
        kernel_us=("Kernel Time (µs)_sum", "sum"),
        gflops=("GFLOPS", "first"),
        data_mb=("Data Moved (MB)", "first"),
    )


@pytest.mark.parametrize("folder", WITH_OPS)
def test_ops_summary_by_category_matches(shared: Path, folder: str) -> None:
    ours = our_report(folder).sheets["ops_summary_by_category"].set_index("op category")
    ref = reference(shared, folder, "ops_summary_by_category").set_index("op category")
    if folder == "b200_eager_trace":  # symmetric-memory all-reduce left `other` (deviation)
        ref = ref.drop(index="other")
        ours = ours.drop(index=["other", *B200_PSEUDO_CATEGORIES])
    assert set(ours.index) == set(ref.index)
    for category, row in ref.iterrows():
        assert ours.loc[category, "Count"] == row["Count"], category
        assert close(
            ours.loc[category, "total_direct_kernel_time_ms"], row["total_direct_kernel_time_ms"]
        ), category


@pytest.mark.parametrize("folder", WITH_OPS)
def test_unified_rows_cover_the_reference_and_agree(shared: Path, folder: str) -> None:
    ours = keyed(our_report(folder).sheets["unified_perf_summary"], ours_key)
    ref_rows = reference(shared, folder, "unified_perf_summary")
    deviations = {
        (row["name"], *(ref_key(row[c]) for c in KEY[1:])): d
        for _, row in ref_rows.iterrows()
        if (d := deviation_for(row)) is not None
    }
    ref = keyed(ref_rows, ref_key)
    joined = ref.merge(ours, left_index=True, right_index=True, how="left", suffixes=("", "_ours"))
    total = joined["kernel_us"].sum()
    excused = joined.index.get_level_values("name").isin(
        [name for (f, name) in ATTRIBUTION_DEVIATES if f == folder]
    )
    same_time = [
        close(a, b) and n == m
        for a, b, n, m in zip(
            joined["kernel_us"],
            joined["kernel_us_ours"],
            joined["operation_count"],
            joined["operation_count_ours"],
            strict=True,
        )
    ]
    matched = joined[pd.Series(same_time, index=joined.index)]
    coverage = matched["kernel_us"].sum() / (total - joined.loc[excused, "kernel_us"].sum())
    assert coverage >= 0.99, joined[~pd.Series(same_time, index=joined.index) & ~excused]

    for key, row in matched.iterrows():
        name = key[0]
        expected_gflops, expected_mb = row["gflops"], row["data_mb"]
        deviation = deviations.get(key)
        if deviation is not None:
            expected_gflops = deviation.gflops if deviation.gflops is not None else expected_gflops
            if deviation.data_moved_mb is not None:
                expected_mb = deviation.data_moved_mb
        if math.isnan(expected_gflops):
            continue
        assert close(row["gflops_ours"], expected_gflops), (name, row["gflops_ours"])
        if not math.isnan(expected_mb):
            assert close(row["data_mb_ours"], expected_mb), (name, row["data_mb_ours"])


@pytest.mark.parametrize("folder", WITH_OPS)
def test_gemm_transpose_params_come_from_kernel_names_as_in_tracelens(
    shared: Path, folder: str
) -> None:
    ours = our_report(folder).sheets["unified_perf_summary"]
    ref = reference(shared, folder, "unified_perf_summary")
    ours_layouts = sorted(
        (name, str(params.get("transpose")))
        for name, params, category in zip(
            ours["name"], ours["perf_params"], ours["op category"], strict=True
        )
        if category == "GEMM" and params
    )
    ref_layouts = sorted(
        (name, str(ast.literal_eval(params).get("transpose")))
        for name, params, category in zip(
            ref["name"], ref["perf_params"], ref["op category"], strict=True
        )
        if category == "GEMM" and isinstance(params, str)
    )
    assert ours_layouts == ref_layouts
