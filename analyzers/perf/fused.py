"""Fused inference kernels from vLLM, SGLang and aiter: RoPE, fused RMSNorm, SiLU-and-mul, fp8
quantisation. New models (TraceLens leaves them in `other`, or counts only the output of
the `*_and_mul` ops); argument positions follow the recorded traces:

* `rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox)`, in place.
  R = rotated elements of q and k = numel·rot_dim/head_size (rot_dim = cache.shape[-1]).
  FLOPs = 3·R (two multiplies and an add per element, FusedRoPE's count); bytes = R read +
  R written (q/k dtype) + T cache rows of rot_dim (cos and sin halves) + T int64 positions.
* `fused_add_rms_norm(input, residual, weight, eps)`, in place: residual ← input + residual,
  input ← rms_norm(residual)·weight. FLOPs = N (add) + E·(2C + 2) + 2N (RMS with weight,
  docs/perf-models.md#norm); bytes = 2N read + 2N written + C weight.
  `rms_norm(out, input, weight, eps)`:
  FLOPs = E·(2C + 2) + 2N; bytes = N read + N written + C weight. aiter's
  `rmsnorm(out, input, weight, eps)` has the same layout and formula; its
  `add_rmsnorm(out, input, residual_in, residual_out, weight, eps)` writes the sum to
  residual_out and the norm to out: the `fused_add_rms_norm` formula (2N read + 2N written).
  `rmsnorm2d_fwd_with_add_ck` has that layout and formula; aiter's `rms_norm(input, weight,
  eps, ...)` returns its output (input's shape and dtype): the `rms_norm` formula.
* `silu_and_mul(out, input)` (and the gelu variants): input (T, 2d), out (T, d). FLOPs per
  output element = activation + 1 multiply (silu 4 + 1, gelu 8 + 1; the Triton weights);
  bytes = 2·T·d read + T·d written. Params keep TraceLens's UnaryElementwise keys.
* `*_scaled_fp8_quant(out, input, scale[, scale_ub])`: bytes = input read + fp8 output
  written + scales. Static: 2 FLOPs per element (scale, saturate). Dynamic per tensor: an
  abs-max pass first, so the input is read twice and 4 FLOPs per element; per token: one
  pass (the row stays on chip), 4 FLOPs per element, one fp32 scale per token.
"""

from __future__ import annotations

from .base import OpArgs, PerfModel, Unsupported, Work, numel
from .dtypes import precision
from .elementwise import parse_ints, size_of, total_bytes

ROPE_FLOPS_PER_ELEMENT = 3
INDEX_BYTES = 8  # int64 positions


def _rotated(numel_x: int, head_size: int | None, rot_dim: int) -> int:
    if head_size and 0 < rot_dim < head_size and numel_x % head_size == 0:
        return numel_x // head_size * rot_dim
    return numel_x


def rotary_embedding(args: OpArgs) -> Work:
    """In-place RoPE on q and k (k optional) from a (max_pos, rot_dim) cos/sin cache."""
    positions, query, cache = args.shape(0), args.shape(1), args.shape(4)
    if not cache:
        raise Unsupported(f"{args.name}: cos/sin cache has no shape")
    head = parse_ints(args.value(3))
    head_size, rot_dim = (head[0] if head else None), cache[-1]
    rotated = [_rotated(numel(query), head_size, rot_dim)]
    if args.has_tensor(2):
        rotated.append(_rotated(numel(args.shape(2)), head_size, rot_dim))
    tokens, elems = numel(positions), sum(rotated)
    size, cache_size = size_of(args.dtype(1)), size_of(args.dtype(4))
    nbytes = total_bytes((2 * elems, size), (tokens * rot_dim, cache_size))
    return Work(
        ROPE_FLOPS_PER_ELEMENT * elems,
        None if nbytes is None else nbytes + tokens * INDEX_BYTES,
        precision(args.dtype(1)),
        "vector",
        {
            "num_tokens": tokens,
            "shape_q": query,
            "shape_k": args.shape(2) if args.has_tensor(2) else None,
            "head_size": head_size,
            "rot_dim": rot_dim,
            "dtype_q_cache": (args.dtype(1), args.dtype(4)),
        },
    )


def _rms_flops(n: int, channels: int) -> float:
    if channels <= 0:
        raise Unsupported(f"RMS norm over {channels} channels")
    return n / channels * (2 * channels + 2) + 2 * n


def _rms_params(args: OpArgs, x: int, channels: int) -> dict[str, object]:
    return {"op_shape": args.shape(x), "num_channels": channels, "dtype_in_out": args.dtype(x)}


def fused_add_rms_norm(args: OpArgs) -> Work:
    """input and residual read and both rewritten, weight read."""
    shape, weight = args.shape(0), args.shape(2)
    if args.shape(1) != shape:
        raise Unsupported(f"{args.name}: residual {args.shape(1)} differs from input {shape}")
    n, c = numel(shape), numel(weight)
    nbytes = total_bytes(
        (2 * n, size_of(args.dtype(0))),
        (2 * n, size_of(args.dtype(1))),
        (c, size_of(args.dtype(2))),
    )
    return Work(
        n + _rms_flops(n, c), nbytes, precision(args.dtype(0)), "vector", _rms_params(args, 0, c)
    )


def add_rms_norm_out(args: OpArgs) -> Work:
    """aiter's out-of-place form: input and residual_in read, out and residual_out written."""
    shapes = [args.shape(i) for i in range(4)]
    if any(s != shapes[0] for s in shapes):
        raise Unsupported(f"{args.name}: out/input/residual shapes differ: {shapes}")
    n, c = numel(shapes[0]), numel(args.shape(4))
    nbytes = total_bytes(
        *((n, size_of(args.dtype(i))) for i in range(4)), (c, size_of(args.dtype(4)))
    )
    return Work(
        n + _rms_flops(n, c), nbytes, precision(args.dtype(1)), "vector", _rms_params(args, 1, c)
    )


def rms_norm(args: OpArgs) -> Work:
    """`rms_norm(out, input, weight, eps)`: input and weight read, out written."""
    out, shape, weight = args.shape(0), args.shape(1), args.shape(2)
    n, c = numel(shape), numel(weight)
    nbytes = total_bytes(
        (n, size_of(args.dtype(1))),
        (numel(out), size_of(args.dtype(0))),
        (c, size_of(args.dtype(2))),
    )
    return Work(
        _rms_flops(n, c), nbytes, precision(args.dtype(1)), "vector", _rms_params(args, 1, c)
    )


def rms_norm_returning(args: OpArgs) -> Work:
    """aiter's `rms_norm(input, weight, eps, ...)`: the output, not an input, has the
    input's shape and dtype; the `rms_norm` formula."""
    shape, weight = args.shape(0), args.shape(1)
    n, c = numel(shape), numel(weight)
    nbytes = total_bytes((2 * n, size_of(args.dtype(0))), (c, size_of(args.dtype(1))))
    return Work(
        _rms_flops(n, c), nbytes, precision(args.dtype(0)), "vector", _rms_params(args, 0, c)
    )


def gated(activation_flops: int):
    def model(args: OpArgs) -> Work:
        """`act_and_mul(out, input)`: out = act(input[..., :d]) · input[..., d:]."""
        first, second = args.shape(0), args.shape(1) if args.has_tensor(1) else None
        if not first or not second:
            raise Unsupported(f"{args.name}: output and input shapes not both recorded")
        if second[-1] == 2 * first[-1]:
            out, x = 0, 1
        elif first[-1] == 2 * second[-1]:
            out, x = 1, 0
        else:
            raise Unsupported(f"{args.name}: no (T, 2d) input beside a (T, d) output")
        n_out = numel(args.shape(out))
        return Work(
            (activation_flops + 1) * n_out,
            total_bytes((2 * n_out, size_of(args.dtype(x))), (n_out, size_of(args.dtype(out)))),
            precision(args.dtype(x)),
            "vector",
            {
                "op_shape": args.shape(0),
                "dtype_in_out": (args.dtype(0), args.dtype(1)),
                "stride_input": args.stride(0),
                "stride_output": args.stride(1),
            },
        )

    return model


def fp8_quant(flops_per_element: int, input_reads: int, per_token: bool):
    def model(args: OpArgs) -> Work:
        """`*_scaled_fp8_quant(out, input, scale, ...)`: input read, 1-byte output written."""
        out, shape = args.shape(0), args.shape(1)
        n = numel(shape)
        scales = n // shape[-1] if per_token and shape and shape[-1] else 1
        out_size = size_of(args.dtype(0)) or 1.0  # fp8 out, whatever its spelling
        nbytes = total_bytes(
            (input_reads * n, size_of(args.dtype(1))), (numel(out), out_size), (scales, 4.0)
        )
        return Work(
            flops_per_element * n,
            nbytes,
            precision(args.dtype(1)),
            "vector",
            {"op_shape": shape, "dtype_in_out": (args.dtype(1), args.dtype(0)), "scales": scales},
        )

    return model


_ROPE = PerfModel(rotary_embedding)
_ADD_RMS = PerfModel(fused_add_rms_norm)
_SILU = PerfModel(gated(activation_flops=4))
_GELU = PerfModel(gated(activation_flops=8))

MODELS: dict[str, PerfModel] = {
    "_C::rotary_embedding": _ROPE,
    "sgl_kernel::rotary_embedding": _ROPE,
    "vllm::rotary_embedding": _ROPE,
    "_C::fused_add_rms_norm": _ADD_RMS,
    "vllm::fused_add_rms_norm": _ADD_RMS,
    "_C::rms_norm": PerfModel(rms_norm),
    "aiter::rmsnorm": PerfModel(rms_norm),
    "aiter::add_rmsnorm": PerfModel(add_rms_norm_out),
    # aiter's CK norms under vLLM: (out, input, residual_in, residual_out, weight, eps, ...)
    "aiter::rmsnorm2d_fwd_with_add_ck": PerfModel(add_rms_norm_out),
    "aiter::rms_norm": PerfModel(rms_norm_returning),
    "_C::silu_and_mul": _SILU,
    "aiter::silu_and_mul": _SILU,
    "sgl_kernel::silu_and_mul": _SILU,
    "aiter::gelu_and_mul": _GELU,
    "aiter::gelu_tanh_and_mul": _GELU,
    "_C::static_scaled_fp8_quant": PerfModel(fp8_quant(2, input_reads=1, per_token=False)),
    "_C::dynamic_scaled_fp8_quant": PerfModel(fp8_quant(4, input_reads=2, per_token=False)),
    "_C::dynamic_per_token_scaled_fp8_quant": PerfModel(
        fp8_quant(4, input_reads=1, per_token=True)
    ),
}
# ops TraceLens has a model for (FusedRoPE, UnaryElementwise; our formulas differ)
TRACELENS_MODELLED = frozenset(
    {"sgl_kernel::rotary_embedding", "_C::silu_and_mul", "aiter::silu_and_mul"}
    | {"sgl_kernel::silu_and_mul", "aiter::gelu_and_mul", "aiter::gelu_tanh_and_mul"}
)
