"""Batch, layer, group, instance and RMS normalisation: FLOPs and bytes (docs/perf-models.md#norm).

N = elements of the input, C = "channels" (batch/instance/group: shape[1]; layer and RMS
norm: prod(normalized_shape); group-norm backward: shape[1] / groups), E = N / C.

* forward FLOPs = 3C + (3N if training) + 3C + 2N;
  bytes = N·(bpe_in + bpe_out) + W·C·bpe_in, W = 2 + affine + (affine and bias) + 2·training.
* backward FLOPs = C·((3 if not training) + 4E + (5E if mask[0] and training)
  + (2E if not mask[0])); bytes = N·bpe_out + N·bpe_in·(2 if mask[0] and training else 1)
  + (C·bpe_in if training) + (C·bpe_in if affine) + (C·bpe_in·(1 + bias) if affine and training).
* RMS forward FLOPs = E·(2C + 2) + N·(2 if affine else 1); bytes = N·(bpe_in + bpe_out)
  + (C·bpe_in if affine). RMS backward FLOPs = (N if affine) + N + (6N if mask[0])
  + (N + (N if E > 1)) if mask[1] and affine; bytes = N·bpe_out + 2N·bpe_in + (2C·bpe_in if affine).

Fixes to TraceLens (docs/deviations.md#reduce-normalisation): the training flag is parsed
from its string ('False' is False; TraceLens's `bool('False')` is True), and affine/bias come
from whether the optional weight/bias input has a non-empty shape (TraceLens tests
`is not None` on `[]`, always true).
Layer and group norm always compute statistics (training); miopen/cudnn batch-norm backward
carry no flag and count as inference, as in TraceLens. Backward ops without a bias input
count a bias gradient whenever the weight is there; RMS norm has no bias.
Every forward op also gets the backward formula (mask all True) and category `NORM_bwd`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod
from typing import Any

from .base import OpArgs, PerfModel, Shape, Unsupported, Work, numel
from .dtypes import precision
from .elementwise import parse_flag, parse_flags, parse_ints, size_of

BWD_CATEGORY = "NORM_bwd"


@dataclass(frozen=True, slots=True)
class NormShape:
    """One normalisation instance, parsed from its op arguments."""

    shape: Shape
    dtype: str
    stride: Any
    channels: float
    affine: bool
    has_bias: bool
    training: bool
    mask: tuple[bool, ...] | None = None  # backward ops: which gradients are computed

    @property
    def n(self) -> int:
        return numel(self.shape)

    def mask_at(self, i: int) -> bool:
        return True if self.mask is None or i >= len(self.mask) else self.mask[i]

    def params(self) -> dict[str, Any]:
        params = {
            "op_shape": self.shape,
            "dtype_in_out": (self.dtype, None),
            "stride_input": self.stride,
            "stride_output": None,
            "num_channels": self.channels,
            "has_bias": self.has_bias,
            "is_affine": self.affine,
            "is_training": self.training,
        }
        return params if self.mask is None else params | {"output_mask": list(self.mask)}


def norm_flops(s: NormShape) -> float:
    n, c = s.n, s.channels
    return 3 * c + (3 * n if s.training else 0) + 3 * c + 2 * n


def norm_moved(s: NormShape) -> float:
    words = 2 + int(s.affine) + int(s.affine and s.has_bias) + 2 * int(s.training)
    return s.n * 2 + words * s.channels


def norm_bwd_flops(s: NormShape) -> float:
    e, full = s.n / s.channels, s.mask_at(0)
    per_channel = (0 if s.training else 3) + 4 * e
    per_channel += (5 * e if full and s.training else 0) + (0 if full else 2 * e)
    return per_channel * s.channels


def norm_bwd_moved(s: NormShape) -> float:
    n, c = s.n, s.channels
    moved = n + n * (2 if s.mask_at(0) and s.training else 1)
    moved += (c if s.training else 0) + (c if s.affine else 0)
    return moved + (c * (2 if s.has_bias else 1) if s.affine and s.training else 0)


def rms_flops(s: NormShape) -> float:
    return s.n / s.channels * (2 * s.channels + 2) + s.n * (2 if s.affine else 1)


def rms_moved(s: NormShape) -> float:
    return s.n * 2 + (s.channels if s.affine else 0)


def rms_bwd_flops(s: NormShape) -> float:
    n, affine = s.n, s.affine
    flops = (n if affine else 0) + n + (6 * n if s.mask_at(0) else 0)
    if s.mask_at(1) and affine:
        flops += n + (n if s.n / s.channels > 1 else 0)
    return flops


def rms_bwd_moved(s: NormShape) -> float:
    return 3 * s.n + (2 * s.channels if s.affine else 0)


# ---------------------------------------------------------------------------------------------
# Parsing: where each op keeps its weight, bias, flags and normalized shape


@dataclass(frozen=True, slots=True)
class Layout:
    """Argument positions of one op (None: the op has no such input)."""

    input: int = 0
    weight: int | None = 1
    bias: int | bool | None = 2  # a position; False: no bias (RMS); None: follows the weight
    training: int | bool = 5  # a position, or a constant
    normalized: int | None = None  # position of normalized_shape (layer/RMS norm)
    groups: int | None = None  # position of the group count (group-norm backward)
    mask: int | None = None  # position of output_mask
    mask_kept: int = 0  # backward ops: leading output_mask entries the formula reads


def _channels(args: OpArgs, layout: Layout, shape: Shape) -> float:
    if layout.normalized is not None:
        normalized = parse_ints(args.value(layout.normalized))
        if not normalized:
            raise Unsupported(f"{args.name}: normalized_shape '{args.value(layout.normalized)}'")
        return prod(normalized)
    if len(shape) < 2:
        raise Unsupported(f"{args.name}: no channel dim in shape {shape}")
    if layout.groups is None:
        return shape[1]
    groups = parse_ints(args.value(layout.groups))
    if not groups or groups[0] <= 0:
        raise Unsupported(f"{args.name}: group count '{args.value(layout.groups)}'")
    return shape[1] // groups[0] if shape[1] % groups[0] == 0 else shape[1] / groups[0]


def parse(args: OpArgs, layout: Layout) -> NormShape:
    shape = args.shape(layout.input)
    channels = _channels(args, layout, shape)
    if channels <= 0:
        raise Unsupported(f"{args.name}: {channels} channels in shape {shape}")
    affine = layout.weight is not None and args.has_tensor(layout.weight)
    if isinstance(layout.training, bool):
        training = layout.training
    else:
        flag = parse_flag(args.value(layout.training))
        if flag is None:
            raise Unsupported(f"{args.name}: training flag '{args.value(layout.training)}'")
        training = flag
    mask = None
    if layout.mask_kept:
        recorded = parse_flags(args.value(layout.mask)) if layout.mask is not None else None
        mask = (recorded or (True,) * layout.mask_kept)[: layout.mask_kept]
    if isinstance(layout.bias, bool):
        has_bias = layout.bias
    else:
        has_bias = args.has_tensor(layout.bias) if layout.bias is not None else affine
    return NormShape(
        shape=shape,
        dtype=args.dtype(layout.input),
        stride=args.stride(layout.input),
        channels=channels,
        affine=affine,
        has_bias=has_bias,
        training=training,
        mask=mask,
    )


def _work(s: NormShape, flops: float, moved: float) -> Work:
    """`moved` counts elements; every tensor has the input's element size (TraceLens)."""
    size = size_of(s.dtype)
    nbytes = None if size is None else moved * size
    return Work(flops, nbytes, precision(s.dtype), "vector", s.params())


def _needs_values(layout: Layout) -> str | None:
    """What of `Concrete Inputs` the layout reads (docs/perf-models.md#unmodelled), or None."""
    read = [
        ("normalized shape", layout.normalized is not None),
        ("group count", layout.groups is not None),
        ("training flag", not isinstance(layout.training, bool)),
    ]
    found = [what for what, reads in read if reads]
    return "normalisation " + ", ".join(found) if found else None


def _forward(layout: Layout, rms: bool = False) -> PerfModel:
    def forward(args: OpArgs) -> Work:
        s = parse(args, layout)
        return _work(s, *((rms_flops(s), rms_moved(s)) if rms else (norm_flops(s), norm_moved(s))))

    def backward(args: OpArgs) -> Work:
        s = replace(parse(args, layout), mask=(True, True) if rms else (True, True, True))
        if rms:
            return _work(s, rms_bwd_flops(s), rms_bwd_moved(s))
        return _work(s, norm_bwd_flops(s), norm_bwd_moved(s))

    needs = _needs_values(layout)
    return PerfModel(forward, backward=backward, bwd_category=BWD_CATEGORY, needs_values=needs)


def _backward(layout: Layout, rms: bool = False) -> PerfModel:
    """A backward op: its own work is the backward formula, read from its own arguments."""

    def own(args: OpArgs) -> Work:
        s = parse(args, layout)
        if rms:
            return _work(s, rms_bwd_flops(s), rms_bwd_moved(s))
        return _work(s, norm_bwd_flops(s), norm_bwd_moved(s))

    return PerfModel(own, needs_values=_needs_values(layout))


_BATCH = Layout()  # (input, weight, bias, running_mean, running_var, training, ...)
_LAYER = Layout(weight=2, bias=3, training=True, normalized=1)
_GROUP = Layout(weight=2, bias=3, training=True)  # (input, num_groups, weight, bias, ...)
_NATIVE_GROUP = Layout(training=True)  # (input, weight, bias, N, C, HxW, group, eps)
_RMS = Layout(weight=2, bias=False, training=False, normalized=1)
# batch-norm backward: (grad_out, input, weight, running_mean, running_var, save_mean,
# save_invstd, train, eps, output_mask); miopen/cudnn: (input, grad_out, weight, ..., epsilon)
# with no flag and no mask. Only output_mask[0] enters the batch-norm formula.
_BATCH_BWD = Layout(weight=2, bias=None, training=7, mask=9, mask_kept=1)
_VENDOR_BATCH_BWD = Layout(weight=2, bias=None, training=False, mask_kept=1)
_LAYER_BWD = Layout(weight=5, bias=6, training=True, normalized=2, mask=7, mask_kept=3)
_GROUP_BWD = Layout(weight=4, bias=None, training=True, groups=8, mask=9, mask_kept=3)
_RMS_BWD = Layout(weight=4, bias=False, training=False, normalized=2, mask=5, mask_kept=2)

MODELS: dict[str, PerfModel] = {
    **{
        f"aten::{name}": _forward(_BATCH)
        for name in (
            "batch_norm",
            "native_batch_norm",
            "miopen_batch_norm",
            "cudnn_batch_norm",
            "_batch_norm_impl_index",
            "instance_norm",  # training = use_input_stats (CI[5])
        )
    },
    "aten::layer_norm": _forward(_LAYER),
    "aten::native_layer_norm": _forward(_LAYER),
    "aten::group_norm": _forward(_GROUP),
    # aiter's group norm (xDiT VAEs): (input, num_groups, weight, bias, eps), aten's layout
    "aiter::_groupnorm_run": _forward(_GROUP),
    "aten::native_group_norm": _forward(_NATIVE_GROUP),
    "aten::_fused_rms_norm": _forward(_RMS, rms=True),
    "aten::rms_norm": _forward(_RMS, rms=True),
    "aten::native_batch_norm_backward": _backward(_BATCH_BWD),
    "aten::batch_norm_backward": _backward(_BATCH_BWD),
    "aten::miopen_batch_norm_backward": _backward(_VENDOR_BATCH_BWD),
    "aten::cudnn_batch_norm_backward": _backward(_VENDOR_BATCH_BWD),
    "aten::native_layer_norm_backward": _backward(_LAYER_BWD),
    "aten::native_group_norm_backward": _backward(_GROUP_BWD),
    "aten::_fused_rms_norm_backward": _backward(_RMS_BWD, rms=True),
}
# ops TraceLens has a model for (the rest are ours): for registry parity decisions
TRACELENS_MODELLED = frozenset(MODELS) - {"aten::rms_norm", "aten::_batch_norm_impl_index"}
