"""Convolution: FLOPs and bytes of conv1d/2d/3d, forward and backward.

See docs/perf-models.md#convolution.

Forward FLOPs = 2·prod(w[1:])·prod(out) (prod(x) when transposed) + prod(out) if bias;
backward FLOPs = grad-input + grad-weight (each equal to the forward conv) + prod(out) if bias.
`w[1]` is already C_in/groups, so groups need no extra factor.

Deliberate differences from TraceLens (docs/deviations.md, "CONV"):
- Each tensor is sized with its own dtype (TraceLens rejects mixed input/weight dtypes).
- Backward bias bytes are bytes (TraceLens adds prod(out) + C_out *elements*).
- Forward bias is the optional tensor input 2 (TraceLens tests `len(dims) == 3`, never true on
  real traces); backward bias is the third entry of `output_mask` (else a non-empty
  `bias_sizes`), where TraceLens tests the shape of the `bias_sizes` int list (always empty).
- Transposed output channels are w[1]·groups (TraceLens: w[1]).
- Concrete Inputs are read by a small literal parser, never `eval`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod
from typing import Any

from .base import OpArgs, PerfModel, Shape, Unsupported, Work, numel
from .dtypes import bytes_per_element, precision

# without Concrete Inputs the output size is unknown and no default is a bound, so such a row
# is unmodelled (docs/perf-models.md#unmodelled)
GEOMETRY = "convolution stride/padding/dilation"

ConcreteValue = int | float | bool | tuple[int | float | bool, ...] | None


def parse_literal(text: str) -> ConcreteValue:
    """A Concrete Inputs string: '' / 'None' -> None, 'True' -> True, '[1, 1]' -> (1, 1)."""
    text = text.strip()
    if text in ("", "None"):
        return None
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return tuple(_scalar(part) for part in inner.split(",")) if inner else ()
    return _scalar(text)


def _scalar(text: str) -> int | float | bool:
    text = text.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise Unsupported(f"cannot read concrete input {text!r}") from None


@dataclass(frozen=True, slots=True)
class ConvShape:
    """Input x (N, C_in, *in), weight w, output out (N, C_out, *out); bpe None = unknown."""

    x: Shape
    w: Shape
    out: Shape
    transposed: bool
    bias: bool
    bias_elems: int  # C_out for a 1-D bias
    bpe_x: float | None
    bpe_w: float | None
    bpe_out: float | None
    bpe_bias: float | None


def conv_flops(s: ConvShape) -> int:
    per_element = 2 * prod(s.w[1:])
    conv = (prod(s.x) if s.transposed else prod(s.out)) * per_element
    return conv + (prod(s.out) if s.bias else 0)


def conv_bytes(s: ConvShape) -> float | None:
    if s.bpe_x is None or s.bpe_w is None or s.bpe_out is None:
        return None
    moved = prod(s.x) * s.bpe_x + prod(s.w) * s.bpe_w + prod(s.out) * s.bpe_out
    if not s.bias:
        return moved
    return None if s.bpe_bias is None else moved + s.bias_elems * s.bpe_bias


def conv_bwd_flops(s: ConvShape) -> int:
    without_bias = conv_flops(replace(s, bias=False))
    return 2 * without_bias + (prod(s.out) if s.bias else 0)


def conv_bwd_bytes(s: ConvShape) -> float | None:
    """grad-input and grad-weight each move out + w + x; grad-bias reads out, writes C_out."""
    if s.bpe_x is None or s.bpe_w is None or s.bpe_out is None:
        return None
    moved = 2 * (prod(s.out) * s.bpe_out + prod(s.w) * s.bpe_w + prod(s.x) * s.bpe_x)
    if not s.bias:
        return moved
    if s.bpe_bias is None:
        return None
    return moved + prod(s.out) * s.bpe_out + s.bias_elems * s.bpe_bias


def output_shape(
    x: Shape,
    w: Shape,
    stride: Shape,
    padding: Shape,
    dilation: Shape,
    out_pad: Shape,
    *,
    transposed: bool,
    groups: int,
) -> Shape:
    """(N, C_out, *spatial): floor((in + 2p - d(k-1) - 1)/s) + 1, or for a transposed conv
    (in - 1)s - 2p + d(k-1) + output_padding + 1."""
    spatial = []
    for i, (size, k) in enumerate(zip(x[2:], w[2:], strict=True)):
        reach = dilation[i] * (k - 1)
        if transposed:
            spatial.append((size - 1) * stride[i] - 2 * padding[i] + reach + out_pad[i] + 1)
        else:
            span = size + 2 * padding[i] - reach - 1
            if span < 0 or stride[i] <= 0:
                raise Unsupported(f"kernel larger than padded input ({x}, {w})")
            spatial.append(span // stride[i] + 1)
    channels = w[1] * groups if transposed else w[0]
    return (x[0], channels, *spatial)


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where one conv op keeps its arguments (indices into Input Dims / Concrete Inputs)."""

    x: int
    w: int
    stride: int  # then padding, dilation, transposed, output_padding, groups follow
    grad_out: int | None = None  # backward op: grad_output tensor (its dtype sizes `out`)


FORWARD = _Layout(x=0, w=1, stride=3)
BACKWARD = _Layout(x=1, w=2, stride=4, grad_out=0)


def _spatial(args: OpArgs, i: int, ndims: int, default: int) -> Shape:
    value = parse_literal(args.value(i))
    if value is None:
        return (default,) * ndims
    values = value if isinstance(value, tuple) else (value,)
    if len(values) == 1:
        values = values * ndims
    if len(values) != ndims or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise Unsupported(f"{args.name}: input {i} {args.value(i)!r} is not {ndims} ints")
    return tuple(int(v) for v in values)


def _flag(args: OpArgs, i: int) -> bool:
    value = parse_literal(args.value(i))
    if value is None or value in (0, 1):
        return bool(value)
    raise Unsupported(f"{args.name}: input {i} {args.value(i)!r} is not a bool")


def _bpe(args: OpArgs, i: int) -> float | None:
    return bytes_per_element(args.dtype(i))


def _strides(args: OpArgs, i: int) -> Shape | None:
    stride = args.stride(i)
    return tuple(stride) if isinstance(stride, tuple) else None


def _backward_bias(args: OpArgs) -> tuple[bool, int]:
    """(bias?, C_out) of convolution_backward: output_mask[2], else non-empty bias_sizes."""
    mask = parse_literal(args.value(10))
    sizes = parse_literal(args.value(3))
    elems = prod(sizes) if isinstance(sizes, tuple) and sizes else 0
    if isinstance(mask, tuple) and len(mask) == 3:
        return bool(mask[2]), elems
    return elems > 0, elems


def parse(args: OpArgs, layout: _Layout) -> tuple[ConvShape, dict[str, Any]]:
    """The conv shape and TraceLens's `perf_params` for one signature."""
    x, w = args.shape(layout.x), args.shape(layout.w)
    ndims = len(x) - 2
    if ndims not in (1, 2, 3) or len(w) != len(x):
        raise Unsupported(f"{args.name}: input {x} / weight {w} is not a conv1d/2d/3d")
    at = layout.stride
    stride = _spatial(args, at, ndims, 1)
    padding = _spatial(args, at + 1, ndims, 0)
    dilation = _spatial(args, at + 2, ndims, 1)
    transposed = _flag(args, at + 3)
    out_pad = _spatial(args, at + 4, ndims, 0)
    groups = parse_literal(args.value(at + 5))
    groups = 1 if groups is None else groups
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise Unsupported(f"{args.name}: groups {args.value(at + 5)!r} is not a positive int")
    out = output_shape(
        x, w, stride, padding, dilation, out_pad, transposed=transposed, groups=groups
    )
    bpe_x = _bpe(args, layout.x)
    if layout.grad_out is None:  # forward: optional bias tensor right after the weight
        bias_at = layout.w + 1
        bias = args.has_tensor(bias_at)
        bias_elems = numel(args.shape(bias_at)) if bias else 0
        bpe_out, bpe_bias = bpe_x, _bpe(args, bias_at) if bias else None
    else:  # backward: grad_bias has grad_output's dtype
        bias, bias_elems = _backward_bias(args)
        bias_elems = bias_elems or out[1]
        bpe_out = bpe_bias = _bpe(args, layout.grad_out)
    shape = ConvShape(
        x, w, out, transposed, bias, bias_elems, bpe_x, _bpe(args, layout.w), bpe_out, bpe_bias
    )
    params = {
        "convNd": f"conv{ndims}d",
        "input_shape": x,
        "filter_shape": w,
        "dtype_input_weight": (args.dtype(layout.x), args.dtype(layout.w)),
        "input_stride": _strides(args, layout.x),
        "weight_stride": _strides(args, layout.w),
        "bias": bias,
        "stride": stride,
        "padding": padding,
        "dilation": dilation,
        "transposed_conv": transposed,
        "output_padding": out_pad,
        "groups": groups,
    }
    return shape, params


def _work(args: OpArgs, layout: _Layout, backward: bool) -> Work:
    shape, params = parse(args, layout)
    flops = conv_bwd_flops(shape) if backward else conv_flops(shape)
    moved = conv_bwd_bytes(shape) if backward else conv_bytes(shape)
    return Work(flops, moved, precision(args.dtype(layout.x)), "matrix", params)


def convolution(args: OpArgs) -> Work:
    """aten::convolution / aten::_convolution(input, weight, bias?, stride, padding, dilation,
    transposed, output_padding, groups, ...)."""
    return _work(args, FORWARD, backward=False)


def convolution_as_backward(args: OpArgs) -> Work:
    """The backward pass of a forward convolution signature (grad-input, grad-weight, bias)."""
    return _work(args, FORWARD, backward=True)


def convolution_backward(args: OpArgs) -> Work:
    """aten::convolution_backward(grad_output, input, weight, bias_sizes, stride, padding,
    dilation, transposed, output_padding, groups, output_mask): the backward formulas."""
    return _work(args, BACKWARD, backward=True)


_FORWARD_MODEL = PerfModel(convolution, convolution_as_backward, "CONV_bwd", GEOMETRY)

MODELS: dict[str, PerfModel] = {
    "aten::convolution": _FORWARD_MODEL,
    "aten::_convolution": _FORWARD_MODEL,
    "aten::convolution_backward": PerfModel(convolution_backward, needs_values=GEOMETRY),
}
