"""Scaled dot-product attention (docs/perf-models.md#sdpa): FLOPs and bytes, forward and backward.

Forward FLOPs = 2·B·H_Q·N_Q·N_KV·d_qk (QKᵀ) + 2·B·H_Q·N_Q·N_KV·d_v (PV), softmax ignored.
Backward FLOPs = [flash: recompute QKᵀ] + dV + dP + dQ + dK, with the GQA head reduction
B·N_KV·d·(H_Q//H_KV - 1) added to dV and dK. Causal masks scale the whole total by
`causal_fraction`. Bytes: Q, K, V read and O written (forward); Q, K, V, dO read and dQ, dK, dV
written (backward); each tensor at its own dtype's size (O, dO, dQ at Q's, dK at K's, dV at V's).

Deliberate differences from TraceLens (docs/deviations.md, "SDPA"):
- causal with N_Q != N_KV counts the unmasked (q, k) pairs (TraceLens raises); N_Q == N_KV keeps
  TraceLens's exact halving.
- bytes use the real element size (TraceLens assumes 2 bytes for most ops).
- flash_attn::_flash_attn_backward reads dropout_p/causal at inputs 9/11 and
  aiter::_flash_attn_backward reads q, k, v at inputs 1, 2, 3, their real positions.
- aiter ops report `dtype_A_B` too (so they get a compute precision).
- Concrete Inputs are parsed as literals, never `eval`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal

from .base import OpArgs, PerfModel, Shape, Unsupported, Work
from .dtypes import bytes_per_element, precision

Layout = Literal["bhnd", "bnhd", "thd"]


@dataclass(frozen=True, slots=True)
class AttnShape:
    """Attention of B·H_Q query heads over N_KV keys; bpe None = unknown element size."""

    b: int
    n_q: int
    h_q: int
    n_kv: int
    h_kv: int
    d_qk: int
    d_v: int
    causal: bool
    bottom_right: bool  # causal mask aligned to the last key (flash-attn) or the first (PyTorch)
    flash_impl: bool  # backward recomputes QKᵀ
    bpe_q: float | None
    bpe_k: float | None
    bpe_v: float | None


def causal_pairs(n_q: int, n_kv: int, bottom_right: bool) -> int:
    """Unmasked (query, key) pairs of one head under a causal mask.

    Top-left (PyTorch `is_causal`, mask = ones(N_Q, N_KV).tril()): query i (0-based) sees keys
    j <= i, i.e. min(i + 1, N_KV) keys, so the sum over i < N_Q is
        N_Q·(N_Q + 1)/2                          if N_Q <= N_KV
        N_KV·(N_KV + 1)/2 + (N_Q - N_KV)·N_KV    if N_Q >  N_KV.
    Bottom-right (flash-attn >= 2.1, aiter, FA3): query i sees keys j <= i + N_KV - N_Q, i.e.
    clamp(i + N_KV - N_Q + 1, 0, N_KV) keys, so the sum is
        N_Q·N_KV - N_Q·(N_Q - 1)/2               if N_Q <= N_KV (rectangle minus triangle)
        N_KV·(N_KV + 1)/2                        if N_Q >  N_KV (the first N_Q - N_KV rows
                                                 see nothing).
    """
    if bottom_right:
        if n_q <= n_kv:
            return n_q * n_kv - n_q * (n_q - 1) // 2
        return n_kv * (n_kv + 1) // 2
    if n_q <= n_kv:
        return n_q * (n_q + 1) // 2
    return n_kv * (n_kv + 1) // 2 + (n_q - n_kv) * n_kv


def causal_fraction(s: AttnShape) -> float:
    """Share of the N_Q×N_KV score matrix computed: 1, exactly 1/2 when square and causal (as
    TraceLens), else causal_pairs / (N_Q·N_KV)."""
    if not s.causal:
        return 1.0
    if s.n_q == s.n_kv:
        return 0.5
    return causal_pairs(s.n_q, s.n_kv, s.bottom_right) / (s.n_q * s.n_kv)


def sdpa_flops(s: AttnShape) -> float:
    if s.n_q == 0 or s.n_kv == 0:
        return 0.0
    scores = s.b * s.h_q * s.n_q * s.n_kv
    return (2 * scores * s.d_qk + 2 * scores * s.d_v) * causal_fraction(s)


def sdpa_bwd_flops(s: AttnShape) -> float:
    if s.n_q == 0 or s.n_kv == 0:
        return 0.0
    scores = s.b * s.h_q * s.n_q * s.n_kv
    group = s.h_q // s.h_kv - 1  # GQA: sum dK, dV over the query heads sharing a KV head
    total = 2 * scores * s.d_qk if s.flash_impl else 0  # recompute QKᵀ
    total += 2 * scores * s.d_v + s.b * s.n_kv * s.d_v * group  # dV = Pᵀ·dO
    total += 2 * scores * s.d_v  # dP = dO·Vᵀ
    total += 2 * scores * s.d_qk  # dQ = dS·K
    total += 2 * scores * s.d_qk + s.b * s.n_kv * s.d_qk * group  # dK = dSᵀ·Q
    return total * causal_fraction(s)


def _elements(s: AttnShape) -> tuple[int, int, int, int]:
    """Elements of Q, K, V and O (O has Q's rows and V's head size)."""
    return (
        s.b * s.n_q * s.h_q * s.d_qk,
        s.b * s.n_kv * s.h_kv * s.d_qk,
        s.b * s.n_kv * s.h_kv * s.d_v,
        s.b * s.n_q * s.h_q * s.d_v,
    )


def sdpa_bytes(s: AttnShape) -> float | None:
    if s.bpe_q is None or s.bpe_k is None or s.bpe_v is None:
        return None
    q, k, v, o = _elements(s)
    return q * s.bpe_q + k * s.bpe_k + v * s.bpe_v + o * s.bpe_q


def sdpa_bwd_bytes(s: AttnShape) -> float | None:
    """Read Q, K, V, dO; write dQ, dK, dV."""
    if s.bpe_q is None or s.bpe_k is None or s.bpe_v is None:
        return None
    q, k, v, o = _elements(s)
    return (2 * q + o) * s.bpe_q + 2 * k * s.bpe_k + 2 * v * s.bpe_v


@dataclass(frozen=True, slots=True)
class OpLayout:
    """Where one attention op keeps q/k/v, dropout and causal (Input Dims / Concrete Inputs)."""

    q: int  # k and v follow
    layout: Layout
    dropout: int | None  # None: the op has no dropout argument
    causal: int
    flash_impl: bool = True
    bottom_right: bool = True
    backward: bool = False  # the op's own work is the backward pass
    causal_default: bool = False
    dtype_from_first_inputs: bool = False  # TraceLens's dtype_A_B = Input type[:2]
    strides: bool = False  # perf_params carry q/k/v strides
    varlen: tuple[int, int, int, int] | None = None  # cu_seqlens_q/k dims, max_seqlen_q/k CI


def _flag(args: OpArgs, i: int, default: bool) -> bool:
    text = args.value(i).strip().lower()
    if text in ("", "none"):
        return default
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise Unsupported(f"{args.name}: input {i} {args.value(i)!r} is not a bool")


def _number(args: OpArgs, i: int) -> float:
    text = args.value(i).strip()
    try:
        return float(text)
    except ValueError:
        raise Unsupported(f"{args.name}: input {i} {text!r} is not a number") from None


def _heads(args: OpArgs, i: int, layout: Layout) -> tuple[int, int, int, int]:
    """(B, H, N, d) of tensor input `i`."""
    shape = args.shape(i)
    if len(shape) != (3 if layout == "thd" else 4):
        raise Unsupported(f"{args.name}: input {i} {shape} does not match layout {layout}")
    if layout == "bhnd":
        return shape[0], shape[1], shape[2], shape[3]
    if layout == "bnhd":
        return shape[0], shape[2], shape[1], shape[3]
    return 1, shape[1], shape[0], shape[2]


def _strides(args: OpArgs, i: int) -> Shape | None:
    stride = args.stride(i)
    return tuple(stride) if isinstance(stride, tuple) else None


def parse(args: OpArgs, op: OpLayout) -> tuple[AttnShape, dict[str, Any]]:
    """The attention shape and TraceLens's `perf_params` for one signature."""
    iq, ik, iv = op.q, op.q + 1, op.q + 2
    (b, h_q, n_q, d_q), (b_k, h_k, n_k, d_k), (b_v, h_v, n_v, d_v) = (
        _heads(args, i, op.layout) for i in (iq, ik, iv)
    )
    if b != b_k or b != b_v or h_k != h_v or n_k != n_v or d_q != d_k:
        raise Unsupported(f"{args.name}: q/k/v shapes disagree (batch, KV heads/length, d_qk)")
    if h_k == 0:
        raise Unsupported(f"{args.name}: key/value tensors have no heads")
    causal = _flag(args, op.causal, op.causal_default)
    no_dropout = op.dropout is None or args.value(op.dropout).strip() in ("", "None")
    dropout = 0.0 if no_dropout else _number(args, op.dropout)
    first = (0, 1) if op.dtype_from_first_inputs else (iq, ik)
    dtypes = (args.dtype(first[0]), args.dtype(first[1]))
    bpe = [bytes_per_element(args.dtype(i)) for i in (iq, ik, iv)]
    shape = AttnShape(b, n_q, h_q, n_k, h_k, d_q, d_v, causal, op.bottom_right, op.flash_impl, *bpe)
    params: dict[str, Any] = {
        "B": b,
        "N_Q": n_q,
        "H_Q": h_q,
        "N_KV": n_k,
        "H_KV": h_k,
        "d_h_qk": d_q,
        "d_h_v": d_v,
    }
    if op.strides:
        for key, i in (("q_stride", iq), ("k_stride", ik), ("v_stride", iv)):
            params[key] = _strides(args, i)
    params |= {
        "dropout": dropout,
        "causal": causal,
        "flash_impl": op.flash_impl,
        "dtype_A_B": dtypes,
    }
    if op.varlen is not None:
        cu_q, cu_k, max_q, max_k = op.varlen
        params["num_seqs_q"] = args.shape(cu_q)[0] - 1
        params["num_seqs_kv"] = args.shape(cu_k)[0] - 1
        params["max_seqlen_q"] = int(_number(args, max_q))
        params["max_seqlen_kv"] = int(_number(args, max_k))
    return shape, params


def _varlen_flops(
    s: AttnShape, params: dict[str, Any], formula: Callable[[AttnShape], float]
) -> float:
    """Lower bound over packed sequences: one of max_seqlen, the other (num_seqs - 1) share
    the remaining tokens evenly (as TraceLens)."""
    max_q, max_k = params["max_seqlen_q"], params["max_seqlen_kv"]
    seqs_q, seqs_k = params["num_seqs_q"], params["num_seqs_kv"]
    total = formula(replace(s, n_q=max_q, n_kv=max_k))
    if seqs_q > 1:
        if seqs_k < 2:
            raise Unsupported("varlen attention: several query sequences but one KV sequence")
        rest_q = (s.n_q - max_q) // (seqs_q - 1)
        rest_k = (s.n_kv - max_k) // (seqs_k - 1)
        total += (seqs_q - 1) * formula(replace(s, n_q=rest_q, n_kv=rest_k))
    return total


def _work(args: OpArgs, op: OpLayout, backward: bool) -> Work:
    shape, params = parse(args, op)
    flops_of = sdpa_bwd_flops if backward else sdpa_flops
    flops = flops_of(shape) if op.varlen is None else _varlen_flops(shape, params, flops_of)
    moved = sdpa_bwd_bytes(shape) if backward else sdpa_bytes(shape)
    return Work(flops, moved, precision(params["dtype_A_B"][0]), "matrix", params)


def forward(args: OpArgs, op: OpLayout) -> Work:
    return _work(args, op, backward=False)


def backward(args: OpArgs, op: OpLayout) -> Work:
    return _work(args, op, backward=True)


def model(op: OpLayout) -> PerfModel:
    """Forward ops also carry their backward formula; *_backward ops' own work is backward."""
    if op.backward:
        return PerfModel(partial(backward, op=op))
    return PerfModel(partial(forward, op=op), partial(backward, op=op), "SDPA_bwd")


def _aten(dropout: int, causal: int, flash_impl: bool) -> OpLayout:
    """PyTorch SDPA: (B, H, N, d), top-left causal mask, dtype_A_B = Input type[:2]."""
    return OpLayout(
        0, "bhnd", dropout, causal, flash_impl, bottom_right=False, dtype_from_first_inputs=True
    )


def _flash_attn(
    q: int,
    layout: Layout,
    dropout: int,
    causal: int,
    *,
    backward: bool = False,
    varlen: tuple[int, int, int, int] | None = None,
) -> OpLayout:
    """flash-attn: dtype_A_B = Input type[:2] and q/k/v strides in perf_params; the backward
    ops count as causal when the flag is not recorded (as TraceLens)."""
    return OpLayout(
        q,
        layout,
        dropout,
        causal,
        backward=backward,
        causal_default=backward,
        dtype_from_first_inputs=True,
        strides=True,
        varlen=varlen,
    )


OPS: dict[str, OpLayout] = {
    "aten::_scaled_dot_product_flash_attention": _aten(3, 4, flash_impl=True),
    "aten::_scaled_dot_product_efficient_attention": _aten(5, 6, flash_impl=False),
    "aten::_scaled_dot_product_cudnn_attention": _aten(5, 6, flash_impl=False),
    "flash_attn::_flash_attn_forward": _flash_attn(0, "bnhd", 3, 5),
    "FlashAttnFunc": _flash_attn(0, "bnhd", 3, 5),
    "flash_attn::_flash_attn_backward": _flash_attn(1, "bnhd", 9, 11, backward=True),
    "flash_attn::_flash_attn_varlen_forward": _flash_attn(0, "thd", 7, 9, varlen=(3, 4, 5, 6)),
    "flash_attn::_flash_attn_varlen_backward": _flash_attn(
        1, "thd", 13, 15, backward=True, varlen=(9, 10, 11, 12)
    ),
    "aiter::_flash_attn_forward": OpLayout(0, "bnhd", 3, 5),
    "aiter::_flash_attn_backward": OpLayout(1, "bnhd", 10, 12, backward=True),
    "aiter::wrapper_fmha_v3_fwd": OpLayout(1, "bnhd", 4, 6),
    "aiter::wrapper_fmha_v3_bwd": OpLayout(1, "bnhd", 7, 9, backward=True),
    "aiter::mha_fwd": OpLayout(0, "bnhd", 3, 5),
    "aiter::fmha_v3_fwd": OpLayout(0, "bnhd", 3, 5),
    "aiter::mha_bwd": OpLayout(1, "bnhd", 6, 8, backward=True),
    "flash_attn_3::fwd": OpLayout(0, "bnhd", None, 24),
}

MODELS: dict[str, PerfModel] = {name: model(op) for name, op in OPS.items()}
