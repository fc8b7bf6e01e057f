"""Pseudo ops: one synthetic `cpu_op` above a kernel its framework op hides.

See docs/trace.md#pseudo-ops.

Some framework ops launch several kernels whose shapes the op's own args do not carry, while
the trace records them elsewhere. A pseudo op is a new row, inserted between the launch and
the frame that made it (parent -> pseudo op -> launch -> kernel), whose `Input Dims`,
`Input type` and `Concrete Inputs` are composed from those recorded values, so the kernel
gets a perf model of its own. Rows are appended at the end of the events table, as the
graph-capture graft does; the file holds none of them.

Implemented: the MXFP4 mixture-of-experts GEMMs of `triton_kernels.matmul_ogs` (vLLM's
gpt-oss path, `vllm::moe_forward`). The launch of every `_matmul_ogs_*` kernel sits in the
Python frame `triton_kernels/matmul_ogs.py(...): matmul_ogs`, which first calls
`_canonicalize_storage` on the activation and then on the expert weights; the `aten::view`
under each records its shape and dtype. The router's `TopK` op (under the same framework op)
records the router logits [tokens, experts] and k. The pseudo op
`pseudo_op::moe_triton_unfused_up` (the first such launch under the op) or `..._down` (the
next ones) gets:

    Input Dims       [x, w, router_logits, [], []]
    Input type       [x dtype, w storage dtype, router dtype, "Scalar", ""]
    Concrete Inputs  ["", "", "", k, kernel name]

(the names are TraceLens's; its pseudo op inherits moe_forward's args instead, see
docs/deviations.md). A launch is left alone when any of those facts is missing, so the
kernel keeps its synthetic-op row. The stage is idempotent: a launch whose parent is already
a pseudo op (a capture-time one copied under a graph replay) is skipped. Grafted rows carry
no views, so replayed graphs get their pseudo ops from the capture trace, whose own model
ran this stage before the graft copied its rows. flashinfer's trtllm-gen MXFP4 MoE gets its
pseudo ops from pseudo_trtllm.py, in the same pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import MISSING, concat_rows, name_matches
from .pseudo_rows import PSEUDO_PREFIX, PseudoRow, json_list
from .pseudo_trtllm import trtllm_moe_rows
from .schema import GPU_CATEGORIES, GRAPH_LAUNCH_NAMES, LAUNCH_CATEGORIES
from .tree import nearest_ancestor

MOE_OGS_UP = "pseudo_op::moe_triton_unfused_up"
MOE_OGS_DOWN = "pseudo_op::moe_triton_unfused_down"
OGS_KERNEL_PREFIX = "_matmul_ogs_"
OGS_FRAME = re.compile(r"(^|/)triton_kernels/matmul_ogs\.py\(\d+\): matmul_ogs$")
CANONICALIZE_FRAME = re.compile(
    r"(^|/)triton_kernels/matmul_ogs\.py\(\d+\): _canonicalize_storage$"
)
ROUTER_OP = "TopK"
VIEW_OP = "aten::view"


@dataclass(frozen=True)
class PseudoOps:
    """The events table and tree with the pseudo-op rows appended; `inserted` rows were added."""

    events: pd.DataFrame
    parent: np.ndarray
    launch: np.ndarray
    inserted: int


def insert_pseudo_ops(events: pd.DataFrame, launch: np.ndarray, parent: np.ndarray) -> PseudoOps:
    """Add a pseudo op above every MoE kernel launch whose shapes the trace records."""
    rows = [*_moe_ogs_rows(events, parent), *trtllm_moe_rows(events, parent)]  # pseudo_trtllm.py
    if not rows:
        return PseudoOps(events=events, parent=parent, launch=launch, inserted=0)
    base = len(events)
    parent = parent.copy()
    block_parent = np.empty(len(rows), dtype=np.int64)
    for i, row in enumerate(rows):
        block_parent[i] = parent[row.launch]
        parent[row.launch] = base + i
    block = pd.DataFrame([row.columns(events) for row in rows])
    return PseudoOps(
        events=concat_rows(events, [block]),
        parent=np.concatenate([parent, block_parent]),
        launch=np.concatenate([launch, np.full(len(rows), MISSING, dtype=launch.dtype)]),
        inserted=len(rows),
    )


def _moe_ogs_rows(events: pd.DataFrame, parent: np.ndarray) -> list[PseudoRow]:
    cat = events["cat"]
    names = events["name"]
    is_runtime = cat.isin(LAUNCH_CATEGORIES).to_numpy()
    is_cpu_op = (cat == "cpu_op").to_numpy()
    is_python = (cat == "python_function").to_numpy()

    def ogs(n: str) -> bool:
        return n.startswith(OGS_KERNEL_PREFIX)

    kernel_of: dict[int, str] = {}
    # capture traces: the runtime call names its kernel (`kernel` arg); nothing ran on the GPU
    by_arg = np.flatnonzero(is_runtime & name_matches(events["launch_kernel"], ogs))
    for u in by_arg.tolist():
        kernel_of[u] = str(events["launch_kernel"].iat[u])
    # eager traces: the kernel hangs under its launch in the tree
    gpu = np.flatnonzero(cat.isin(GPU_CATEGORIES).to_numpy() & name_matches(names, ogs))
    for g, u in zip(gpu.tolist(), parent[gpu].tolist(), strict=True):
        if u != MISSING and is_runtime[u] and u not in kernel_of:
            kernel_of[u] = str(names.iat[g])
    if not kernel_of:
        return []
    launches = np.array(sorted(kernel_of), dtype=np.int64)
    graph = name_matches(names, lambda n: n in GRAPH_LAUNCH_NAMES)
    pseudo = is_cpu_op & name_matches(names, lambda n: n.startswith(PSEUDO_PREFIX))
    up = parent[launches]
    launches = launches[~graph[launches] & ~((up != MISSING) & pseudo[np.maximum(up, 0)])]
    if not len(launches):
        return []

    ogs_frame = is_python & name_matches(names, lambda n: bool(OGS_FRAME.search(n)))
    frame = nearest_ancestor(parent, ogs_frame, launches)
    owner = nearest_ancestor(parent, is_cpu_op, launches)
    views = _views_by_frame(events, parent, is_cpu_op, is_python, ogs_frame)
    routers = _router_by_owner(events, parent, is_cpu_op)
    ts = events["ts"].to_numpy()

    rows: list[PseudoRow] = []
    seen: dict[int, int] = {}  # owner op -> matmul_ogs launches under it so far
    for i in np.argsort(ts[launches], kind="stable").tolist():
        u, f, o = int(launches[i]), int(frame[i]), int(owner[i])
        if f == MISSING or o == MISSING or o not in routers:
            continue
        found = [v for t, v in views.get(f, []) if t <= ts[u]]
        if len(found) < 2:
            continue
        (x_dims, x_type), (w_dims, w_type) = found[0], found[1]
        r_dims, r_type, k = routers[o]
        index = seen.get(o, 0)
        seen[o] = index + 1
        rows.append(
            PseudoRow(
                launch=u,
                name=MOE_OGS_UP if index == 0 else MOE_OGS_DOWN,
                dims=[x_dims, w_dims, r_dims, [], []],
                types=[x_type, w_type, r_type, "Scalar", ""],
                concrete=["", "", "", k, kernel_of[u]],
            )
        )
    return rows


def _first_tensor(events: pd.DataFrame, u: int) -> tuple[list[int], str] | None:
    """Shape and dtype of input 0 of cpu_op `u`, when it is a tensor with a recorded shape."""
    dims = json_list(events["input_dims"].iat[u])
    types = json_list(events["input_type"].iat[u])
    if not dims or not types or not isinstance(dims[0], list) or not dims[0]:
        return None
    if not all(isinstance(d, int) for d in dims[0]) or not isinstance(types[0], str):
        return None
    return dims[0], types[0]


def _views_by_frame(
    events: pd.DataFrame,
    parent: np.ndarray,
    is_cpu_op: np.ndarray,
    is_python: np.ndarray,
    ogs_frame: np.ndarray,
) -> dict[int, list[tuple[float, tuple[list[int], str]]]]:
    """matmul_ogs frame -> (start, (shape, dtype)) of the tensors it canonicalised, by time."""
    names = events["name"]
    canon = is_python & name_matches(names, lambda n: bool(CANONICALIZE_FRAME.search(n)))
    view = np.flatnonzero(is_cpu_op & name_matches(names, lambda n: n == VIEW_OP))
    # the view sits in the canonicalising frame (through a `<built-in method view>` frame),
    # with no other op in between; the frame is called by matmul_ogs
    view = view[nearest_ancestor(parent, canon | is_cpu_op, view) != MISSING]
    holder = nearest_ancestor(parent, canon | is_cpu_op, view)
    view, holder = view[canon[holder]], holder[canon[holder]]
    frame = nearest_ancestor(parent, ogs_frame, holder)
    ts = events["ts"].to_numpy()
    out: dict[int, list[tuple[float, tuple[list[int], str]]]] = {}
    for i in np.argsort(ts[view], kind="stable").tolist():
        tensor = _first_tensor(events, int(view[i]))
        if frame[i] != MISSING and tensor is not None:
            out.setdefault(int(frame[i]), []).append((float(ts[view[i]]), tensor))
    return out


def _router_by_owner(
    events: pd.DataFrame, parent: np.ndarray, is_cpu_op: np.ndarray
) -> dict[int, tuple[list[int], str, str]]:
    """Framework op -> (router logits shape, dtype, k) of the first TopK op under it."""
    names = events["name"]
    topk = np.flatnonzero(is_cpu_op & name_matches(names, lambda n: n == ROUTER_OP))
    if not len(topk):
        return {}
    ts = events["ts"].to_numpy()
    topk = topk[np.argsort(ts[topk], kind="stable")]
    owner = nearest_ancestor(parent, is_cpu_op, topk)
    out: dict[int, tuple[list[int], str, str]] = {}
    for u, o in zip(topk.tolist(), owner.tolist(), strict=True):
        if o == MISSING or o in out:
            continue
        tensor = _first_tensor(events, u)
        concrete = json_list(events["concrete_inputs"].iat[u]) or []
        k = str(concrete[1]) if len(concrete) > 1 else ""
        if tensor is not None and len(tensor[0]) == 2 and k.isdigit() and int(k) > 0:
            out[o] = (tensor[0], tensor[1], k)
    return out
