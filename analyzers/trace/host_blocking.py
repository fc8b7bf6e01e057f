"""Host calls that block until the GPU is done, the GPU idle they cost, and their call sites.

A blocking call is a synchronising runtime call, a synchronous copy, an asynchronous copy the
host still waited for, or a `.item()` (`aten::item` / `aten::_local_scalar_dense`) whose
runtime calls were not recorded as blocking. Each is charged the GPU idle time it overlaps
and, when the GPU ran dry while the host waited, the queue it drained. Definitions and
constants: docs/analysis.md#host-blocking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import MISSING, name_matches
from .idle_window import GpuWork, length_within
from .intervals import Intervals, merge
from .model import MODULE_PREFIX, TraceModel
from .schema import LAUNCH_CATEGORIES
from .tree import nearest_ancestor

SYNC_CALLS = re.compile(
    r"(cuda|hip)(Stream|Device|Event|Thread)Synchronize|cu(Stream|Ctx|Event)Synchronize"
)
_COPY_KINDS = r"(2D|3D|DtoH|HtoD|DtoD|Peer|ToSymbol|FromSymbol)?"
SYNC_COPIES = re.compile(
    rf"(cuda|hip)Memcpy{_COPY_KINDS}|hipMemcpyWithStream|cuMemcpy(DtoH|HtoD|DtoD)?(_v2)?"
)
ASYNC_COPIES = re.compile(
    rf"(cuda|hip)Memcpy{_COPY_KINDS}Async|cuMemcpy(DtoH|HtoD|DtoD)?Async(_v2)?"
)
SCALAR_OPS = frozenset({"aten::item", "aten::_local_scalar_dense"})
RETURN_TOLERANCE_US = 20.0  # a gap opening this soon after the call returns opened in it
MAX_OP_DEPTH = 16  # operators nest a few levels; deeper chains are cut at the top
_INSTANCE = re.compile(r"_\d+$")
_TORCH_FRAME = re.compile(r"(^|/)torch/")


@dataclass(frozen=True, slots=True)
class BlockingCalls:
    """One row per blocking call, its charged region and GPU idle, and its call site."""

    # uid, call, operator, op_chain, module, frame, wait_us, idle_us, charged_from, charged_to
    table: pd.DataFrame
    region: Intervals  # union of the charged regions


def _is_runtime_blocking(model: TraceModel, runtime: np.ndarray) -> np.ndarray:
    """Which runtime/driver uids block: sync calls, sync copies, waited-for async copies."""
    names = model.events["name"]
    sync = name_matches(names, lambda n: bool(SYNC_CALLS.fullmatch(n) or SYNC_COPIES.fullmatch(n)))
    is_async = name_matches(names, lambda n: bool(ASYNC_COPIES.fullmatch(n)))
    gpu = model.gpu
    linked = gpu[gpu["linked"].to_numpy()]
    copy_end = (linked["ts"] + linked["dur"].fillna(0)).groupby(linked["launch"].to_numpy()).max()
    end = (model.events["ts"] + model.events["dur"].fillna(0)).to_numpy()
    waited = np.zeros(len(names), dtype=bool)
    launches = copy_end.index.to_numpy()
    waited[launches] = copy_end.to_numpy() <= end[launches]
    return (sync | (is_async & waited))[runtime]


def blocking_calls(model: TraceModel, work: GpuWork) -> BlockingCalls:
    """Every blocking call with its call site, host wait and the GPU idle charged to it."""
    ev = model.events
    cat = ev["cat"]
    runtime = np.flatnonzero(cat.isin(LAUNCH_CATEGORIES).to_numpy())
    blocking_rt = runtime[_is_runtime_blocking(model, runtime)]
    is_scalar = (cat == "cpu_op").to_numpy() & name_matches(ev["name"], SCALAR_OPS.__contains__)
    parent = model.tree.parent
    # a scalar op counts when it launched runtime work, none of it recorded as blocking,
    # and no scalar op runs inside it
    scalars = np.flatnonzero(is_scalar)
    has_runtime = _marked(len(ev), nearest_ancestor(parent, is_scalar, runtime))
    covered = _marked(len(ev), nearest_ancestor(parent, is_scalar, blocking_rt))
    covered |= _marked(len(ev), nearest_ancestor(parent, is_scalar, scalars))
    scalar = scalars[has_runtime[scalars] & ~covered[scalars]]
    uids = np.sort(np.concatenate([blocking_rt, scalar]))
    return _charge(model, work, uids)


def _marked(n: int, uids: np.ndarray) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[uids[uids != MISSING]] = True
    return mask


def _charge(model: TraceModel, work: GpuWork, uids: np.ndarray) -> BlockingCalls:
    start = model.events["ts"].to_numpy(dtype=np.float64)[uids]
    wait = np.nan_to_num(model.events["dur"].to_numpy(dtype=np.float64)[uids])
    end = start + wait
    region_end = end.copy()
    idle = work.idle
    if len(idle):
        # a gap that opened while the host waited: the call drained the queue. Without the
        # wait the host would have been ahead by the time the GPU was busy during it
        j = np.minimum(np.searchsorted(idle.start, start, side="left"), len(idle) - 1)
        opened_at = idle.start[j]
        opened = (opened_at >= start) & (opened_at <= end + RETURN_TOLERANCE_US)
        ahead = (opened_at - start) - length_within(idle, start, opened_at)
        drained = np.minimum(end + ahead, idle.end[j])
        region_end = np.where(opened, np.maximum(end, drained), end)
    order = np.argsort(start, kind="stable")
    clipped = start.copy()
    reach = np.maximum.accumulate(region_end[order])
    clipped[order[1:]] = np.maximum(start[order[1:]], reach[:-1])  # earlier call keeps overlap
    charged = length_within(idle, clipped, region_end)
    table = pd.DataFrame(
        {
            "uid": uids,
            "wait_us": wait,
            "idle_us": charged,
            "charged_from": clipped,  # the region each call is charged (no two overlap)
            "charged_to": region_end,
        }
    )
    table = pd.concat([table, call_sites(model, uids)], axis=1)
    return BlockingCalls(table=table, region=merge(start, region_end))


def call_sites(model: TraceModel, uids: np.ndarray) -> pd.DataFrame:
    """call, operator (outermost cpu_op), op_chain, module, frame of each uid."""
    ev = model.events
    names = model.names
    parent = model.tree.parent
    is_op = (ev["cat"] == "cpu_op").to_numpy()
    levels = [np.where(is_op[uids], uids, nearest_ancestor(parent, is_op, uids))]
    for _ in range(MAX_OP_DEPTH - 1):
        above = np.full(len(uids), MISSING, dtype=np.int64)
        alive = levels[-1] != MISSING
        above[alive] = nearest_ancestor(parent, is_op, levels[-1][alive])
        if not (above != MISSING).any():
            break
        levels.append(above)
    chains = np.stack(levels, axis=1) if len(uids) else np.empty((0, 1), dtype=np.int64)
    unique, inverse = np.unique(chains, axis=0, return_inverse=True)
    text = [[str(names[u]) for u in row[::-1] if u != MISSING] for row in unique]
    chain = np.array([" > ".join(t) for t in text] + [""], dtype=object)[inverse.reshape(-1)]
    outer = np.array([t[0] if t else "" for t in text] + [""], dtype=object)[inverse.reshape(-1)]
    is_user_frame = (ev["cat"] == "python_function").to_numpy() & name_matches(
        ev["name"], lambda n: ".py(" in n and not _TORCH_FRAME.search(n)
    )
    frame = nearest_ancestor(parent, is_user_frame, uids)
    module = model.module[uids]
    frame_text = np.where(frame != MISSING, names[np.maximum(frame, 0)], "")
    module_text = np.where(module != MISSING, names[np.maximum(module, 0)], "")
    return pd.DataFrame(
        {
            "call": names[uids].astype(object),
            "operator": outer,
            "op_chain": chain,
            "module": _module_classes(module_text),
            "frame": frame_text.astype(object),
        }
    )


def _module_classes(frames: np.ndarray) -> np.ndarray:
    """`nn.Module: Router_0` -> `Router`; empty stays empty."""
    text = pd.Series(frames, dtype=object).str[len(MODULE_PREFIX) :].str.strip()
    return text.str.replace(_INSTANCE, "", regex=True).fillna("").to_numpy(dtype=object)


def charged_within(calls: BlockingCalls, idle: Intervals) -> BlockingCalls:
    """The same calls charged only the idle of `idle` (the part of their region no earlier
    cause took), so the call sites add up to the `sync` cause."""
    table = calls.table
    if table.empty:
        return calls
    start = table["charged_from"].to_numpy()
    end = table["charged_to"].to_numpy()
    return BlockingCalls(table.assign(idle_us=length_within(idle, start, end)), calls.region)


def call_site_table(calls: BlockingCalls) -> pd.DataFrame:
    """Calls grouped by site: count, host wait and charged GPU idle, most wait first."""
    keys = ["call", "operator", "op_chain", "module", "frame"]
    table = calls.table
    if table.empty:
        return pd.DataFrame(columns=[*keys, "count", "wait_us", "idle_us"])
    grouped = table.groupby(keys, sort=False, dropna=False).agg(
        count=("uid", "size"), wait_us=("wait_us", "sum"), idle_us=("idle_us", "sum")
    )
    return grouped.reset_index().sort_values(["wait_us", "idle_us"], ascending=False)
