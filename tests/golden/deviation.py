"""A reference row where one of our deliberate fixes applies, with our own value for it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.golden.reference_rows import ReferenceRow


@dataclass(frozen=True)
class Deviation:
    """Reference rows where a deliberate fix applies, with our own hand-derived values."""

    op: str
    reason: str
    input_dims: str | None = None  # the row's `Input Dims` text; None: every row of `op`
    gflops: float | None = None  # ours; None: same as TraceLens
    data_moved_mb: float | None = None
    params: Mapping[str, Any] = field(default_factory=dict)  # ours, for these keys
    input_type: str | None = None  # the row's `Input type` text, where dims are not enough

    def applies(self, row: ReferenceRow) -> bool:
        return self.matches(row.args.name, row.row["Input Dims"], row.row["Input type"])

    def matches(self, name: str, input_dims: str, input_type: str) -> bool:
        return (
            name == self.op
            and (self.input_dims is None or input_dims == self.input_dims)
            and (self.input_type is None or input_type == self.input_type)
        )
