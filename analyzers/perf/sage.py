"""SageAttention (aiter's Triton kernels, xDiT): the attention and its quantisation kernel.

Inductor records each user-defined Triton kernel it launches as a cpu_op named
`<kernel>_<n>` whose inputs are the kernel's runtime arguments (constexprs are not recorded),
tensors with their shapes; the names are matched by pattern (`SAGE_PATTERNS`).

* `sage_fwd_<n>(Q, K, V, bias, Q_Descale, K_Descale, V_Descale, <8 descale strides>, LSE,
  Out, ...)`: Q and K int8 [B, H_q, S_q, d], V fp8 [B, H_kv, S_k, d_v], Out [B, H_q, S_q,
  d_v] (input 16). FLOPs = 2·B·H_q·S_q·S_k·d (QKᵀ) + 2·B·H_q·S_q·S_k·d_v (PV) — all query-key
  pairs: `IS_CAUSAL` and the sliding window are constexprs, not recorded; the pairs are
  counted non-causal (diffusion transformers, the only callers seen). Softmax not counted
  (docs/perf-models.md#sdpa). Bytes = Q, K, V read + Out written + the three descale tensors
  (fp32) read.
  Compute spec: the matrix unit at Q's precision (int8); PV runs in fp8, which has the same
  peak on the catalogued platforms.
* `sage_quant_kernel_<n>(Q_Input, Q_Output, Q_Scale, K_Input, K_Output, K_Scale, V_Input,
  V_Output, V_Scale, ...)`: bf16 q/k/v in, int8 q/k and fp8 v out with fp32 block scales.
  Bytes = the three inputs read + the three outputs written + the scales written; FLOPs =
  4 per element (abs, max, scale, round: the dynamic-quant count of `fused.py`).
"""

from __future__ import annotations

import re

from .base import OpArgs, PerfModel, Unsupported, Work, numel
from .dtypes import precision
from .elementwise import size_of, total_bytes

QUANT_FLOPS_PER_ELEMENT = 4
_Q, _K, _V, _OUT = 0, 1, 2, 16
_DESCALES = (4, 5, 6)


def _bhsd(args: OpArgs, i: int) -> tuple[int, int, int, int]:
    shape = args.shape(i)
    if len(shape) != 4:
        raise Unsupported(f"{args.name}: input {i} is {shape}, not [B, H, S, d]")
    return shape


def sage_fwd(args: OpArgs) -> Work:
    """Non-causal attention over int8 Q/K and fp8 V (see the module docstring)."""
    b, h_q, s_q, d = _bhsd(args, _Q)
    b_k, h_kv, s_k, d_k = _bhsd(args, _K)
    b_v, h_v, s_v, d_v = _bhsd(args, _V)
    out = _bhsd(args, _OUT)
    if (b_k, d_k) != (b, d) or (b_v, h_v, s_v) != (b_k, h_kv, s_k) or h_q % h_kv:
        raise Unsupported(
            f"{args.name}: q {args.shape(_Q)}, k {args.shape(_K)}, v {args.shape(_V)}"
        )
    if out != (b, h_q, s_q, d_v):
        raise Unsupported(f"{args.name}: output {out} does not match q and v")
    pairs = b * h_q * s_q * s_k
    scales = [(numel(args.shape(i)), size_of(args.dtype(i))) for i in _DESCALES]
    nbytes = total_bytes(
        *((numel(args.shape(i)), size_of(args.dtype(i))) for i in (_Q, _K, _V, _OUT)), *scales
    )
    return Work(
        2.0 * pairs * (d + d_v),
        nbytes,
        precision(args.dtype(_Q)),
        "matrix",
        {
            "B": b,
            "N_Q": s_q,
            "N_KV": s_k,
            "H_Q": h_q,
            "H_KV": h_kv,
            "d_h_qk": d,
            "d_h_v": d_v,
            "causal": False,
            "dtype_q_k_v_out": tuple(args.dtype(i) for i in (_Q, _K, _V, _OUT)),
        },
    )


def sage_quant(args: OpArgs) -> Work:
    """q, k, v quantised in one kernel: (input, output, scale) triples at inputs 0-8."""
    terms, n_total = [], 0
    for first in (0, 3, 6):
        src, dst, scale = args.shape(first), args.shape(first + 1), args.shape(first + 2)
        if src != dst or len(src) != 4:
            raise Unsupported(f"{args.name}: input {src} and output {dst} differ")
        n_total += numel(src)
        terms += [
            (numel(src), size_of(args.dtype(first))),
            (numel(dst), size_of(args.dtype(first + 1))),
            (numel(scale), size_of(args.dtype(first + 2))),
        ]
    return Work(
        QUANT_FLOPS_PER_ELEMENT * n_total,
        total_bytes(*terms),
        precision(args.dtype(0)),
        "vector",
        {
            "op_shape": args.shape(0),
            "dtype_in_out": tuple(args.dtype(i) for i in (0, 1, 4, 7)),
            "scales": tuple(args.shape(i) for i in (2, 5, 8)),
        },
    )


SAGE_PATTERNS: tuple[tuple[re.Pattern[str], PerfModel], ...] = (
    (re.compile(r"^sage_fwd_\d+$"), PerfModel(sage_fwd)),
    (re.compile(r"^sage_quant_kernel_\d+$"), PerfModel(sage_quant)),
)


def sage_model(name: str) -> PerfModel | None:
    """The model of an Inductor-recorded SageAttention kernel op, or None."""
    return next((model for pattern, model in SAGE_PATTERNS if pattern.match(name)), None)
