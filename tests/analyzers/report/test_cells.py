"""One reader for perf-report cells: in-memory Python values and CSV JSON text alike."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rooflens.analyzers.report.cells import finite_number, structured


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1, 1.0), (2.5, 2.5), (np.float32(0.5), 0.5), (None, None), (math.nan, None),
     (math.inf, None), (True, None), ("3.0", None)],
)  # fmt: skip
def test_finite_number(value, expected) -> None:
    assert finite_number(value) == expected


def test_structured_reads_objects_and_json_text_alike() -> None:
    cell = [[2, 3], {"name": "k", "dur": 1.5}]
    assert structured(cell) == structured('[[2, 3], {"name": "k", "dur": 1.5}]') == cell
    assert structured(((1, 2),)) == [[1, 2]]  # tuples read as the CSV holds them
    assert structured("") is None and structured(math.nan) is None
    assert structured("[(1, 2)]") is None  # a Python repr is not a cell we write
