"""Small ATen ops seen in eager traces: boolean reductions, scalar reads, max pooling,
random fills and `arange`. Shapes and concrete inputs as recorded; new models.

* `all`/`any`: the Reduce formula of reduce.py (FLOPs = input elements; bytes = input read
  + output written, bool).
* `_local_scalar_dense(self)` (`.item()`): a device-to-host copy of one element: bytes =
  the element size, FLOPs = 0 (scored on the memory roof; the launch latency dominates).
* `max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)`:
  output H_o = ⌊(H + 2p − dil·(k − 1) − 1)/s⌋ + 1 (⌈ ⌉ with ceil_mode, a last window that
  starts in the right padding dropped), stride defaulting to the kernel. FLOPs = one
  comparison per window element, N_out·k_h·k_w; bytes = input read + values (input dtype)
  and int64 indices written.
* `max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
  dilation, ceil_mode, indices)`: grad_output and the int64 indices read, grad_input (self's
  shape, grad dtype) written; FLOPs = one accumulate per grad_output element.
* `normal_(self, mean, std, generator)`: self written; FLOPs = 2 per element (z·std + mean).
  The random-number generation (integer Philox rounds, Box-Muller) is not counted.
* `arange(start, end, step, out)`: n = ⌈(end − start)/step⌉ elements of `out`'s dtype
  written; FLOPs = n (the fill convention of elementwise.py). Only the recorded
  `start, end, step` form with concrete values is modelled.
"""

from __future__ import annotations

from math import ceil, floor

from .base import OpArgs, PerfModel, Unsupported, Work, numel
from .dtypes import precision
from .elementwise import (
    parse_flag,
    parse_floats,
    parse_ints,
    size_of,
    total_bytes,
)
from .reduce import REDUCED_DIMS, Reduction, reduce

INDEX_BYTES = 8.0  # int64 pooling indices
NORMAL_FLOPS_PER_ELEMENT = 2


def local_scalar_dense(args: OpArgs) -> Work:
    shape, dtype = args.shape(0), args.dtype(0)
    if numel(shape) != 1:
        raise Unsupported(f"{args.name}: {shape} is not one element")
    return Work(0.0, total_bytes((1, size_of(dtype))), precision(dtype), "vector", {"dtype": dtype})


def _pair(args: OpArgs, i: int, default: tuple[int, int] | None = None) -> tuple[int, int]:
    values = parse_ints(args.value(i))
    if not values:
        if default is None:
            raise Unsupported(f"{args.name}: input {i} '{args.value(i)}'")
        return default
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


def pooled_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    out = (ceil(span / s) if ceil_mode else floor(span / s)) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1  # the last window would start in the right padding
    if out <= 0:
        raise Unsupported(f"pooling {size} with kernel {k}, stride {s}: no output")
    return out


def _pool_geometry(args: OpArgs, first: int, shape: tuple[int, ...]):
    if len(shape) not in (3, 4):
        raise Unsupported(f"{args.name}: input {shape} is not [(N,) C, H, W]")
    kernel = _pair(args, first)
    stride = _pair(args, first + 1, kernel)
    padding = _pair(args, first + 2, (0, 0))
    dilation = _pair(args, first + 3, (1, 1))
    ceil_mode = parse_flag(args.value(first + 4))
    if ceil_mode is None or min(stride) <= 0:
        raise Unsupported(f"{args.name}: stride {stride}, ceil_mode '{args.value(first + 4)}'")
    out = tuple(
        pooled_size(shape[-2 + a], kernel[a], stride[a], padding[a], dilation[a], ceil_mode)
        for a in range(2)
    )
    return (*shape[:-2], *out), kernel


def max_pool2d(args: OpArgs) -> Work:
    shape, dtype = args.shape(0), args.dtype(0)
    out, kernel = _pool_geometry(args, 1, shape)
    n_out = numel(out)
    size = size_of(dtype)
    return Work(
        n_out * kernel[0] * kernel[1],
        total_bytes((numel(shape), size), (n_out, size), (n_out, INDEX_BYTES)),
        precision(dtype),
        "vector",
        {"op_shape": shape, "out_shape": out, "kernel_size": kernel, "dtype": dtype},
    )


def max_pool2d_backward(args: OpArgs) -> Work:
    grad, shape, dtype = args.shape(0), args.shape(1), args.dtype(0)
    out, kernel = _pool_geometry(args, 2, shape)
    if out != grad or args.shape(7) != grad:
        raise Unsupported(f"{args.name}: grad {grad}, indices {args.shape(7)}, expected {out}")
    n_out, size = numel(grad), size_of(dtype)
    return Work(
        n_out,
        total_bytes((n_out, size), (n_out, INDEX_BYTES), (numel(shape), size)),
        precision(dtype),
        "vector",
        {"op_shape": shape, "grad_shape": grad, "kernel_size": kernel, "dtype": dtype},
    )


def normal_(args: OpArgs) -> Work:
    shape, dtype = args.shape(0), args.dtype(0)
    n = numel(shape)
    return Work(
        NORMAL_FLOPS_PER_ELEMENT * n,
        total_bytes((n, size_of(dtype))),
        precision(dtype),
        "vector",
        {"op_shape": shape, "dtype_out": dtype},
    )


def arange(args: OpArgs) -> Work:
    if len(args.dims) != 4:
        raise Unsupported(f"{args.name}: not the recorded (start, end, step, out) form")
    args.shape(3)  # the out tensor must be recorded: it gives the dtype
    bounds = [parse_floats(args.value(i)) for i in range(3)]
    if any(not b for b in bounds) or bounds[2][0] == 0:
        raise Unsupported(f"{args.name}: start/end/step not recorded")
    start, end, step = (b[0] for b in bounds)
    n = max(ceil((end - start) / step), 0)
    dtype = args.dtype(3)
    return Work(
        float(n),
        total_bytes((n, size_of(dtype))),
        precision(dtype),
        "vector",
        {"num_elems": n, "start_end_step": (start, end, step), "dtype_out": dtype},
    )


_BOOL_REDUCE = PerfModel(reduce(Reduction()), needs_values=REDUCED_DIMS)
POOLING = "pooling kernel/stride/padding"

MODELS: dict[str, PerfModel] = {
    "aten::all": _BOOL_REDUCE,
    "aten::any": _BOOL_REDUCE,
    "aten::_local_scalar_dense": PerfModel(local_scalar_dense),
    "aten::max_pool2d_with_indices": PerfModel(max_pool2d, needs_values=POOLING),
    "aten::max_pool2d_with_indices_backward": PerfModel(max_pool2d_backward, needs_values=POOLING),
    "aten::normal_": PerfModel(normal_),
    "aten::arange": PerfModel(arange, needs_values="arange start/end/step"),
}
