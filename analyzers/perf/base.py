"""The contract every perf model follows: typed op arguments in, `Work` (FLOPs, bytes) out.

Parsing (trace args -> shapes) stays apart from formulas (shapes -> FLOPs and bytes); both
are plain functions, evaluated once per unique signature. A model that cannot handle an
instance raises `Unsupported` with a reason, which is counted, never swallowed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from math import prod
from typing import Any, Literal

import msgspec

from .dtypes import bytes_per_element

Unit = Literal["matrix", "vector"]
Shape = tuple[int, ...]


class Unsupported(Exception):
    """This model cannot describe this instance (missing shapes, unexpected layout, ...)."""


class Unrecorded(Unsupported):
    """The formula needs a value the trace did not record: the row is unmodelled, and the
    message (a short phrase for the report) says what was missing (docs/perf-models.md#unmodelled).
    """


SHAPES_NOT_RECORDED = "input shapes not recorded"
TENSOR_LIST_WITHOUT_SHAPES = "tensor list without shapes"
NO_MODEL = "no performance model for this operation"
NO_BACKWARD_MODEL = "no performance model for its backward pass"


@dataclass(frozen=True, slots=True)
class OpArgs:
    """One op signature: the recorded inputs, decoded from the trace's JSON text."""

    name: str
    dims: tuple[Any, ...] = ()
    types: tuple[str, ...] = ()
    strides: tuple[Any, ...] = ()
    concrete: tuple[str, ...] = ()
    # Facts the op's own args do not record, looked up in the trace only for the ops whose
    # model asks for them (so every other signature stays as it was):
    annotation: str = ""  # enclosing iteration annotation (docs/report-tables.md#op-context), or ""
    kernels: tuple[str, ...] = ()  # names of the kernels the instance launched, in order
    # Whether the trace has `Input Dims` / `Concrete Inputs` at all for this op (a trace
    # recorded without `record_shapes`, or before PyTorch wrote concrete values, has neither):
    shapes_recorded: bool = True
    values_recorded: bool = True

    def check_recorded(self, needs_values: str | None = None) -> None:
        """Unrecorded when the shapes every formula reads are missing (no `Input Dims` at
        all, or a tensor list recorded without its tensors' shapes), or when the model needs
        `Concrete Inputs` (`needs_values` names them) and the trace has none. The one check
        every model passes through (report/unified_table.py), so no formula falls back to
        scalars or to default values."""
        if not self.shapes_recorded:
            raise Unrecorded(SHAPES_NOT_RECORDED)
        for dims, kind in zip(self.dims, self.types, strict=False):
            if kind == "TensorList" and dims == ():
                raise Unrecorded(TENSOR_LIST_WITHOUT_SHAPES)
        if needs_values is not None:
            self.require_values(needs_values)

    def require_values(self, what: str) -> None:
        """Unrecorded when the formula needs `Concrete Inputs` (`what` names them) and the
        trace has none: their defaults would be a guess."""
        if not self.values_recorded:
            raise Unrecorded(f"{what} not recorded (no Concrete Inputs)")

    def shape(self, i: int) -> Shape:
        """Shape of tensor input `i`; Unsupported when it is absent or not a tensor."""
        if not self.shapes_recorded:
            raise Unrecorded(SHAPES_NOT_RECORDED)
        if i >= len(self.dims) or not isinstance(self.dims[i], tuple):
            raise Unsupported(f"{self.name}: input {i} has no recorded shape")
        shape = self.dims[i]
        if any(not isinstance(d, int) for d in shape):
            raise Unsupported(f"{self.name}: input {i} is a tensor list, not a tensor")
        return shape

    def has_tensor(self, i: int) -> bool:
        """Input `i` is a tensor with a shape (scalars and absent optionals are `[]`)."""
        return i < len(self.dims) and isinstance(self.dims[i], tuple) and len(self.dims[i]) > 0

    def dtype(self, i: int) -> str:
        if i >= len(self.types):
            raise Unsupported(f"{self.name}: input {i} has no recorded type")
        return self.types[i]

    def bpe(self, i: int) -> float:
        """Bytes per element of input `i`; Unsupported for a dtype we cannot size."""
        size = bytes_per_element(self.dtype(i))
        if size is None:
            raise Unsupported(f"{self.name}: unknown element size for '{self.dtype(i)}'")
        return size

    def value(self, i: int) -> str:
        """Concrete (scalar) input `i` as the trace wrote it ('' when not recorded)."""
        return self.concrete[i] if i < len(self.concrete) else ""

    def stride(self, i: int) -> Any:
        return self.strides[i] if i < len(self.strides) else None


def numel(shape: Shape) -> int:
    return prod(shape) if shape else 1


@dataclass(frozen=True, slots=True)
class Work:
    """What one op instance does: FLOPs, bytes moved, precision, which unit runs it."""

    flops: float
    bytes: float | None
    precision: str | None
    unit: Unit | None
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def compute_spec(self) -> str:
        """`matrix_bf16`-style key into a platform's peak table ('' when unknown)."""
        return f"{self.unit}_{self.precision}" if self.unit and self.precision else ""


Formula = Callable[[OpArgs], Work]


@dataclass(frozen=True, slots=True)
class PerfModel:
    """A forward formula and, where the op has one, the backward formula and category."""

    forward: Formula
    backward: Formula | None = None
    bwd_category: str | None = None
    # the `Concrete Inputs` its FLOPs or bytes depend on, in words ("convolution stride/
    # padding/dilation"); a trace without any leaves the row unmodelled (OpArgs.check_recorded)
    needs_values: str | None = None


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, list) else value


def _size(value: Any) -> bool:
    return type(value) is int and 0 <= value < 2**63


def _shapes_ok(dims: tuple[Any, ...]) -> bool:
    """Each recorded input is `[]`, a shape of sizes, or a list of shapes (a TensorList).

    Anything else (text, floats, booleans, negative or 64-bit-overflowing sizes, objects)
    was not written by the profiler, and a formula fed with it would compute nonsense.
    """
    return all(
        isinstance(item, tuple)
        and (
            all(map(_size, item)) or all(isinstance(t, tuple) and all(map(_size, t)) for t in item)
        )
        for item in dims
    )


@cache
def parse_args(
    name: str,
    dims: str | None,
    types: str | None,
    strides: str | None,
    concrete: str | None,
    annotation: str = "",
    kernels: str = "",
) -> OpArgs:
    """Decode the JSON text kept by the loader; one call per unique signature (memoised).

    `kernels` is the instance's kernel names joined by newlines ('' when not looked up).
    Unsupported when the shapes are not all sizes: such a signature gets no perf model.
    """

    def decode(text: str | None) -> tuple[Any, ...] | None:
        """The list as nested tuples; () when not recorded, None when not a list."""
        if not text:
            return ()
        value = msgspec.json.decode(text)
        return _freeze(value) if isinstance(value, list) else None

    shapes = decode(dims)
    if shapes is None or not _shapes_ok(shapes):
        raise Unsupported(f"{name}: recorded input shapes hold values that are not sizes")
    return OpArgs(
        name=name,
        dims=shapes,
        types=tuple(str(t) for t in decode(types) or ()),
        strides=decode(strides) or (),
        concrete=tuple(str(c) for c in decode(concrete) or ()),
        annotation=annotation,
        kernels=tuple(kernels.split("\n")) if kernels else (),
        shapes_recorded=bool(dims),
        values_recorded=bool(concrete),
    )
