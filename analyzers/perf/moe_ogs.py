"""Mixture-of-experts grouped GEMMs of `triton_kernels.matmul_ogs` (vLLM gpt-oss, MXFP4 weights).

Scores the pseudo ops `pseudo_op::moe_triton_unfused_up` / `_down` that
analyzers/trace/pseudo.py puts above each `_matmul_ogs_*` launch. Every number comes from
values the trace records (pseudo.py composes them into the op's args):

    input 0  x: the activation matmul_ogs received, [rows, K] (rows = tokens for the up
             projection, whose routing gather happens inside the kernel; tokens·k routed rows
             for the down projection)
    input 1  w: the expert weights as stored, [E, K_w, N]; for `mxfp4` two 4-bit values
             share a byte, so K_w = K/2 and the recorded dtype is `unsigned char`
    input 2  the router logits [tokens, experts] (TopK's input)
    input 3  k (experts per token, TopK's Concrete Inputs)
    input 4  the kernel name, `_matmul_ogs_<layouts>_<y>x<x>x<w>_<BMxBNxBKxSPLITK>[_<epilogue>]`
             (triton_kernels names kernels by output, activation and weight dtype)

With T tokens and R = T·k routed rows, each routed row is multiplied by its expert's
K×N matrix:

    FLOPs = 2·R·K·N
    bytes = x read once                         rows·K·bpe(x)
          + weights of the experts that can be  A·K_w·N·bpe(w storage),  A = min(E, R)
            active
          + their MX scales (mxfp4 only)        A·⌈K/32⌉·N·1   (one e8m0 byte per 32 values)
          + output written                      R·N_out·bpe(y),  N_out = N/2 after `swiglu`

Assumptions, stated because the trace cannot tell:
- Active experts: the routing of this batch is not recorded, so every expert that could
  receive a row is counted once (A = min(E, R)), an upper bound on weight traffic that is
  exact whenever each expert gets at least one row (at batch 32 with top-4 of 32 experts,
  the chance that an expert gets no row is (1 - 4/32)^32 ≈ 1.4 %).
- The `swiglu` epilogue (clamp, sigmoid, two multiplies per output value) is not counted:
  about 8 FLOPs per output value against 2·K per GEMM output, under 0.2 % for K = 3072.
- FLOPs are the useful ones: the rows each expert's last tile pads out to BLOCK_M are not
  counted (the kernel does that work, so at small batch the achieved rate looks low).
- The expert biases gpt-oss adds are not among the recorded views and are left out
  (E·N values, under 0.3 % of the weight bytes).

Compute spec: the matrix unit at the wider of the two operand precisions. A bf16 × mxfp4
GEMM dequantises the weights and multiplies in bf16 (MI300X has no fp4 matrix instructions at
all; parts that do, MI355X and B200, need both operands in a narrow format), so it is
`matrix_bf16`; an fp8 × mxfp4 kernel would be `matrix_fp8`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import ceil, prod

from .base import OpArgs, PerfModel, Unsupported, Work

MX_BLOCK = 32  # values per shared e8m0 scale in the OCP MX formats

# triton_kernels dtype spellings (Triton type names; `u8` storage is reported as `mxfp4`)
KERNEL_DTYPES: dict[str, tuple[float, str]] = {  # name -> (bytes per value, precision)
    "fp32": (4, "fp32"),
    "f32": (4, "fp32"),
    "bf16": (2, "bf16"),
    "fp16": (2, "fp16"),
    "f16": (2, "fp16"),
    "fp8e4nv": (1, "fp8"),
    "fp8e4b8": (1, "fp8"),
    "fp8e4b15": (1, "fp8"),
    "fp8e5": (1, "fp8"),
    "fp8e5b16": (1, "fp8"),
    "mxfp4": (0.5, "fp4"),
}
PRECISION_RANK = {"fp4": 0, "fp8": 1, "bf16": 2, "fp16": 2, "fp32": 3}
KERNEL_NAME = re.compile(
    r"^_matmul_ogs_(?P<layouts>[NT]+)_(?P<dtypes>[a-z0-9]+)_"
    r"(?P<bm>\d+)x(?P<bn>\d+)x(?P<bk>\d+)x(?P<split_k>\d+)(?:_(?P<epilogue>\w+))?$"
)
# fused activations that halve the output width (gate and linear halves combined)
HALVING_EPILOGUES = frozenset({"swiglu"})


@dataclass(frozen=True, slots=True)
class OgsKernel:
    """What a `_matmul_ogs_*` kernel name says: y, x, w dtypes, tile, fused epilogue."""

    y: str
    x: str
    w: str
    tile: str
    epilogue: str


def parse_kernel(name: str) -> OgsKernel | None:
    """`_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu` -> bf16, bf16, mxfp4, swiglu."""
    match = KERNEL_NAME.match(name)
    if match is None:
        return None
    # dtypes are joined by "x", which `mxfp4` itself contains: rejoin its halves
    parts: list[str] = []
    for token in match["dtypes"].split("x"):
        if parts and parts[-1] == "m":
            parts[-1] = "mx" + token
        else:
            parts.append(token)
    if len(parts) != 3 or any(p not in KERNEL_DTYPES for p in parts):
        return None
    tile = "x".join(match[g] for g in ("bm", "bn", "bk", "split_k"))
    return OgsKernel(*parts, tile=tile, epilogue=match["epilogue"] or "")


def moe_ogs_gemm(args: OpArgs) -> Work:
    """One matmul_ogs launch: R routed rows, each through its expert's K×N weights."""
    x, w, router = args.shape(0), args.shape(1), args.shape(2)
    kernel = parse_kernel(args.value(4))
    if kernel is None:
        raise Unsupported(f"{args.name}: kernel name '{args.value(4)}' is not a matmul_ogs name")
    top_k = args.value(3).strip()
    if not top_k.isdigit() or int(top_k) < 1:
        raise Unsupported(f"{args.name}: top-k '{top_k}' is not a positive integer")
    if len(w) != 3 or len(router) != 2 or len(x) < 2:
        raise Unsupported(f"{args.name}: expected x [rows, K], w [E, K, N], router [T, E]")
    k = int(top_k)
    experts, k_stored, n = w
    tokens = router[0]
    rows, k_dim = prod(x[:-1]), x[-1]
    packed = kernel.w == "mxfp4"
    if (2 * k_stored if packed else k_stored) != k_dim:
        raise Unsupported(f"{args.name}: x's K={k_dim} does not match w {list(w)} ({kernel.w})")
    routed = tokens * k
    if rows not in (tokens, routed):
        raise Unsupported(f"{args.name}: x has {rows} rows, neither {tokens} tokens nor {routed}")
    active = min(experts, routed)
    n_out = n // 2 if kernel.epilogue in HALVING_EPILOGUES else n
    bpe_y, _ = KERNEL_DTYPES[kernel.y]
    x_bytes = rows * k_dim * args.bpe(0)
    w_bytes = active * k_stored * n * args.bpe(1)
    scale_bytes = active * ceil(k_dim / MX_BLOCK) * n if packed else 0
    out_bytes = routed * n_out * bpe_y
    precisions = (KERNEL_DTYPES[kernel.x][1], KERNEL_DTYPES[kernel.w][1])
    compute = max(precisions, key=lambda p: PRECISION_RANK[p])
    params = {
        "M": routed,
        "N": n,
        "K": k_dim,
        "tokens": tokens,
        "topk": k,
        "experts": experts,
        "active_experts": active,
        "N_out": n_out,
        "epilogue": kernel.epilogue,
        "dtype_A_B": (kernel.x, kernel.w),
        "dtype_out": kernel.y,
        "tile": kernel.tile,
    }
    flops = 2 * routed * k_dim * n
    return Work(flops, x_bytes + w_bytes + scale_bytes + out_bytes, compute, "matrix", params)


UP = "pseudo_op::moe_triton_unfused_up"
DOWN = "pseudo_op::moe_triton_unfused_down"

MODELS: dict[str, PerfModel] = {UP: PerfModel(moe_ogs_gemm), DOWN: PerfModel(moe_ogs_gemm)}
