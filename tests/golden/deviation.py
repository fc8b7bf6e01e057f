"""A reference row where one of our deliberate fixes applies, with our own value for it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rooflens.analyzers.perf.base import PerfModel, Work
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


TOLERANCE = 0.005  # TraceLens's numbers: within 0.5 %
EXACT = 1e-12  # our own hand-derived values


def normalise(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(normalise(v) for v in value)
    return value


def within(ours: float, ref: float, tolerance: float) -> bool:
    return abs(ours - ref) <= tolerance * abs(ref)


def mismatches(
    row: ReferenceRow,
    work: Work,
    deviation: Deviation | None,
    skip_params: frozenset[str] = frozenset(),
) -> dict[str, tuple[Any, Any]]:
    """{what: (ours, expected)} for one modelled reference row; empty when it matches."""
    gflops, mb = work.flops / 1e9, (work.bytes or 0.0) / 2**20
    want_gflops, want_mb = row.number("GFLOPS"), row.number("Data Moved (MB)")
    want_params = {k: v for k, v in (row.perf_params or {}).items() if k not in skip_params}
    tol_gflops = tol_mb = TOLERANCE
    if deviation is not None:
        if deviation.gflops is not None:
            want_gflops, tol_gflops = deviation.gflops, EXACT
        if deviation.data_moved_mb is not None:
            want_mb, tol_mb = deviation.data_moved_mb, EXACT
        want_params |= dict(deviation.params)
    found: dict[str, tuple[Any, Any]] = {}
    if not within(gflops, want_gflops, tol_gflops):
        found["GFLOPS"] = (gflops, want_gflops)
    if work.bytes is None or not within(mb, want_mb, tol_mb):
        found["Data Moved (MB)"] = (mb if work.bytes is not None else None, want_mb)
    ours_params = {k: normalise(v) for k, v in work.params.items()}
    for key in sorted(set(ours_params) | set(want_params)):
        if ours_params.get(key, "<absent>") != normalise(want_params.get(key, "<absent>")):
            found[f"param {key}"] = (ours_params.get(key), want_params.get(key))
    if row.row["Compute Spec"] != work.compute_spec:
        found["Compute Spec"] = (work.compute_spec, row.row["Compute Spec"])
    return found


def is_sole_backward(row: ReferenceRow, model: PerfModel) -> bool:
    """A forward op name in a backward category: its row carries the backward pass."""
    return model.backward is not None and row.row["op category"] == model.bwd_category


def reference_work(row: ReferenceRow, models: Mapping[str, PerfModel]) -> Work:
    """Our Work for a reference row: forward, or backward for a sole-backward row."""
    model = models[row.args.name]
    formula = model.backward if is_sole_backward(row, model) else model.forward
    assert formula is not None
    return formula(row.args)
