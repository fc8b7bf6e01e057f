"""Elementwise and data-movement ops: FLOPs and bytes from the recorded input shapes.

Two groups live here (docs/perf-models.md#elementwise):

* TraceLens's models, kept number for number: UnaryElementwise (`copy_`, `silu`, `pow`,
  `replication_pad*`, `upsample_nearest*`, ...) and BinaryElementwise (`add`, `mul`, `div`,
  `threshold_backward`, ...).
* Models TraceLens leaves out (their ops fall to the kernel-name fallback with no numbers):
  pointwise ops (`gelu`, `sub`, `exp`, `where`, `eq`, `masked_fill_`, ...), `fill_`/`zero_`,
  `cat`/`stack` and the gather family (`index_select`, `gather`, `scatter`, `embedding`).
  FLOPs = output elements × a per-element cost; the costs are the per-op weights of the Triton
  model (exp/log/sin/cos/tanh/erf 4, sqrt/reciprocal 2, gelu 8, everything else 1; see
  docs/perf-models.md#triton) so an eager op and its Inductor-fused twin count the same. Pure
  data movement (`fill_`, `cat`, `index_select`, ...) counts one FLOP per element written, the
  convention TraceLens's `copy_` already uses, so those ops still get a (memory-bound)
  roofline. Bytes = every tensor input
  read + the output written, from the real shapes and dtypes; a Python scalar (`Scalar`) is
  not read, a 0-dim tensor is one element.

The `Concrete Inputs` parsers and the byte and shape helpers these models share with the
reduce, norm and fused models live in operands.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import floor
from typing import Any

from .base import (
    TENSOR_LIST_WITHOUT_SHAPES,
    OpArgs,
    PerfModel,
    Shape,
    Unrecorded,
    Unsupported,
    Work,
    numel,
)
from .dtypes import precision
from .operands import (
    broadcast,
    normalize_dim,
    parse_floats,
    parse_ints,
    size_of,
    total_bytes,
)

# Re-exported for the models that still import the parsers from here (norm, reduce, ...);
# new code imports them from operands.py.
from .operands import parse_flag as parse_flag
from .operands import parse_flags as parse_flags

# ---------------------------------------------------------------------------------------------
# The Work of a vector-unit op


def _vector(flops: float, nbytes: float | None, dtype: str | None, **params: Any) -> Work:
    return Work(flops, nbytes, precision(dtype) if dtype else None, "vector", params)


# ---------------------------------------------------------------------------------------------
# TraceLens's UnaryElementwise and BinaryElementwise


def unary(args: OpArgs) -> Work:
    """FLOPs = elements; bytes = elements·(bpe_in + bpe_out). Input 1, when it is a tensor,
    stands for the output (for `copy_` that is the source: the roles swap, sizes do not)."""
    shape, dtype_in = args.shape(0), args.dtype(0)
    dtype_out = args.dtype(1) if args.has_tensor(1) else None
    size_in = size_of(dtype_in)
    size_out = size_of(dtype_out) if dtype_out else size_in
    n = numel(shape)
    return _vector(
        n,
        total_bytes((n, size_in), (n, size_out)),
        dtype_in,
        op_shape=shape,
        dtype_in_out=(dtype_in, dtype_out),
        stride_input=args.stride(0),
        stride_output=args.stride(1) if dtype_out else None,
    )


def _resized(args: OpArgs, out_shape: Shape) -> Work:
    """Shape-changing unary op: FLOPs = output elements, bytes = input read + output written."""
    shape, dtype = args.shape(0), args.dtype(0)
    size = size_of(dtype)
    return _vector(
        numel(out_shape),
        total_bytes((numel(shape), size), (numel(out_shape), size)),
        dtype,
        input_shape=shape,
        output_shape=out_shape,
        op_shape=out_shape,
        dtype_in_out=(dtype, dtype),
        stride_input=args.stride(0),
        stride_output=None,
    )


def replication_pad(spatial: int):
    def model(args: OpArgs) -> Work:
        """Padding list (CI[1]) holds (before, after) pairs, innermost dim first."""
        shape, pads = args.shape(0), parse_ints(args.value(1))
        if pads is None or len(pads) != 2 * spatial or len(shape) < spatial:
            raise Unsupported(f"{args.name}: padding '{args.value(1)}' for shape {shape}")
        out = list(shape)
        for j in range(spatial):
            out[-1 - j] += pads[2 * j] + pads[2 * j + 1]
        return _resized(args, tuple(out))

    return model


def upsample_nearest(spatial: int):
    def model(args: OpArgs) -> Work:
        """Output spatial size from CI[1]; without it, scale factors (a list in CI[2], or one
        scalar per spatial dim from CI[2] on)."""
        shape = args.shape(0)
        if len(shape) < spatial:
            raise Unsupported(f"{args.name}: shape {shape} has fewer than {spatial} dims")
        size = parse_ints(args.value(1))
        if not size:  # scale factors: one list, or one scalar per spatial dim
            text = " ".join(args.value(2 + j) for j in range(spatial))
            scales = parse_floats(text) or ()
            if len(scales) != spatial:
                raise Unsupported(f"{args.name}: neither output size nor scales recorded")
            size = tuple(floor(d * f) for d, f in zip(shape[-spatial:], scales, strict=True))
        if len(size) != spatial:
            raise Unsupported(f"{args.name}: output size '{args.value(1)}'")
        return _resized(args, shape[:-spatial] + size)

    return model


def _operand(args: OpArgs, i: int) -> tuple[Shape, str]:
    """Binary operand: a tensor shape, or () for a scalar (sized by its type, 'Scalar' = 4)."""
    dims = args.dims[i] if i < len(args.dims) else ()
    shape = args.shape(i) if isinstance(dims, tuple) and dims else ()
    return shape, args.dtype(i) if i < len(args.types) else "Scalar"


def binary(args: OpArgs) -> Work:
    """FLOPs = broadcast output elements; bytes = n1·bpe1 + n2·bpe2 + n_out·bpe_out.
    Output dtype: input 2 when it is a tensor (out=), else the larger of two tensor inputs,
    else input 0's."""
    (shape1, dtype1), (shape2, dtype2) = _operand(args, 0), _operand(args, 1)
    out = broadcast(shape1, shape2)
    dtype_out = args.dtype(2) if args.has_tensor(2) else None
    size1, size2 = size_of(dtype1), size_of(dtype2)
    size_out = size_of(dtype_out) if dtype_out else size1
    if not dtype_out and args.has_tensor(0) and args.has_tensor(1) and size1 and size2:
        size_out = max(size1, size2)
    n = numel(out)
    return _vector(
        n,
        total_bytes((numel(shape1), size1), (numel(shape2), size2), (n, size_out)),
        dtype1,
        shape_in1=shape1,
        shape_in2=shape2,
        dtype_in1_in2_out=(dtype1, dtype2, dtype_out),
        stride_input1=args.stride(0),
        stride_input2=args.stride(1),
        stride_output=args.stride(2) if dtype_out else None,
    )


# ---------------------------------------------------------------------------------------------
# Pointwise ops TraceLens does not model

_NOT_A_TENSOR = frozenset({"", "scalar", "scalarlist", "tensorlist", "none"})


@dataclass(frozen=True, slots=True)
class Pointwise:
    """A pointwise op: which inputs are read, which set the output dtype, cost per element."""

    reads: tuple[int, ...] = (0,)
    values: tuple[int, ...] = (0,)  # inputs whose dtype the result takes (not masks/conditions)
    cost: int = 1
    boolean: bool = False  # comparisons and logical ops write one byte per element

    def __call__(self, args: OpArgs) -> Work:
        read = {i: (args.shape(i), args.dtype(i)) for i in self.reads if _is_tensor(args, i)}
        if not read:
            raise Unsupported(f"{args.name}: no tensor input recorded")
        out = broadcast(*(shape for shape, _ in read.values()))
        ranked = [read[i] for i in self.values if i in read] or list(read.values())
        dominant = max(ranked, key=lambda item: len(item[0]))[1]  # first of highest rank
        dtype_out = "bool" if self.boolean else dominant
        terms = [(numel(shape), size_of(dtype)) for shape, dtype in read.values()]
        n = numel(out)
        return _vector(
            n * self.cost,
            total_bytes(*terms, (n, size_of(dtype_out))),
            dominant,
            shapes_in=tuple(shape for shape, _ in read.values()),
            dtypes_in=tuple(dtype for _, dtype in read.values()),
            shape_out=out,
            dtype_out=dtype_out,
            flops_per_element=self.cost,
        )


def _is_tensor(args: OpArgs, i: int) -> bool:
    """Input i is a tensor (0-dim included): it has a shape and a real dtype."""
    if i >= len(args.dims) or i >= len(args.types) or not isinstance(args.dims[i], tuple):
        return False
    return _ints(args.dims[i]) and args.types[i].strip().lower() not in _NOT_A_TENSOR


def fill(args: OpArgs) -> Work:
    """`fill_`/`zero_`: write-only. Bytes = elements·bpe; FLOPs = elements (one store each)."""
    shape, dtype = args.shape(0), args.dtype(0)
    n = numel(shape)
    return _vector(n, total_bytes((n, size_of(dtype))), dtype, op_shape=shape, dtype_out=dtype)


# ---------------------------------------------------------------------------------------------
# Concatenation and the gather family (data movement: one FLOP per element written)


def _tensor_list(args: OpArgs) -> tuple[Shape, ...]:
    shapes = args.dims[0] if args.dims else ()
    if not shapes or not all(isinstance(s, tuple) and _ints(s) for s in shapes):
        raise Unrecorded(TENSOR_LIST_WITHOUT_SHAPES)
    return shapes


def _ints(shape: Any) -> bool:
    return all(isinstance(d, int) for d in shape)


def concat(args: OpArgs) -> Work:
    """`cat(tensors, dim)`: bytes = Σ inputs read + output written (= 2·Σ inputs);
    FLOPs = output elements. Legacy empty 1-D inputs ((0,)) are skipped, as PyTorch does."""
    shapes = tuple(s for s in _tensor_list(args) if s != (0,))
    if not shapes:
        raise Unsupported(f"{args.name}: only empty tensors")
    rank = len(shapes[0])
    dim = normalize_dim((parse_ints(args.value(1)) or (0,))[0], rank)
    for s in shapes:
        if len(s) != rank or s[:dim] + s[dim + 1 :] != shapes[0][:dim] + shapes[0][dim + 1 :]:
            raise Unsupported(f"{args.name}: shapes {shapes} do not concatenate on dim {dim}")
    out = (*shapes[0][:dim], sum(s[dim] for s in shapes), *shapes[0][dim + 1 :])
    return _moved(args, shapes, out)


def stack(args: OpArgs) -> Work:
    """`stack(tensors, dim)`: like `cat` with a new dim of size len(tensors)."""
    shapes = _tensor_list(args)
    if len(set(shapes)) != 1:
        raise Unsupported(f"{args.name}: shapes {shapes} differ")
    rank = len(shapes[0]) + 1
    dim = normalize_dim((parse_ints(args.value(1)) or (0,))[0], rank)
    out = (*shapes[0][:dim], len(shapes), *shapes[0][dim:])
    return _moved(args, shapes, out)


def _moved(args: OpArgs, shapes: tuple[Shape, ...], out: Shape) -> Work:
    # traces write 'TensorList' with no element type: bytes stay unknown unless a caller that
    # knows it (e.g. from the kernel name) puts the dtype in types[0]
    dtype = args.types[0] if args.types and size_of(args.types[0]) is not None else None
    size, n_in = size_of(dtype), sum(numel(s) for s in shapes)
    return _vector(
        numel(out),
        total_bytes((n_in, size), (numel(out), size)),
        dtype,
        shapes_in=shapes,
        shape_out=out,
        dtype_in_out=(dtype, dtype),
    )


def _gathered(args: OpArgs, src: int, index: int, out: Shape) -> Work:
    """Read the index tensor and the selected source elements, write the output."""
    dtype, index_dtype = args.dtype(src), args.dtype(index)
    n, n_index = numel(out), numel(args.shape(index))
    size = size_of(dtype)
    return _vector(
        n,
        total_bytes((n_index, size_of(index_dtype)), (n, size), (n, size)),
        dtype,
        shape_in=args.shape(src),
        shape_index=args.shape(index),
        shape_out=out,
        dtype_in_index=(dtype, index_dtype),
    )


def index_select(args: OpArgs) -> Work:
    """`index_select(self, dim, index)`: output = self with dim `dim` resized to len(index)."""
    shape = args.shape(0)
    dim = normalize_dim((parse_ints(args.value(1)) or (0,))[0], len(shape))
    out = (*shape[:dim], numel(args.shape(2)), *shape[dim + 1 :]) if shape else shape
    return _gathered(args, 0, 2, out)


def gather(args: OpArgs) -> Work:
    """`gather(self, dim, index)`: output has the index's shape."""
    return _gathered(args, 0, 2, args.shape(2))


def embedding(args: OpArgs) -> Work:
    """`embedding(weight, indices)`: output = indices.shape + weight.shape[1:]."""
    return _gathered(args, 0, 1, args.shape(1) + args.shape(0)[1:])


INDEX_DTYPES = frozenset({"long int", "int"})


def index(args: OpArgs) -> Work:
    """`index(self, indices)`, only when the index tensors' shapes are known (traces write
    the optional-tensor list as `[]`, type ''; report/op_context.py recovers them from the
    op's children where it can): indices on the leading dims, output =
    broadcast(indices) + self.shape[len(indices):]. Index element size from input 1's dtype
    when it is an integer type (recovered args), else int64."""
    indices = args.dims[1] if len(args.dims) > 1 else ()
    if not indices or not all(isinstance(s, tuple) and s for s in indices):
        raise Unrecorded("index tensor shapes not recorded")
    shape, dtype = args.shape(0), args.dtype(0)
    index_shape = broadcast(*indices)
    out = index_shape + shape[len(indices) :]
    n, size = numel(out), size_of(dtype)
    n_index = sum(numel(s) for s in indices)
    index_dtype = (
        args.types[1] if len(args.types) > 1 and args.types[1] in INDEX_DTYPES else "long int"
    )
    return _vector(
        n,
        total_bytes((n_index, size_of(index_dtype)), (n, size), (n, size)),
        dtype,
        shape_in=shape,
        shape_index=index_shape,
        shape_out=out,
        dtype_in_index=(dtype, index_dtype),
    )


def scatter(in_place: bool):
    def model(args: OpArgs) -> Work:
        """`scatter(self, dim, index, src|value)`: read index (and src where it is a tensor),
        write one element per index entry; the out-of-place form first copies `self`
        (read + write). FLOPs = elements written."""
        shape, dtype = args.shape(0), args.dtype(0)
        n_index, n_self, size = numel(args.shape(2)), numel(shape), size_of(dtype)
        terms = [(n_index, size_of(args.dtype(2))), (n_index, size)]
        if _is_tensor(args, 3) and args.dims[3]:
            terms.append((n_index, size_of(args.dtype(3))))
        if not in_place:
            terms += [(n_self, size), (n_self, size)]
        return _vector(
            n_index + (0 if in_place else n_self),
            total_bytes(*terms),
            dtype,
            shape_in=shape,
            shape_index=args.shape(2),
            shape_out=shape,
            dtype_in_index=(dtype, args.dtype(2)),
        )

    return model


# ---------------------------------------------------------------------------------------------
# Registry

_UNARY = ("copy", "copy_", "clamp_min", "clamp_min_", "clamp_max", "clamp_max_", "sigmoid")
_UNARY += ("rsqrt", "silu", "neg", "pow")
_BINARY = ("add", "add_", "mul", "mul_", "div", "div_", "sigmoid_backward", "threshold_backward")

_UNARY_NEW = {  # name -> FLOPs per element (Triton weights)
    **dict.fromkeys(("relu", "relu_", "abs", "abs_", "neg_", "sigmoid_", "clamp_", "hardtanh"), 1),
    **dict.fromkeys(("hardtanh_", "leaky_relu", "leaky_relu_"), 1),
    **dict.fromkeys(("exp", "exp_", "log", "sin", "cos", "tanh", "tanh_", "erf", "elu", "elu_"), 4),
    **dict.fromkeys(("sqrt", "sqrt_", "reciprocal", "reciprocal_"), 2),
    **dict.fromkeys(("gelu", "gelu_"), 8),
}
_POINTWISE = {f"aten::{name}": Pointwise(cost=cost) for name, cost in _UNARY_NEW.items()}
_POINTWISE |= {
    f"aten::{name}": Pointwise(reads=(0, 1), values=(0, 1)) for name in ("sub", "sub_", "rsub")
}
_POINTWISE |= {
    f"aten::{name}": Pointwise(reads=(0, 1), values=(0, 1), boolean=True)
    for name in ("eq", "ne", "lt", "gt", "le", "ge", "logical_and", "logical_or", "logical_xor")
}
_POINTWISE |= {
    "aten::logical_not": Pointwise(boolean=True),
    "aten::clamp": Pointwise(reads=(0, 1, 2)),  # min/max are read only when they are tensors
    "aten::where": Pointwise(reads=(0, 1, 2), values=(1, 2)),
    "aten::masked_fill": Pointwise(reads=(0, 1, 2), values=(0,)),
    "aten::masked_fill_": Pointwise(reads=(0, 1, 2), values=(0,)),
    "aten::gelu_backward": Pointwise(reads=(0, 1), values=(0, 1), cost=8),  # same erf as fwd
    "aten::silu_backward": Pointwise(reads=(0, 1), values=(0, 1), cost=4),  # a sigmoid
    "aten::mse_loss_backward": Pointwise(reads=(0, 1, 2), values=(1, 2), cost=2),  # (x-y)·s
}

MODELS: dict[str, PerfModel] = {
    **{f"aten::{name}": PerfModel(unary) for name in _UNARY},
    **{f"aten::{name}": PerfModel(binary) for name in _BINARY},
    "LigerSiLUMulFunction": PerfModel(binary),
    **{
        f"aten::replication_pad{k}d": PerfModel(replication_pad(k), needs_values="padding")
        for k in (1, 2, 3)
    },
    **{
        f"aten::upsample_nearest{k}d": PerfModel(
            upsample_nearest(k), needs_values="output size or scale factors"
        )
        for k in (1, 2, 3)
    },
    **{name: PerfModel(model) for name, model in _POINTWISE.items()},
    "aten::fill_": PerfModel(fill),
    "aten::zero_": PerfModel(fill),
    "aten::cat": PerfModel(concat),
    "aten::stack": PerfModel(stack),
    "aten::index_select": PerfModel(index_select, needs_values="index_select dim"),
    "aten::index": PerfModel(index),
    "aten::gather": PerfModel(gather),
    "aten::scatter": PerfModel(scatter(in_place=False)),
    "aten::scatter_": PerfModel(scatter(in_place=True)),
    "aten::embedding": PerfModel(embedding),
}
# ops TraceLens has a model for (the rest are ours): for registry parity decisions
TRACELENS_MODELLED = frozenset(n for n, m in MODELS.items() if m.forward in (unary, binary)) | {
    f"aten::{op}{k}d" for op in ("replication_pad", "upsample_nearest") for k in (1, 2, 3)
}
