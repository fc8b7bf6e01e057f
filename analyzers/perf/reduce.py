"""Reductions (`sum`, `mean`, `amax`, `linalg_norm`, ...) and softmax: FLOPs and bytes.

Reduce (docs/perf-models.md#reduce): FLOPs = input elements, bytes = input read + output
written, `reduce_type` from the name. One fix (docs/deviations.md#reduce-normalisation):
TraceLens never parses the string `Concrete Inputs`, so its output is always one element; here
the output size comes from the `dim` and `keepdim` inputs ('[-1]', '1', 'True'). No dim, '[]' or
None reduces everything to one element; keepdim keeps reduced dims as size 1, which leaves the
element count unchanged.
`cumsum`/`cumprod` write as many elements as they read. `argmax`/`argmin` (new) and
`max.dim`/`min.dim` write int64 indices (8 bytes each, the latter on top of the values);
`max`/`min` with a tensor second input are the elementwise `maximum`/`minimum`.

Softmax (new; TraceLens maps no model, though it is 46 % of the OWLv2 trace's kernel time):
forward FLOPs = 5 per element: row max, subtract, exp, row sum, divide (log_softmax: max,
subtract, exp, sum, subtract log-sum), each counted once. Backward FLOPs = 4 per element:
softmax g·y, row sum, subtract, multiply by y; log_softmax exp(y), row sum of g, multiply,
subtract. Bytes: forward = input read + output written (fp32 output when `half_to_float` is
'True', or the dtype named in `softmax(self, dim, dtype)`); backward = grad_output and output
read, grad_input written.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import OpArgs, PerfModel, Shape, Unsupported, Work, numel
from .dtypes import precision
from .elementwise import (
    Pointwise,
    normalize_dim,
    parse_flag,
    parse_ints,
    size_of,
    total_bytes,
)

INDEX_DTYPE = "long int"
SOFTMAX_FLOPS_PER_ELEMENT = 5
SOFTMAX_BWD_FLOPS_PER_ELEMENT = 4
# ScalarType codes PyTorch writes for a `dtype` argument
_SCALAR_TYPES = {"5": "c10::Half", "6": "float", "7": "double", "15": "c10::BFloat16"}


@dataclass(frozen=True, slots=True)
class Reduction:
    """Where an op keeps its `dim` and `keepdim` inputs, and what it writes."""

    dim: int | None = 1  # None: the output has the input's shape (cumulative ops)
    keepdim: int = 2
    indices: bool = False  # argmax/argmin: int64 output instead of values


def reduced_shape(shape: Shape, dims: tuple[int, ...] | None, keepdim: bool) -> Shape:
    """Output shape of reducing `shape` over `dims` (None or () = all dims)."""
    axes = set(range(len(shape))) if not dims else {normalize_dim(d, len(shape)) for d in dims}
    if keepdim:
        return tuple(1 if axis in axes else size for axis, size in enumerate(shape))
    return tuple(size for axis, size in enumerate(shape) if axis not in axes)


def _dims_of(args: OpArgs, spec: Reduction) -> tuple[tuple[int, ...] | None, bool]:
    """(dims, keepdim) from the concrete inputs, overloads told apart by what is recorded."""
    short = args.name.removeprefix("aten::")
    if spec.dim is None:
        return None, False
    text = args.value(spec.dim)
    if short in ("sum", "mean") and len(args.dims) <= 2:
        return None, False  # sum(self, dtype): no dim
    if short in ("std", "var") and parse_flag(text) is not None and "[" not in text:
        return None, False  # std(self, unbiased): full reduction
    return parse_ints(text), bool(parse_flag(args.value(spec.keepdim)))


def _reduce_type(name: str) -> str:
    short = name.removeprefix("aten::")
    for kind in ("mean", "max", "min", "norm", "sum"):
        if kind in short:
            return kind
    return short


def reduce(spec: Reduction):
    def model(args: OpArgs) -> Work:
        """FLOPs = input elements; bytes = in·bpe_in + out·bpe_out (+ int64 indices)."""
        shape, dtype = args.shape(0), args.dtype(0)
        dims, keepdim = _dims_of(args, spec)
        out = shape if spec.dim is None else reduced_shape(shape, dims, keepdim)
        n_in, n_out = numel(shape), numel(out)
        with_indices = args.name in ("aten::max", "aten::min") and bool(dims)
        dtype_out = INDEX_DTYPE if spec.indices else None
        terms = [(n_in, size_of(dtype)), (n_out, size_of(dtype_out or dtype))]
        if with_indices:
            terms.append((n_out, size_of(INDEX_DTYPE)))
        return Work(
            n_in,
            total_bytes(*terms),
            precision(dtype),
            "vector",
            {
                "num_input_elems": n_in,
                "num_output_elems": n_out,
                "dtype_in_out": (dtype, dtype_out),
                "reduce_type": _reduce_type(args.name),
            },
        )

    return model


_MAXIMUM = Pointwise(reads=(0, 1), values=(0, 1))


def max_min(args: OpArgs) -> Work:
    """`max`/`min`: with a tensor second input the elementwise maximum, else a reduction."""
    return _MAXIMUM(args) if args.has_tensor(1) else reduce(Reduction())(args)


# ---------------------------------------------------------------------------------------------
# Softmax


def _softmax_out_dtype(args: OpArgs) -> str:
    dtype = args.dtype(0)
    if args.name in ("aten::_softmax", "aten::_log_softmax"):
        return "float" if parse_flag(args.value(2)) else dtype  # half_to_float
    return _SCALAR_TYPES.get(args.value(2).strip(), dtype)  # softmax(self, dim, dtype)


def softmax(args: OpArgs) -> Work:
    """Forward: FLOPs = 5·elements; bytes = elements·(bpe_in + bpe_out)."""
    shape, dtype = args.shape(0), args.dtype(0)
    dtype_out = _softmax_out_dtype(args)
    n = numel(shape)
    dim = parse_ints(args.value(1))
    if dim:
        normalize_dim(dim[0], len(shape))
    return Work(
        SOFTMAX_FLOPS_PER_ELEMENT * n,
        total_bytes((n, size_of(dtype)), (n, size_of(dtype_out))),
        precision(dtype),
        "vector",
        {"op_shape": shape, "dim": dim[0] if dim else None, "dtype_in_out": (dtype, dtype_out)},
    )


def softmax_backward(args: OpArgs) -> Work:
    """`_softmax_backward_data(grad_output, output, dim, input_dtype)`: FLOPs = 4·elements;
    bytes = grad_output + output read, grad_input written (in grad_output's dtype)."""
    shape, dtype = args.shape(0), args.dtype(0)
    if args.shape(1) != shape:
        raise Unsupported(f"{args.name}: grad {shape} and output {args.shape(1)} differ")
    n = numel(shape)
    dim = parse_ints(args.value(2))
    return Work(
        SOFTMAX_BWD_FLOPS_PER_ELEMENT * n,
        total_bytes((n, size_of(dtype)), (n, size_of(args.dtype(1))), (n, size_of(dtype))),
        precision(dtype),
        "vector",
        {"op_shape": shape, "dim": dim[0] if dim else None, "dtype_in_out": (dtype, dtype)},
    )


REDUCED_DIMS = "reduction dims"  # the output size depends on them


def _model(spec: Reduction) -> PerfModel:
    formula = reduce(spec)
    needs = REDUCED_DIMS if spec.dim is not None else None
    return PerfModel(formula, backward=formula, needs_values=needs)  # backward as forward


_REDUCTIONS = {
    **dict.fromkeys(("sum", "mean", "amax", "amin", "logsumexp"), Reduction()),
    **dict.fromkeys(("norm", "linalg_norm"), Reduction(dim=2, keepdim=3)),
    **dict.fromkeys(("std", "var"), Reduction(dim=1, keepdim=3)),
    **dict.fromkeys(("cumsum", "cumprod"), Reduction(dim=None)),
    **dict.fromkeys(("argmax", "argmin"), Reduction(indices=True)),
}

MODELS: dict[str, PerfModel] = {
    **{f"aten::{name}": _model(spec) for name, spec in _REDUCTIONS.items()},
    "aten::max": PerfModel(max_min, backward=max_min, needs_values=REDUCED_DIMS),
    "aten::min": PerfModel(max_min, backward=max_min, needs_values=REDUCED_DIMS),
    **dict.fromkeys(
        ("aten::_softmax", "aten::softmax", "aten::_log_softmax", "aten::log_softmax"),
        PerfModel(softmax),
    ),
    **dict.fromkeys(
        ("aten::_softmax_backward_data", "aten::_log_softmax_backward_data"),
        PerfModel(softmax_backward),
    ),
}
# ops TraceLens has a model for (the rest are ours): for registry parity decisions
TRACELENS_MODELLED = frozenset(
    f"aten::{name}" for name in [*_REDUCTIONS, "max", "min"] if not name.startswith("arg")
)
