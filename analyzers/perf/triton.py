"""Inductor-generated Triton kernels recorded as ops (`triton_poi_/red_/per_fused_*`).

PyTorch >= 2.4 records each Inductor kernel launch as a cpu_op with its tensor inputs and,
as trailing scalar inputs, the element counts (`xnumel`, and `rnumel` for reductions). The
fused ATen ops are read off the kernel name; FLOPs are their per-element costs times the
element count. The recorded tensors are all of the kernel's pointer arguments, outputs
included (`in_ptr*`, `out_ptr*`, `in_out_ptr*`), so bytes count each once: a pointwise kernel
with a single pointer updates it in place and counts it twice (read and write). TraceLens adds
one more output write to every pointwise kernel, which counts the output twice
(docs/deviations.md). An `in_out_ptr` beside other pointers is counted once, so bytes are a
lower bound there, never an overestimate that would push efficiency past the roof.
"""

from __future__ import annotations

import re
from functools import cache

from .base import OpArgs, PerfModel, Unsupported, Work, numel
from .dtypes import bytes_per_element, precision

NAME = re.compile(r"^triton_(?P<kind>poi|red|per)_fused_(?P<ops>.+?)(?:_\d+)?$")

# FLOPs per element of each ATen op as it appears in Inductor kernel names.
OP_COST: dict[str, int] = {
    **dict.fromkeys(
        [
            "_unsafe_view",
            "view",
            "clone",
            "copy",
            "_to_copy",
            "embedding",
            "permute",
            "transpose",
            "expand",
            "slice",
            "select",
            "cat",
            "index",
            "squeeze",
            "unsqueeze",
            "reshape",
            "full",
            "zeros",
            "ones",
            "constant_pad_nd",
            "convert_element_type",
            "detach",
            "alias",
            "lift_fresh",
        ],
        0,
    ),
    **dict.fromkeys(
        [
            "add",
            "sub",
            "mul",
            "div",
            "relu",
            "abs",
            "neg",
            "mean",
            "sum",
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            "maximum",
            "minimum",
            "max",
            "min",
            "amax",
            "amin",
            "bitwise_and",
            "bitwise_or",
            "bitwise_not",
            "bitwise_xor",
            "where",
            "clamp",
            "clamp_min",
            "clamp_max",
            "fill",
            "remainder",
            "floor",
            "ceil",
            "round",
            "sign",
            "logical_and",
            "logical_or",
            "logical_not",
            "any",
            "all",
            "argmax",
            "argmin",
            "masked_fill",
            "rsub",
        ],
        1,
    ),
    **dict.fromkeys(["pow", "sqrt", "rsqrt", "var", "var_mean", "reciprocal"], 2),
    **dict.fromkeys(
        [
            "exp",
            "exp2",
            "log",
            "log2",
            "log1p",
            "expm1",
            "sigmoid",
            "tanh",
            "silu",
            "softplus",
            "sin",
            "cos",
            "erf",
        ],
        4,
    ),
    "gelu": 8,
}
_LONGEST = max(len(op.split("_")) for op in OP_COST)


@cache
def fused_ops(kernel_name: str) -> tuple[str, ...]:
    """ATen ops in an Inductor kernel name, longest match first (`bitwise_and` over `and`)."""
    match = NAME.match(kernel_name)
    if not match:
        return ()
    tokens = match.group("ops").split("_")
    ops: list[str] = []
    i = 0
    while i < len(tokens):
        # widest first; `_unsafe_view` arrives as the tokens "", "unsafe", "view"
        for width in range(min(_LONGEST, len(tokens) - i), 0, -1):
            piece = "_".join(tokens[i : i + width])
            if piece in OP_COST:
                ops.append(piece)
                i += width
                break
        else:
            i += 1  # an unknown token (a buffer name, a dtype) costs nothing
    return tuple(dict.fromkeys(ops))


def _element_counts(args: OpArgs, reduction: bool) -> tuple[int, int]:
    ints = []
    for i, text in enumerate(args.concrete):
        if not args.has_tensor(i) and text.strip().lstrip("-").isdigit():
            ints.append(int(text))
    if reduction and len(ints) >= 2:
        return ints[-2], ints[-1]
    if ints:
        return ints[-1], 1
    raise Unsupported(f"{args.name}: no element count among the recorded scalar inputs")


def triton_work(args: OpArgs) -> Work:
    match = NAME.match(args.name)
    if match is None:
        raise Unsupported(f"{args.name}: not an Inductor kernel name")
    reduction = match.group("kind") in ("red", "per")
    xnumel, rnumel = _element_counts(args, reduction)
    ops = fused_ops(args.name)
    flops = sum(OP_COST[op] for op in ops) * xnumel * rnumel
    nbytes = 0.0
    pointers = 0
    first_dtype: str | None = None
    for i in range(len(args.dims)):
        if not args.has_tensor(i):
            continue
        size = bytes_per_element(args.dtype(i))
        if size is None:
            raise Unsupported(f"{args.name}: unknown element size for '{args.dtype(i)}'")
        tensor_bytes = numel(args.shape(i)) * size
        nbytes += tensor_bytes
        pointers += 1
        if first_dtype is None:
            first_dtype = args.dtype(i)
    if first_dtype is None:
        raise Unsupported(f"{args.name}: no tensor inputs recorded")
    if not reduction and pointers == 1:
        nbytes += tensor_bytes  # its only buffer, updated in place: read and written
    return Work(
        flops=flops,
        bytes=nbytes,
        precision=precision(first_dtype) if first_dtype else None,
        unit="vector",
        params={
            "fused_ops": ", ".join(f"aten.{op}" for op in ops),
            "xnumel": xnumel,
            "rnumel": rnumel,
        },
    )


TRITON_MODEL = PerfModel(forward=triton_work)


def is_triton_kernel_op(name: str) -> bool:
    return NAME.match(name) is not None
