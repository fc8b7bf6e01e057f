"""Op context: the facts a few models read beyond their op's own args (report/op_context.py).

The end-to-end cases build a trace by hand and read the unified table: an attention op inside
an iteration annotation, a zero-filling attention op, and an `aten::index` whose indices are
only visible through its children.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooflens.analyzers.perf import registry
from rooflens.analyzers.perf.categories import default_table
from rooflens.analyzers.report.op_context import enclosing_annotations, recovered_indices
from rooflens.analyzers.report.unified import attribute_unified
from rooflens.analyzers.report.unified_table import build_unified

BF16, LONG = "c10::BFloat16", "long int"
ITERATION = "execute_8_context_2(sq8sk9sqsq34sqsk37)_generation_0(sq0sk0sqsq0sqsk0)"
FILL = "void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::BFloat16>>"


def table(rows: list[tuple[str, str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["cat", "name", "ts", "dur"])


# --- the annotation lookup (§2.10) ------------------------------------------------------------


def test_the_first_enclosing_annotation_by_ts_is_taken() -> None:
    events = table(
        [
            ("user_annotation", "A", 0, 100),  # 0
            ("user_annotation", "B", 10, 40),  # 1, nested in A
            ("user_annotation", "C", 5, 10),  # 2, ends before the op at 20
            ("cpu_op", "in A and B", 20, 10),  # 3
            ("cpu_op", "ends with A", 90, 10),  # 4: e.t_end < ann.t_end is strict
            ("cpu_op", "overruns A", 95, 10),  # 5
            ("cpu_op", "before A", -5, 2),  # 6
        ]
    )
    got = enclosing_annotations(events, np.array([3, 4, 5, 6]))
    assert got.tolist() == ["A", "", "", ""]


def test_an_earlier_annotation_that_ends_too_soon_is_skipped() -> None:
    events = table(
        [
            ("user_annotation", "short", 0, 10),
            ("user_annotation", "long", 5, 100),
            ("cpu_op", "op", 20, 10),
        ]
    )
    assert enclosing_annotations(events, np.array([2])).tolist() == ["long"]


def test_no_annotations_give_empty_strings() -> None:
    events = table([("cpu_op", "op", 20, 10)])
    assert enclosing_annotations(events, np.array([0])).tolist() == [""]


# --- aten::index indices from its children ----------------------------------------------------


@pytest.mark.parametrize(
    ("self_dims", "restride", "reshapes", "expected"),
    [
        ([32, 2880], (0, 1), [([32], (32, 1))], [[32]]),  # x[idx]
        ([1, 5, 768], (0, 1), [([1], (1, 1)), ([1], (1, 1))], [[1], [1]]),  # x[i, j]
        ([5184, 4], (0, 1), [([0], (0, 1))], [[0]]),  # x[mask]: nonzero found no element
        ([32, 2880], (2880, 0), [([32], (1, 32))], None),  # x[:, idx]: not the leading dim
        ([32, 2880], (0, 1), [([32], (32,))], None),  # target without the trailing ones
        ([32, 2880], None, [], None),  # no reshape child: nothing to recover
    ],
)
def test_index_shapes_are_recovered_only_for_leading_dims(
    self_dims, restride, reshapes, expected
) -> None:
    assert recovered_indices(self_dims, restride, reshapes) == expected


# --- end to end through the unified table -----------------------------------------------------


def unified_instances(tb, events):
    model = tb.model(events)
    ops = attribute_unified(model, registry.has_model)
    return build_unified(model, ops, default_table(), registry.model_for, None).instances


def attention_args(rows: int) -> dict:
    dims = [[rows, 4, 8], [rows, 2, 8], [rows, 2, 8], [rows, 4, 8], [], [], [], [0]]
    return {"Input Dims": dims, "Input type": [BF16] * 4 + ["", "", "", BF16]}


def annotation(name: str, ts: float, dur: float) -> dict:
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": name,
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "dur": dur,
    }


def test_attention_reads_its_iteration_annotation(tb) -> None:
    """8 query rows matching the annotation's context phase: 3,072 FLOPs, 1,600 bytes
    (hand count in tests/analyzers/perf/test_inference_attention.py)."""
    name = "vllm::unified_attention_with_output"
    events = [
        annotation(ITERATION, 0, 100),
        tb.cpu_op(name, 10, 20, args=attention_args(8)),
        *tb.launch(1, 12, 40, 10, kernel_name="kernel_unified_attention_2d"),
    ]
    inst = unified_instances(tb, events)
    row = inst[inst["name"] == name].iloc[0]
    assert row["GFLOPS"] * 1e9 == pytest.approx(3_072)
    assert row["Data Moved (MB)"] * 2**20 == pytest.approx(1_600)


def test_attention_outside_any_iteration_has_no_numbers_unless_it_only_filled(tb) -> None:
    name = "vllm::unified_attention_with_output"
    events = [
        tb.cpu_op(name, 10, 20, args=attention_args(8)),
        *tb.launch(1, 12, 40, 10, kernel_name="kernel_unified_attention_2d"),
        tb.cpu_op(name, 50, 20, args=attention_args(16)),
        *tb.launch(2, 52, 80, 10, kernel_name=FILL),
    ]
    inst = unified_instances(tb, events)
    gflops = inst.loc[inst["name"] == name, "GFLOPS"].tolist()
    assert np.isnan(gflops[0])
    assert gflops[1] * 1e9 == pytest.approx(16 * 4 * 8)  # the zero-fill: one per element


def test_index_without_recorded_indices_reads_them_from_its_reshape_child(tb) -> None:
    """self (32, 2880) bf16, int64 index (32,): 92,160 elements, 368,896 bytes."""
    events = [
        tb.cpu_op(
            "aten::index",
            10,
            30,
            args={"Input Dims": [[32, 2880], []], "Input type": [BF16, ""]},
        ),
        tb.cpu_op(
            "aten::as_strided",
            11,
            1,
            args={
                "Input Dims": [[32, 2880], [], [], []],
                "Input type": [BF16, "ScalarList", "ScalarList", ""],
                "Concrete Inputs": ["", "[32, 2880]", "[0, 1]", ""],
            },
        ),
        tb.cpu_op(
            "aten::reshape",
            13,
            1,
            args={
                "Input Dims": [[32], []],
                "Input type": [LONG, "ScalarList"],
                "Concrete Inputs": ["", "[32, 1]"],
            },
        ),
        *tb.launch(1, 20, 50, 5, kernel_name="vectorized_gather_kernel"),
    ]
    inst = unified_instances(tb, events)
    row = inst[inst["name"] == "aten::index"].iloc[0]
    assert row["GFLOPS"] * 1e9 == pytest.approx(92_160)
    assert row["Data Moved (MB)"] * 2**20 == pytest.approx(368_896)
    assert row["Input Dims"] == "[[32,2880],[]]"  # the report keeps what the trace recorded
