"""Routing ops of triton_kernels (vLLM gpt-oss MoE): `TopK` and `SortTokens`, as recorded by
their autograd functions. Their kernels are tiny and latency-bound; the models give the
compulsory traffic that follows from the recorded shapes, so Pct Roofline says how far from
the memory roof they run. Outputs are not recorded: their sizes follow from the inputs.

* `TopK(x, k, apply_softmax, dim, return_bitmatrix, y_indx, n_rows)`: x [T, E] read; top-k
  values [T, k] (x's dtype) and int16 indices [T, k] written (indices only when `y_indx` is
  not given), plus the bitmatrix, one uint32 word per 32 experts per row, ⌈E/32⌉·T·4 bytes.
  FLOPs = T·E (one comparison per logit) + 5·T·k when `apply_softmax` (the softmax count of
  reduce.py over the k selected values).
* `SortTokens(expt_scal, expt_indx, n_expts_tot[, bitmatrix])`: expt_scal [T, k] and
  expt_indx [T, k] read and the bitmatrix (⌈E/32⌉·T words) read for the histogram; gate
  scales [T·k] (expt_scal's dtype), the combine and dispatch indices (2·T·k int32) and the
  histogram (E int32) written. The padded per-block-size tables (token offsets, block-to-
  expert map) are sized by the library's block-size list, not by the trace, and are left out:
  bytes are a lower bound. FLOPs = 0 (integer work only); scored on the memory roof.
"""

from __future__ import annotations

from math import ceil

from .base import OpArgs, PerfModel, Unsupported, Work
from .dtypes import precision
from .elementwise import parse_flag, parse_ints, size_of, total_bytes

SOFTMAX_FLOPS_PER_ELEMENT = 5
INT16, INT32, WORD = 2.0, 4.0, 4.0
BITS_PER_WORD = 32


def _int(args: OpArgs, i: int, what: str) -> int:
    value = parse_ints(args.value(i))
    if not value or value[0] <= 0:
        raise Unsupported(f"{args.name}: {what} '{args.value(i)}'")
    return value[0]


def topk(args: OpArgs) -> Work:
    x = args.shape(0)
    if len(x) != 2:
        raise Unsupported(f"{args.name}: input {x} is not [tokens, experts]")
    tokens, experts = x
    k = _int(args, 1, "k")
    softmax = parse_flag(args.value(2))
    bitmatrix = parse_flag(args.value(4))
    if softmax is None or k > experts:
        raise Unsupported(f"{args.name}: k {k}, apply_softmax '{args.value(2)}'")
    size = size_of(args.dtype(0))
    indices_given = args.has_tensor(5)
    words = ceil(experts / BITS_PER_WORD) * tokens if bitmatrix is not False else 0
    nbytes = total_bytes(
        (tokens * experts, size),
        (tokens * k, size),
        (0 if indices_given else tokens * k, INT16),
        (words, WORD),
    )
    flops = tokens * experts + (SOFTMAX_FLOPS_PER_ELEMENT * tokens * k if softmax else 0)
    return Work(
        flops,
        nbytes,
        precision(args.dtype(0)),
        "vector",
        {"num_tokens": tokens, "num_experts": experts, "topk": k, "apply_softmax": softmax},
    )


def sort_tokens(args: OpArgs) -> Work:
    scal, indx = args.shape(0), args.shape(1)
    if len(scal) != 2 or indx != scal:
        raise Unsupported(f"{args.name}: expt_scal {scal}, expt_indx {indx}")
    tokens, k = scal
    experts = _int(args, 2, "n_expts_tot")
    gates = tokens * k
    nbytes = total_bytes(
        (gates, size_of(args.dtype(0))),
        (gates, size_of(args.dtype(1))),
        (ceil(experts / BITS_PER_WORD) * tokens, WORD),
        (gates, size_of(args.dtype(0))),
        (2 * gates, INT32),
        (experts, INT32),
    )
    return Work(
        0.0,
        nbytes,
        precision(args.dtype(0)),
        "vector",
        {"num_tokens": tokens, "num_experts": experts, "topk": k, "lower_bound_bytes": True},
    )


MODELS: dict[str, PerfModel] = {
    "TopK": PerfModel(topk),
    "SortTokens": PerfModel(sort_tokens),
}
