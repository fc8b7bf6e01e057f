"""Model identification reads shapes a trace may have filled with junk: unknown, not a crash."""

from __future__ import annotations

import pandas as pd

from rooflens.analyzers.findings.composing.model_info import model_identification, op_rows

BF16 = "c10::BFloat16"
COLUMNS = ["name", "Input type", "Input Dims", "operation_count", "call_stack_full"]


def _rows(rows: list[tuple[str, list, object, str]]) -> list[dict[str, str]]:
    """The rows identification reads from a unified table holding these cells."""
    frame = pd.DataFrame(
        [(name, types, dims, count, []) for name, types, dims, count in rows], columns=COLUMNS
    )
    found = op_rows(frame)
    assert found is not None
    return found


def test_non_numeric_sizes_cast_no_vote():
    rows = _rows(
        [
            ("aten::mm", [BF16, BF16], [[8, 1024], [1024, 4096]], "1"),
            ("aten::mm", [BF16, BF16], [[8, "2048"], ["a", [2]]], "5"),
            ("aten::mm", [BF16, BF16], [[8, 3.5], [True, -4]], "5"),
            ("aten::mm", [BF16, BF16], "not a list", "5"),
            ("aten::embedding", [BF16, "long int"], [["50000", 512], [4]], "1"),
            ("aten::embedding", [BF16, "long int"], [[30522, 512], [4]], "inf"),
        ],
    )
    info = model_identification(rows)
    assert info.hidden_size == 1024  # 1024 and 4096 tie at one vote; junk added none
    assert info.vocab_size == 30522  # the text "50000" is not a size
    assert info.precision == "bf16"
