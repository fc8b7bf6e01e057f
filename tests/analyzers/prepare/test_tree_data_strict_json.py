"""Tree data is strict JSON: an op without recorded arguments (a synthetic op stands for a
kernel no operator launched) has null input dims and types, never NaN. The mutation fuzzer
found NaN written there (devkit/badinput/fuzz.py parses every JSON file of a run strictly)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from rooflens.analyzers.prepare.tree_data import tree_data


def test_an_op_without_arguments_has_null_dims_and_types() -> None:
    rows = pd.DataFrame(
        {
            "name": ["aten::add", "Cijk_gemm (Synthetic Op)"],
            "Input Dims": [[[2, 3], [2, 3]], np.nan],
            "Input type": [["float", "float"], np.nan],
            "Kernel Time (µs)_sum": [30.0, 70.0],
            "operation_count": [1, 7],
        }
    )
    document = tree_data("other", rows)
    text = json.dumps(document, allow_nan=False)  # raises on NaN
    ops = {op["name"]: op for op in json.loads(text)["operations"]}
    assert ops["Cijk_gemm (Synthetic Op)"]["input_dims"] is None
    assert ops["Cijk_gemm (Synthetic Op)"]["input_type"] is None
    assert json.loads(ops["aten::add"]["input_dims"]) == [[2, 3], [2, 3]]
    assert ops["Cijk_gemm (Synthetic Op)"]["percent_of_category"] == 70.0
