"""An operation's optional fields are typed attributes: unset ones read None and stay out of
its document, set ones (None included) are written, and a document reads back the same."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from rooflens.analyzers.categories.models import CategoryMetrics, Operation
from rooflens.analyzers.categories.scoring import build_operations
from rooflens.analyzers.report.cells import structured
from rooflens.analyzers.report.write_csv import cell_text
from tests.helpers.pipeline_runs import category_metadata

META = category_metadata(
    peak_hbm_bw_tbs=5.3,
    max_achievable_tflops={"matrix_bf16": 708, "vector_bf16": 163},
    util={"total_time_ms": 100.0},
)


def _ops(**cols: object) -> tuple[Operation, ...]:
    row = {
        "name": "aten::mm",
        "operation_count": 1,
        "Kernel Time (µs)_sum": 2000.0,
        "Pct Roofline_mean": 40.0,
        "Roofline Bound": "COMPUTE_BOUND",
        "Compute Spec": "matrix_bf16",
        "Input Dims": "[[4, 8], [8, 16]]",
        "Input type": '["c10::BFloat16", "c10::BFloat16"]',
    }
    return build_operations(pd.DataFrame([row | cols]), META)


def test_unset_fields_read_none_and_are_left_out_of_the_document() -> None:
    (op,) = _ops()
    # 2 ms of a 100 ms window, one call: no variance, no classification, no fusion flag
    assert (op.cov, op.high_variance, op.classification, op.fusion_flagged) == (None,) * 4
    assert op.input_dims == [[4, 8], [8, 16]] and op.args == "(4,8) bf16<br>(8,16) bf16"
    document = op.model_dump(mode="json")
    assert not {"cov", "high_variance", "classification", "fusion_flagged"} & set(document)
    assert document["Input Dims"] == [[4, 8], [8, 16]] and "input_dims" not in document
    assert document["library"] is None  # set to None by scoring: written as null
    assert not hasattr(op, "get")


def test_a_document_reads_back_to_the_same_operation_and_the_same_text() -> None:
    (op,) = _ops(entry_point="model.forward")
    metrics = CategoryMetrics(category="gemm", status="OK", operations=(op,))
    text = json.dumps(metrics.document())
    again = CategoryMetrics.model_validate(json.loads(text))
    assert again.operations == (op,)
    assert again.operations[0].launcher_path == "model.forward"
    assert json.dumps(again.document()) == text


def test_in_memory_cells_read_as_their_csv_json_text_reads_back() -> None:
    values = [
        [(1, 2), (np.int64(3), np.float32(0.5))],
        {"a": (np.bool_(True), None), 2: {1.5: float("nan")}, True: {"x"}},
        ({"name": "k", "dur": np.float64(1.25)}, object),
    ]
    for value in values:
        back = json.loads(cell_text(value))
        got = structured(value)
        assert json.dumps(got) == json.dumps(back)
        assert [type(x) for x in _leaves(got)] == [type(x) for x in _leaves(back)]


def _leaves(value: object) -> list[object]:
    if isinstance(value, dict):
        return [k for k in value] + [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value]
