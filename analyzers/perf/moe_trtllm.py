"""flashinfer trtllm-gen MXFP4 MoE (`trtllm_fp4_block_scale_moe`, vLLM gpt-oss on Blackwell).

Scores the pseudo ops analyzers/trace/pseudo_trtllm.py puts above the kernels of this path.
Every size is a value the trace records: the framework op's hidden states [T, H] and router
logits [T, E], and the allocations the flashinfer op makes: the top-k ids [T, k], the T·k
routed pairs, gemm1's output [P, I] and gemm2's output [P, H], P rows padded per expert to
the GEMM tile. The GEMM kernels' names and grids are the cross-checks. A model declines
(Unsupported: no numbers) unless all of these hold:

    k:  the [T, k] allocation has the op's T rows and 1 <= k <= E
    R = T·k: an int32 allocation of exactly T·k elements exists
    P:  both GEMM outputs have the same P >= R rows, and grid.y = ceil(P / tile_N)
    I:  gemm1's output width (after the fused SwiGLU, which halves it), and
        gemm1 grid.x · tile_M = 2·I (the kernel tiles the gated width 2I; transOut layout)
    H:  gemm2's output width = the op's hidden dim = gemm2 grid.x · tile_M
    dtypes: each GEMM's output element size (kernel name) is its output allocation's

Kernel names: `bmm_<out>_<weights><activations>_<acc>_t<M>x<N>x<K>..._transOut_..._swiGlu_...`,
e.g. `bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256...` (gemm1: MXFP4 weights, MXFP8
activations, MXFP8 output) and `bmm_Bfloat16_MxE2m1MxE4m3_Fp32_...` (gemm2, bf16 output).
With transOut the kernel computes Dᵀ = W·Xᵀ: tile_M walks the weights' output features,
tile_N the (padded) routed rows.

GEMMs, with R = T·k routed rows, each multiplied by its expert's K×N matrix
(gemm1: K = H, N = 2I; gemm2: K = I, N = H):

    FLOPs = 2·R·K·N
    bytes = activations   gemm1: T·H·bpe + T·H/32 e8m0 scales (the T token rows, gathered
                          by routing inside the kernel); gemm2: R·I·bpe + R·I/32
          + weights       A·K·N·0.5 + A·(K/32)·N e8m0 scales (MXFP4), A = min(E, R)
          + output        gemm1: R·I·1 + R·I/32 (MXFP8); gemm2: R·H·2 (bf16)

Assumptions, stated because the trace cannot tell:
- Active experts: the routing is not recorded, so every expert that can receive a row is
  counted once (A = min(E, R)). With T = 888 and k = 4 (R = 3552 rows over 128 experts) the
  chance under uniform routing that some expert gets no row is below 128·(1 - 1/32)^888
  ≈ 7e-11, so all experts are read.
- Only useful work: the rows padded to the tile (P - R at most) are not counted, nor the
  SwiGLU epilogue (a few FLOPs per output value against 2·K), nor the expert biases
  (`biasM` in the names; E·N values, not recorded: at 4 bytes each they would add 0.25 %
  to gemm1's bytes and 1.2 % to gemm2's at the sizes above).
- Compute spec: MXFP8 × MXFP4 runs on Blackwell's block-scaled tensor cores in the mixed
  f8f6f4 mode, at the fp8 rate; the double fp4 rate needs both operands in fp4. So the
  spec is the matrix unit of the wider operand (`matrix_fp8` here; bf16 activations would
  make it `matrix_bf16`).

Finalize (`moe::dev::finalize::*`): out[t] = Σ_j w[t, j] · y[perm(t, j)] over the k routed
rows of each token. FLOPs = (2k - 1)·T·H (k multiplies, k - 1 adds); bytes = R·H (gemm2's
rows) + T·k weights + R int32 permutation indices + T·H output, at the recorded dtypes.

mxfp8 quantisation (`quantize_with_block_size`, flashinfer `mxfp8_quantize`): one pass over
the [T, H] input; per 32-value block an abs-max, then a scale multiply and a saturating
convert: 4 FLOPs per value (fused.py's count for dynamic fp8 quantisation). bytes = input +
fp8 output + the recorded scale buffer (S bytes, S >= T·H/32).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import ceil, prod

from .base import OpArgs, PerfModel, Unsupported, Work
from .dtypes import bytes_per_element, precision

MX_BLOCK = 32  # values per e8m0 scale in the OCP MX formats
QUANT_FLOPS_PER_VALUE = 4
INDEX_BYTES = 4  # int32 permutation indices

# trtllm-gen dtype spellings -> (bytes per value, MX block-scaled, precision)
KERNEL_DTYPES: dict[str, tuple[float, bool, str]] = {
    "MxE2m1": (0.5, True, "fp4"),
    "MxE4m3": (1, True, "fp8"),
    "Bfloat16": (2, False, "bf16"),
    "Fp16": (2, False, "fp16"),
}
PRECISION_RANK = {"fp4": 0, "fp8": 1, "bf16": 2, "fp16": 2}
_DTYPE = "|".join(sorted(KERNEL_DTYPES, key=len, reverse=True))
KERNEL_NAME = re.compile(
    rf"^bmm_(?P<out>{_DTYPE})_(?P<w>{_DTYPE})(?P<x>{_DTYPE})_Fp32_"
    r"t(?P<tm>\d+)x(?P<tn>\d+)x(?P<tk>\d+)"
)
GATED_EPILOGUES = ("swiGlu", "geGlu")  # fused activations that halve the output width


@dataclass(frozen=True, slots=True)
class BmmKernel:
    """What a trtllm-gen `bmm_*` name says: output, weight, activation dtypes, tile, gating."""

    out: str
    w: str
    x: str
    tile_m: int
    tile_n: int
    tile_k: int
    gated: bool
    trans_out: bool


def parse_kernel(name: str) -> BmmKernel | None:
    match = KERNEL_NAME.match(name)
    if match is None:
        return None
    parts = set(name.split("_"))
    return BmmKernel(
        match["out"],
        match["w"],
        match["x"],
        int(match["tm"]),
        int(match["tn"]),
        int(match["tk"]),
        gated=any(g in parts for g in GATED_EPILOGUES),
        trans_out="transOut" in parts,
    )


def _grid(args: OpArgs, i: int) -> tuple[int, int, int]:
    text = args.value(i).strip().strip("[]")
    try:
        grid = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise Unsupported(f"{args.name}: kernel grid '{args.value(i)}' is not recorded") from None
    if len(grid) != 3 or min(grid) < 1:
        raise Unsupported(f"{args.name}: kernel grid '{args.value(i)}' is not three positives")
    return grid  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class _Moe:
    tokens: int
    hidden: int
    experts: int
    top_k: int
    routed: int
    padded: int
    inter_alloc: int  # gemm1 output width as allocated


def _routing(args: OpArgs) -> _Moe:
    """T, H, E, k, R and P from the recorded shapes, checked against each other."""
    hidden, logits, topk, routed = (args.shape(i) for i in range(4))
    g1_out, g2_out = args.shape(4), args.shape(5)
    if len(hidden) != 2 or len(logits) != 2 or len(topk) != 2:
        raise Unsupported(f"{args.name}: expected hidden [T, H], logits [T, E], top-k [T, k]")
    tokens, h = hidden
    experts, k = logits[1], topk[1]
    if logits[0] != tokens or topk[0] != tokens or not 1 <= k <= experts:
        raise Unsupported(f"{args.name}: top-k {list(topk)} does not fit T={tokens}, E={experts}")
    r = tokens * k
    if list(routed) != [r]:
        raise Unsupported(f"{args.name}: routed allocation {list(routed)} is not T·k = {r}")
    if len(g1_out) != 2 or len(g2_out) != 2 or g1_out[0] != g2_out[0] or g1_out[0] < r:
        raise Unsupported(f"{args.name}: GEMM outputs {list(g1_out)}, {list(g2_out)} vs R={r}")
    if g2_out[1] != h:
        raise Unsupported(f"{args.name}: gemm2 output width {g2_out[1]} is not H={h}")
    return _Moe(tokens, h, experts, k, r, g1_out[0], g1_out[1])


def _mx_bytes(values: int, dtype: str) -> float:
    size, scaled, _ = KERNEL_DTYPES[dtype]
    return values * size + (ceil(values / MX_BLOCK) if scaled else 0)


def trtllm_gemm(args: OpArgs) -> Work:
    """gemm1 (gate/up with SwiGLU) or gemm2 (down) of one trtllm-gen MoE call."""
    moe = _routing(args)
    kernel = parse_kernel(args.value(7))
    if kernel is None or not kernel.trans_out:
        raise Unsupported(f"{args.name}: kernel '{args.value(7)[:60]}' is not a transOut bmm")
    grid_x, grid_y, _ = _grid(args, 6)
    if grid_y != ceil(moe.padded / kernel.tile_n):
        raise Unsupported(f"{args.name}: grid.y={grid_y} does not tile P={moe.padded} rows")
    features = grid_x * kernel.tile_m  # output features the kernel tiles
    first = args.name == GEMM1
    out_index = 4 if first else 5
    out_size = bytes_per_element(args.dtype(out_index))
    if out_size != KERNEL_DTYPES[kernel.out][0]:
        raise Unsupported(f"{args.name}: output {kernel.out} vs allocation {args.dtype(out_index)}")
    inter = moe.inter_alloc
    if first:
        if not kernel.gated or features != 2 * inter:
            raise Unsupported(f"{args.name}: grid.x·tile = {features} is not 2I = {2 * inter}")
        k_dim, n, n_out, x_rows = moe.hidden, 2 * inter, inter, moe.tokens
    else:
        if kernel.gated or features != moe.hidden:
            raise Unsupported(f"{args.name}: grid.x·tile = {features} is not H = {moe.hidden}")
        k_dim, n, n_out, x_rows = inter, moe.hidden, moe.hidden, moe.routed
    active = min(moe.experts, moe.routed)
    x_bytes = _mx_bytes(x_rows * k_dim, kernel.x)
    w_bytes = active * _mx_bytes(k_dim * n, kernel.w)
    out_bytes = _mx_bytes(moe.routed * n_out, kernel.out)
    ranks = (KERNEL_DTYPES[kernel.w][2], KERNEL_DTYPES[kernel.x][2])
    compute = max(ranks, key=lambda p: PRECISION_RANK[p])
    params = {
        "M": moe.routed,
        "N": n,
        "K": k_dim,
        "tokens": moe.tokens,
        "topk": moe.top_k,
        "experts": moe.experts,
        "active_experts": active,
        "padded_rows": moe.padded,
        "N_out": n_out,
        "dtype_W_X": (kernel.w, kernel.x),
        "dtype_out": kernel.out,
        "tile": (kernel.tile_m, kernel.tile_n, kernel.tile_k),
    }
    flops = 2 * moe.routed * k_dim * n
    return Work(flops, x_bytes + w_bytes + out_bytes, compute, "matrix", params)


def finalize(args: OpArgs) -> Work:
    """Weighted sum of each token's k gemm2 rows into the [T, H] output."""
    rows, topk, routed, out = (args.shape(i) for i in range(4))
    if len(rows) != 2 or len(topk) != 2 or len(out) != 2:
        raise Unsupported(f"{args.name}: expected [P, H], [T, k], [T·k], [T, H]")
    (tokens, h), k = out, topk[1]
    r = tokens * k
    if topk[0] != tokens or list(routed) != [r] or rows[1] != h or rows[0] < r or k < 1:
        raise Unsupported(f"{args.name}: shapes {[list(s) for s in (rows, topk, routed, out)]}")
    nbytes = r * h * args.bpe(0) + r * args.bpe(1) + r * INDEX_BYTES + tokens * h * args.bpe(3)
    params = {"tokens": tokens, "topk": k, "hidden": h}
    return Work((2 * k - 1) * tokens * h, nbytes, precision(args.dtype(0)), "vector", params)


def mxfp8_quantize(args: OpArgs) -> Work:
    """[T, H] to MXFP8: fp8 values plus one e8m0 scale byte per 32 (buffer as allocated)."""
    x, y, scales = args.shape(0), args.shape(1), args.shape(2)
    n = prod(x)
    if list(x) != list(y) or len(scales) != 1 or scales[0] * MX_BLOCK < n:
        raise Unsupported(f"{args.name}: shapes {list(x)}, {list(y)}, {list(scales)}")
    nbytes = n * args.bpe(0) + n * args.bpe(1) + scales[0] * args.bpe(2)
    params = {"op_shape": x, "dtype_in_out": (args.dtype(0), args.dtype(1)), "scales": scales[0]}
    return Work(QUANT_FLOPS_PER_VALUE * n, nbytes, precision(args.dtype(0)), "vector", params)


GEMM1 = "pseudo_op::moe_trtllm_fp4_gemm1"
GEMM2 = "pseudo_op::moe_trtllm_fp4_gemm2"
FINALIZE = "pseudo_op::moe_trtllm_fp4_finalize"
MXFP8_QUANTIZE = "pseudo_op::mxfp8_quantize"

MODELS: dict[str, PerfModel] = {
    GEMM1: PerfModel(trtllm_gemm),
    GEMM2: PerfModel(trtllm_gemm),
    FINALIZE: PerfModel(finalize),
    MXFP8_QUANTIZE: PerfModel(mxfp8_quantize),
}
