"""Where copies and collectives come from, and when (docs/analysis.md#copies,
docs/analysis.md#multi-kernel).

Each GPU event is traced to the host call that launched it (`gpu.launch`), then up its
operator chain (`host_blocking.call_sites`). Its **call site** is the outermost namespaced
operator of that chain (`aten::clone` in `CompiledFunction > aten::clone > aten::copy_`,
`_c10d_functional::all_reduce_` above `record_param_comms`), else the innermost operator, else
the runtime call; its **caller** the nearest operator around the call site that is not
namespaced (`CompiledFunction`, `CompiledFunctionBackward`, `DistributedDataParallel.forward`).
It is **compiled** when the chain passes through a compiled region. Each event also falls in
one phase of the window (set-up, warm-up, steady, tail; docs/analysis.md#phases), by its start.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from pydantic import BaseModel

from ..trace.columns import MISSING
from ..trace.host_blocking import call_sites
from ..trace.idle_causes import IdleBreakdown
from ..trace.idle_window import length_within
from ..trace.intervals import Intervals
from ..trace.model import TraceModel

NAMESPACED = re.compile(r"^[A-Za-z_]\w*(::\w+)+(\.\w+)?$")  # aten::clone, c10d::allreduce_
COMPILED = re.compile(r"CompiledFunction|Torch-Compiled Region|torch_compile|CompiledFxGraph")
NO_LAUNCH = "(launch not recorded)"
TOP_SOURCES = 4
TOP_CALLERS = 3
PHASE_ORDER = ("setup", "warmup", "steady", "tail")


class Source(BaseModel):
    """The events of one call site (compiled or not) within a group."""

    call_site: str
    callers: list[str]  # longest first, at most TOP_CALLERS
    op_chain: str  # the longest-running chain, outermost first
    module: str
    frame: str
    compiled: bool
    count: int
    time_us: float
    exposed_us: float
    percent_of_group: float


class Timing(BaseModel):
    """When a group's events ran: time per phase and their count per steady iteration."""

    by_phase_us: dict[str, float]
    steady_count: int
    steady_iterations: int  # 0: no iteration found, the counts per step unknown
    per_iteration: float | None
    steady_exposed_us: float  # exposed time inside the steady state (all of it without one)


def _split(chain: str) -> tuple[str, str, bool]:
    """(call site, caller, compiled) of one operator chain (module docstring)."""
    ops = [op for op in chain.split(" > ") if op]
    named = [i for i, op in enumerate(ops) if NAMESPACED.match(op)]
    at = named[0] if named else len(ops) - 1
    site = ops[at] if ops else ""
    caller = next((op for op in reversed(ops[:at]) if not NAMESPACED.match(op)), "")
    return site, caller, bool(COMPILED.search(chain))


def event_sources(model: TraceModel, frame: pd.DataFrame) -> pd.DataFrame:
    """call_site, caller, compiled, op_chain, module, frame of each GPU event in `frame`."""
    launch = frame["launch"].to_numpy(dtype=np.int64)
    known = launch != MISSING
    n = len(frame)
    out = pd.DataFrame(
        {
            "call_site": np.full(n, NO_LAUNCH, dtype=object),
            "caller": np.full(n, "", dtype=object),
            "compiled": np.zeros(n, dtype=bool),
            "op_chain": np.full(n, "", dtype=object),
            "module": np.full(n, "", dtype=object),
            "frame": np.full(n, "", dtype=object),
        }
    )
    if not known.any():
        return out
    sites = call_sites(model, launch[known])
    chains = sites["op_chain"].astype(str)
    unique = pd.unique(chains)
    split = {c: _split(c) for c in unique}  # one parse per distinct chain
    site = chains.map(lambda c: split[c][0]).to_numpy(dtype=object)
    site = np.where(site == "", sites["call"].to_numpy(dtype=object), site)
    rows = np.flatnonzero(known)
    out.loc[rows, "call_site"] = site
    out.loc[rows, "caller"] = chains.map(lambda c: split[c][1]).to_numpy(dtype=object)
    out.loc[rows, "compiled"] = chains.map(lambda c: split[c][2]).to_numpy(dtype=bool)
    out.loc[rows, "op_chain"] = chains.to_numpy(dtype=object)
    out.loc[rows, "module"] = sites["module"].to_numpy(dtype=object)
    out.loc[rows, "frame"] = sites["frame"].to_numpy(dtype=object)
    return out


def exposed_each(start: np.ndarray, end: np.ndarray, hiding: Intervals) -> np.ndarray:
    """Each event's time that no hiding interval covers (µs)."""
    return np.maximum(end - start - length_within(hiding, start, end), 0.0)


def phase_of(start: np.ndarray, idle: IdleBreakdown | None) -> np.ndarray:
    """Each start's phase; "steady" for all when no iteration was found (nothing to exclude)."""
    if idle is None or idle.phases is None or not idle.iterations.iterations:
        return np.full(len(start), "steady", dtype=object)
    its, origin = idle.iterations.iterations, idle.iterations.origin_us
    begin = origin + min(it.host_start_ms for it in its) * 1e3
    finish = origin + max(it.host_end_ms for it in its) * 1e3
    steady = idle.phases.steady
    steady_from = origin + its[steady[0]].host_start_ms * 1e3 if steady else finish
    edges = np.array([begin, steady_from, finish])
    return np.array(PHASE_ORDER, dtype=object)[np.searchsorted(edges, start, side="right")]


def timing(
    phase: np.ndarray, dur: np.ndarray, exposed: np.ndarray, idle: IdleBreakdown | None
) -> Timing:
    """The group's time per phase and its count per steady iteration."""
    by_phase = {p: round(float(dur[phase == p].sum()), 3) for p in PHASE_ORDER}
    steady = phase == "steady"
    n = len(idle.phases.steady) if idle is not None and idle.phases is not None else 0
    count = int(steady.sum())
    return Timing(
        by_phase_us={p: v for p, v in by_phase.items() if v > 0},
        steady_count=count,
        steady_iterations=n,
        per_iteration=round(count / n, 2) if n else None,
        steady_exposed_us=round(float(exposed[steady].sum()), 3),
    )


def sources(table: pd.DataFrame, dur: np.ndarray, exposed: np.ndarray) -> list[Source]:
    """The group's call sites (event_sources rows), longest first, at most TOP_SOURCES."""
    if table.empty:
        return []
    site = table["call_site"].to_numpy(dtype=object)
    compiled = table["compiled"].to_numpy(dtype=bool)
    key, _ = pd.factorize(pd.Series(site).astype(str) + np.where(compiled, "\x00c", ""))
    time = np.bincount(key, weights=dur)
    hidden = np.bincount(key, weights=exposed)
    count = np.bincount(key)
    total = float(dur.sum())
    out = []
    for k in np.argsort(-time, kind="stable")[:TOP_SOURCES]:
        rows = key == k
        first = int(np.argmax(rows))
        out.append(
            Source(
                call_site=str(site[first]),
                callers=_top(table["caller"], rows, dur, TOP_CALLERS),
                op_chain=next(iter(_top(table["op_chain"], rows, dur, 1)), ""),
                module=next(iter(_top(table["module"], rows, dur, 1)), ""),
                frame=next(iter(_top(table["frame"], rows, dur, 1)), ""),
                compiled=bool(compiled[first]),
                count=int(count[k]),
                time_us=round(float(time[k]), 3),
                exposed_us=round(float(hidden[k]), 3),
                percent_of_group=round(float(time[k]) / total * 100, 2) if total > 0 else 0.0,
            )
        )
    return out


def _top(column: pd.Series, rows: np.ndarray, dur: np.ndarray, n: int) -> list[str]:
    """The non-empty values of `column` among `rows` with the most time, at most n."""
    codes, values = pd.factorize(column.to_numpy(dtype=object)[rows], use_na_sentinel=False)
    time = np.bincount(codes, weights=dur[rows], minlength=len(values))
    ranked = [str(values[i]) for i in np.argsort(-time, kind="stable")]
    return [v for v in ranked if v][:n]
