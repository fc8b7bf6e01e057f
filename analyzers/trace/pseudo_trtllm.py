"""Pseudo ops for flashinfer's trtllm-gen MXFP4 MoE (`trtllm_fp4_block_scale_moe`).

See docs/trace.md#pseudo-ops.

vLLM's gpt-oss path on Blackwell runs the experts through flashinfer's
`trtllm_fp4_block_scale_moe`, which is not a profiled op: its kernels hang, through Python
frames and `cuLaunchKernelEx` / `cudaLaunchKernelExC` calls, under the framework op
(`vllm::moe_forward`, args [hidden [T, H], router logits [T, E]]). What the trace records
about the shapes is the allocations the op makes (`aten::empty`, Concrete Inputs
[shape, ScalarType code]) and the grid of each kernel. Under the Python frame
`flashinfer/fused_moe/core.py(...): trtllm_fp4_block_scale_moe_op`, before the GEMMs:

    [T, k] int32 and [T, k] bf16   the top-k expert ids and weights (same shape, one integer,
                                   one floating)
    [T·k] int32                    the routed pairs (token, expert) -> permuted row
    [P, I] uint8, [P, H] bf16      the last two 2-D allocations with a common first dim P != T:
                                   gemm1's output (after its SwiGLU) and gemm2's output, P
                                   rows padded per expert to the GEMM tile
    [T, H] (hidden's dtype)        the op's output, written by the finalize kernel

Pseudo ops, each inserted above the launch of its kernel (the names are ours; TraceLens has
no pseudo op for this path, docs/deviations.md):

    pseudo_op::moe_trtllm_fp4_gemm1    first `bmm_*` kernel under the frame
    pseudo_op::moe_trtllm_fp4_gemm2    second `bmm_*` kernel
        Input Dims       [hidden, logits, [T, k], [T·k], [P, I], [P, H], [], []]
        Input type       [.., .., "int", "int", gemm1 out dtype, gemm2 out dtype, "ScalarList", ""]
        Concrete Inputs  ["", "", "", "", "", "", kernel grid, kernel name]
    pseudo_op::moe_trtllm_fp4_finalize `moe::dev::finalize::*` kernel after them
        Input Dims       [[P, H], [T, k], [T·k], [T, H], []]
        Input type       [gemm2 out dtype, top-k weight dtype, "int", output dtype, ""]
        Concrete Inputs  ["", "", "", "", kernel name]
    pseudo_op::mxfp8_quantize          `quantize_with_block_size` kernel under the Python frame
                                       `flashinfer/fp8_quantization.py(...): mxfp8_quantize`
        Input Dims       [input [T, H] (the op's input 0), fp8 output [T, H], scales [S]]
        Input type       [input dtype, fp8 dtype, "unsigned char"]
        Concrete Inputs  ["", "", "", kernel name]
        (inserted only when the fp8 allocation has the shape of the op's input 0)

The perf models (analyzers/perf/moe_trtllm.py) cross-check these facts against each other
and against the kernel grids, and decline when they disagree. A frame missing any of the
facts, or one of its two GEMM launches, gets no pseudo op. Only eager traces are served: a
capture trace records no kernel grids. Launches whose parent is already a pseudo op are
skipped, so the stage is idempotent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import MISSING, name_matches
from .pseudo_rows import (
    PSEUDO_PREFIX,
    PseudoRow,
    canonical_json,
    json_list,
)
from .schema import GPU_CATEGORIES, GRAPH_LAUNCH_NAMES, LAUNCH_CATEGORIES
from .tree import nearest_ancestor

GEMM1 = "pseudo_op::moe_trtllm_fp4_gemm1"
GEMM2 = "pseudo_op::moe_trtllm_fp4_gemm2"
FINALIZE = "pseudo_op::moe_trtllm_fp4_finalize"
MXFP8_QUANTIZE = "pseudo_op::mxfp8_quantize"
MOE_FRAME = re.compile(r"(^|/)flashinfer/fused_moe/core\.py\(\d+\): trtllm_fp4_block_scale_moe_op$")
QUANT_FRAME = re.compile(r"(^|/)flashinfer/fp8_quantization\.py\(\d+\): mxfp8_quantize$")
GEMM_KERNEL_PREFIX = "bmm_"
FINALIZE_KERNEL = "moe::dev::finalize::"
QUANT_KERNEL = "tensorrt_llm::kernels::quantize_with_block_size<"
ALLOC_OP = "aten::empty"
# c10::ScalarType codes an `aten::empty` records for its dtype (as perf/gemm.py spells them)
SCALAR_TYPES = {
    "0": "unsigned char",
    "1": "signed char",
    "3": "int",
    "4": "long int",
    "5": "c10::Half",
    "6": "float",
    "15": "c10::BFloat16",
    "23": "c10::Float8_e5m2",
    "24": "c10::Float8_e4m3fn",
}
FLOATING = frozenset({"c10::Half", "float", "c10::BFloat16"})
FP8 = frozenset({"c10::Float8_e5m2", "c10::Float8_e4m3fn"})


@dataclass(frozen=True, slots=True)
class _Alloc:
    ts: float
    shape: list[int]
    dtype: str


def _is_kernel(name: str) -> bool:
    return name.startswith(GEMM_KERNEL_PREFIX) or FINALIZE_KERNEL in name or QUANT_KERNEL in name


def trtllm_moe_rows(events: pd.DataFrame, parent: np.ndarray) -> list[PseudoRow]:
    """Pseudo-op rows for every trtllm-gen MoE call (and mxfp8 quantisation) the trace shapes."""
    cat, names = events["cat"], events["name"]
    is_runtime = cat.isin(LAUNCH_CATEGORIES).to_numpy()
    is_cpu_op = (cat == "cpu_op").to_numpy()
    is_python = (cat == "python_function").to_numpy()
    gpu = np.flatnonzero(cat.isin(GPU_CATEGORIES).to_numpy() & name_matches(names, _is_kernel))
    if not len(gpu):
        return []
    launch = parent[gpu]
    ok = launch != MISSING
    gpu, launch = gpu[ok], launch[ok]
    ok = is_runtime[launch] & ~name_matches(names, lambda n: n in GRAPH_LAUNCH_NAMES)[launch]
    gpu, launch = gpu[ok], launch[ok]
    pseudo = is_cpu_op & name_matches(names, lambda n: n.startswith(PSEUDO_PREFIX))
    up = parent[launch]
    ok = ~((up != MISSING) & pseudo[np.maximum(up, 0)])
    gpu, launch = gpu[ok], launch[ok]
    if not len(gpu):
        return []

    moe_frame = is_python & name_matches(names, lambda n: bool(MOE_FRAME.search(n)))
    quant_frame = is_python & name_matches(names, lambda n: bool(QUANT_FRAME.search(n)))
    frame_mask = moe_frame | quant_frame
    frame = nearest_ancestor(parent, frame_mask, launch)
    owner = nearest_ancestor(parent, is_cpu_op, launch)
    ok = (frame != MISSING) & (owner != MISSING)
    gpu, launch, frame, owner = gpu[ok], launch[ok], frame[ok], owner[ok]
    # the frame must sit under the owner op, with no other cpu_op in between
    ok = nearest_ancestor(parent, is_cpu_op, frame) == owner
    gpu, launch, frame, owner = gpu[ok], launch[ok], frame[ok], owner[ok]
    allocs = _allocations(events, parent, is_cpu_op, frame_mask)
    ts = events["ts"].to_numpy()

    by_frame: dict[int, list[tuple[int, int, int]]] = {}  # frame -> [(launch, kernel, owner)]
    for i in np.argsort(ts[launch], kind="stable").tolist():
        by_frame.setdefault(int(frame[i]), []).append((int(launch[i]), int(gpu[i]), int(owner[i])))
    rows: list[PseudoRow] = []
    for f, launches in by_frame.items():
        args = _owner_args(events, launches[0][2])
        if args is None:
            continue
        if moe_frame[f]:
            rows += _moe_rows(events, launches, args, allocs.get(f, []), ts)
        else:
            rows += _quant_rows(events, launches, args, allocs.get(f, []))
    return rows


def _allocations(
    events: pd.DataFrame, parent: np.ndarray, is_cpu_op: np.ndarray, frame_mask: np.ndarray
) -> dict[int, list[_Alloc]]:
    """Frame -> the `aten::empty` allocations under it (through Python frames only), by time."""
    empty = np.flatnonzero(is_cpu_op & name_matches(events["name"], lambda n: n == ALLOC_OP))
    holder = nearest_ancestor(parent, frame_mask | is_cpu_op, empty)
    ok = holder != MISSING
    empty, holder = empty[ok], holder[ok]
    ok = frame_mask[holder]
    empty, holder = empty[ok], holder[ok]
    ts = events["ts"].to_numpy()
    out: dict[int, list[_Alloc]] = {}
    for i in np.argsort(ts[empty], kind="stable").tolist():
        concrete = json_list(events["concrete_inputs"].iat[int(empty[i])]) or []
        if len(concrete) < 2 or not isinstance(concrete[0], str):
            continue
        shape = json_list(concrete[0])
        dtype = SCALAR_TYPES.get(str(concrete[1]).strip())
        if shape is None or dtype is None or not all(isinstance(d, int) for d in shape):
            continue
        out.setdefault(int(holder[i]), []).append(_Alloc(float(ts[empty[i]]), shape, dtype))
    return out


def _owner_args(events: pd.DataFrame, owner: int) -> tuple[list, list] | None:
    """Input 0 [T, H] and input 1 [T, E] of the framework op (shapes and dtypes)."""
    dims = json_list(events["input_dims"].iat[owner])
    types = json_list(events["input_type"].iat[owner])
    if not dims or not types or len(dims) < 2 or len(types) < 2:
        return None
    hidden, logits = dims[0], dims[1]
    if not (isinstance(hidden, list) and isinstance(logits, list)):
        return None
    if len(hidden) != 2 or len(logits) != 2 or hidden[0] != logits[0]:
        return None
    return [hidden, logits], [str(types[0]), str(types[1])]


def _kernel(events: pd.DataFrame, g: int) -> tuple[str, str]:
    grid = json_list(events["grid"].iat[g]) if "grid" in events else None
    text = canonical_json(grid) if grid and all(isinstance(d, int) for d in grid) else ""
    return str(events["name"].iat[g]), text


@dataclass(frozen=True, slots=True)
class _MoeShapes:
    """What the allocations before gemm1 say: k, the top-k weights' dtype, the GEMM outputs."""

    top_k: int
    weight_type: str
    g1_out: _Alloc
    g2_out: _Alloc


def _moe_shapes(before: list[_Alloc], tokens: int) -> _MoeShapes | None:
    """The shapes of one MoE call, or None when any allocation the docstring lists is absent."""
    pair = _topk_pair(before, tokens)
    if pair is None:
        return None
    top_k, weight_type = pair
    if not any(a.shape == [tokens * top_k] and a.dtype == "int" for a in before):
        return None
    outputs = _gemm_outputs(before, tokens)
    if outputs is None:
        return None
    return _MoeShapes(top_k, weight_type, *outputs)


def _moe_rows(
    events: pd.DataFrame,
    launches: list[tuple[int, int, int]],
    args: tuple[list, list],
    allocs: list[_Alloc],
    ts: np.ndarray,
) -> list[PseudoRow]:
    """The two GEMM rows and the finalize row of one MoE frame (none unless both GEMMs fit)."""
    (hidden, logits), (hidden_type, logits_type) = args
    tokens = hidden[0]
    gemms = [(u, g) for u, g, _ in launches if str(events["name"].iat[g]).startswith("bmm_")]
    if len(gemms) != 2:
        return []
    shapes = _moe_shapes([a for a in allocs if a.ts <= ts[gemms[0][0]]], tokens)
    if shapes is None:
        return []
    top_k, g1_out, g2_out = shapes.top_k, shapes.g1_out, shapes.g2_out
    routed, out_types = tokens * top_k, [g1_out.dtype, g2_out.dtype]
    rows: list[PseudoRow] = []
    for name, (u, g) in zip((GEMM1, GEMM2), gemms, strict=True):
        kernel, grid = _kernel(events, g)
        if not grid:
            return []
        rows.append(
            PseudoRow(
                launch=u,
                name=name,
                dims=[
                    hidden,
                    logits,
                    [tokens, top_k],
                    [routed],
                    g1_out.shape,
                    g2_out.shape,
                    [],
                    [],
                ],
                types=[hidden_type, logits_type, "int", "int", *out_types, "ScalarList", ""],
                concrete=["", "", "", "", "", "", grid, kernel],
            )
        )
    out = next((a for a in allocs if a.shape == hidden and a.dtype == hidden_type), None)
    if out is not None:
        rows += _finalize_row(events, launches, ts, ts[gemms[1][0]], shapes, out)
    return rows


def _finalize_row(
    events: pd.DataFrame,
    launches: list[tuple[int, int, int]],
    ts: np.ndarray,
    after: float,
    shapes: _MoeShapes,
    out: _Alloc,
) -> list[PseudoRow]:
    """The finalize pseudo op on the first finalize kernel launched after gemm2, if any."""
    tokens = out.shape[0]  # the output has the hidden shape [T, H]
    for u, g, _ in launches:
        kernel = str(events["name"].iat[g])
        if FINALIZE_KERNEL in kernel and ts[u] > after:
            return [
                PseudoRow(
                    launch=u,
                    name=FINALIZE,
                    dims=[
                        shapes.g2_out.shape,
                        [tokens, shapes.top_k],
                        [tokens * shapes.top_k],
                        out.shape,
                        [],
                    ],
                    types=[shapes.g2_out.dtype, shapes.weight_type, "int", out.dtype, ""],
                    concrete=["", "", "", "", kernel],
                )
            ]
    return []


def _topk_pair(allocs: list[_Alloc], tokens: int) -> tuple[int, str] | None:
    """k and the weights' dtype from the first [T, k] shape allocated as int32 and as floating."""
    for a in allocs:
        if len(a.shape) != 2 or a.shape[0] != tokens or a.dtype != "int" or a.shape[1] < 1:
            continue
        weights = next((b for b in allocs if b.shape == a.shape and b.dtype in FLOATING), None)
        if weights is not None:
            return a.shape[1], weights.dtype
    return None


def _gemm_outputs(allocs: list[_Alloc], tokens: int) -> tuple[_Alloc, _Alloc] | None:
    """The last two 2-D allocations with a common first dim other than T, in time order."""
    rows = [a for a in allocs if len(a.shape) == 2 and a.shape[0] != tokens]
    if len(rows) < 2 or rows[-2].shape[0] != rows[-1].shape[0]:
        return None
    return rows[-2], rows[-1]


def _quant_rows(
    events: pd.DataFrame,
    launches: list[tuple[int, int, int]],
    args: tuple[list, list],
    allocs: list[_Alloc],
) -> list[PseudoRow]:
    (hidden, _), (hidden_type, _) = args
    quant = [(u, g) for u, g, _ in launches if QUANT_KERNEL in str(events["name"].iat[g])]
    out = next((a for a in allocs if a.shape == hidden and a.dtype in FP8), None)
    scales = next((a for a in allocs if len(a.shape) == 1 and a.dtype == "unsigned char"), None)
    if len(quant) != 1 or out is None or scales is None:
        return []
    u, g = quant[0]
    return [
        PseudoRow(
            launch=u,
            name=MXFP8_QUANTIZE,
            dims=[hidden, out.shape, scales.shape],
            types=[hidden_type, out.dtype, scales.dtype],
            concrete=["", "", "", str(events["name"].iat[g])],
        )
    ]
