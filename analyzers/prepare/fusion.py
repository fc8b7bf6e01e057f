"""`category_data/fusion_candidates.json`: kernel sequences worth fusing.

See docs/analysis.md#fusion-candidates.

Standalone algorithm only: a module pass (host containers with >= 2 GPU events, by base name)
and a sibling pass (rule-B ops owning one kernel each, grouped by parent); then the filters,
attention narrowing, dedup by kernel set and the data in/out split when a summary is given.

Lookups of data in/out and input shapes live in fusion_lookup.py.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from ..perf import registry
from ..report.launchers import subtree_pairs
from ..report.unified import UnifiedOps, attribute_unified
from ..trace.columns import MISSING, name_matches
from ..trace.model import TraceModel
from ..trace.pseudo_rows import PSEUDO_PREFIX
from ..trace.tree import ancestors
from .fusion_lookup import KernelLookup, KernelShapes, json_cell
from .fusion_lookup import data_in_out as data_in_out  # re-export
from .kernel_types import classify_kernel

FUSION_FILE = "fusion_candidates.json"
MODULE_PREFIX = "nn.Module: "
SKIPPED_CONTAINERS = ("kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver")
FUSION_EXCLUDED_KERNELS = ("nccl", "rccl", "memcpy", "memset")
FUSION_ALREADY_FUSED = ("attn_fwd", "attn_bwd", "fmha", "unified_attention", "paged_attention")
FUSION_ALREADY_FUSED += ("flash_attn", "flash_fwd", "silu_and_mul")
NORM_NAMES = ("batchnorm", "layernorm", "groupnorm", "instancenorm", "rmsnorm")
MATRIX_TYPES = ("GEMM", "Conv")
PASSIVE_TYPES = ("Elementwise Add", "Copy/Cast")
_TRAILING_COUNTER = re.compile(r"_\d+$")


@dataclass
class FusionCandidate:
    """One entry of fusion_candidates.json (sibling kernels use the sibling key names)."""

    module_name: str
    base_name: str
    parent_chain: list[str]
    instance_count: int
    kernel_count: int
    eligible_kernel_count: int
    kernels: list[dict[str, Any]]
    kernel_type_signature: list[str]
    kernel_type_summary: dict[str, int]
    has_fused_kernel: bool
    total_kernel_time_us: float
    input_dims: Any = None
    source: str | None = None
    # what the counted instances' kernels really took: total_kernel_time_us of a narrowed
    # attention candidate is its first instance times the count (docs/analysis.md#kernel-fusion)
    measured_kernel_time_us: float | None = None

    def kernel_names(self) -> tuple[str, ...]:
        return tuple(_kernel_name(k) for k in self.kernels)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data["source"] is None:
            data.pop("source")
        return data


def base_name(name: str) -> str:
    """`nn.Module: BertLayer_3` -> `BertLayer`; other names keep all but a trailing `_<n>`."""
    if name.startswith(MODULE_PREFIX):
        name = name[len(MODULE_PREFIX) :]
    return _TRAILING_COUNTER.sub("", name)


def chain_label(name: str) -> str:
    return (
        name.removeprefix(MODULE_PREFIX) if name.startswith(MODULE_PREFIX) else name.rsplit("/")[-1]
    )


def is_excluded(name: str) -> bool:
    return any(word in name.lower() for word in FUSION_EXCLUDED_KERNELS)


@lru_cache(maxsize=1 << 16)
def is_already_fused(name: str) -> bool:
    return any(word in name.lower() for word in FUSION_ALREADY_FUSED)


def _kernel_name(kernel: dict[str, Any]) -> str:  # module pass: name; sibling: kernel_name
    return kernel["name"] if "name" in kernel else kernel.get("kernel_name", "")


def _kernel_type(kernel: dict[str, Any]) -> str:
    return kernel["type"] if "type" in kernel else kernel.get("kernel_type", "Unknown")


@lru_cache(maxsize=1 << 16)
def _eligible(name: str) -> bool:
    return not is_excluded(name) and not is_already_fused(name)


def _signature(kernels: list[dict[str, Any]]) -> list[str]:
    return [_kernel_type(k) for k in kernels]


def _summary(signature: list[str]) -> dict[str, int]:
    return dict(Counter(signature))


def gemm_norm_only(kernels: list[dict[str, Any]]) -> bool:
    """A GEMM/conv kernel with nothing else but norms, plain adds and copies around it.

    Needs at least one other kernel: GEMM + split-K reduce (two GEMM kernels) stays a candidate.
    """
    types = [_kernel_type(k) for k in kernels]
    matrix = [k for k, t in zip(kernels, types, strict=True) if t in MATRIX_TYPES]
    others = [k for k, t in zip(kernels, types, strict=True) if t not in MATRIX_TYPES]
    if not matrix or not others:
        return False
    return all(
        any(n in _kernel_name(k).lower() for n in NORM_NAMES) or _kernel_type(k) in PASSIVE_TYPES
        for k in others
    )


def _candidate(
    raw: str, base: str, chain: list, kernels: list, time_us: float, dims: Any, source=None
) -> FusionCandidate:
    names = [_kernel_name(k) for k in kernels]
    signature = _signature(kernels)
    return FusionCandidate(
        module_name=raw,
        base_name=base,
        parent_chain=chain,
        instance_count=1,
        kernel_count=len(kernels),
        eligible_kernel_count=sum(_eligible(n) for n in names),
        kernels=kernels,
        kernel_type_signature=signature,
        kernel_type_summary={} if source else _summary(signature),
        has_fused_kernel=any(is_already_fused(n) for n in names),
        total_kernel_time_us=time_us,
        input_dims=dims,
        source=source,
        measured_kernel_time_us=time_us,
    )


@lru_cache(maxsize=1 << 16)
def _kernel_traits(name: str) -> tuple[str, bool]:
    """(kernel type, eligible for fusion) of one kernel name, computed once per name."""
    return classify_kernel(name)[0], _eligible(name)


def _base_names(column: pd.Series, uids: np.ndarray) -> np.ndarray:
    """`base_name` of each event's name, computed once per distinct name ("None" when it
    has none)."""
    values = column.array
    codes = np.asarray(values.codes[uids], dtype=np.int64)
    table = np.empty(len(values.categories) + 1, dtype=object)
    for code in np.unique(codes).tolist():
        table[code] = base_name(str(values.categories[code]) if code >= 0 else "None")
    return table[codes]


def _container_kernels(model: TraceModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Host containers with >= 2 linked GPU events, in uid order, and their kernels.

    Returns (uids, kernel nodes sorted by container then time, start of each container's
    slice of those nodes); a container's slice is empty when it launched only copies/sets.
    """
    ev = model.events
    ts = ev["ts"].to_numpy()
    gpu = model.gpu
    linked = gpu.index.to_numpy()[gpu["linked"].to_numpy()]
    linked = linked[np.lexsort((linked, ts[linked]))]  # by start time, then uid
    rank = np.zeros(len(ev), dtype=np.int64)
    rank[linked] = np.arange(len(linked))
    is_container = ~ev["cat"].isin(SKIPPED_CONTAINERS).to_numpy() & (ev["ph"] == "X").to_numpy()
    pairs = subtree_pairs(model.tree.parent, linked, is_container)
    anc, node = pairs["ancestor"].to_numpy(), pairs["node"].to_numpy()
    order = np.argsort(anc * max(len(linked), 1) + rank[node])  # by container, then time
    anc, node = anc[order], node[order]
    starts = np.flatnonzero(np.r_[True, anc[1:] != anc[:-1]]) if len(anc) else anc
    counts = np.diff(np.r_[starts, len(anc)])
    big = counts >= 2
    keep = np.repeat(big, counts) & (ev["cat"] == "kernel").to_numpy()[node]
    uids, anc, node = anc[starts[big]], anc[keep], node[keep]
    return uids, node, np.append(np.searchsorted(anc, uids, side="left"), len(node))


def _first_instances(
    bases: np.ndarray, considered: np.ndarray, qualifies: np.ndarray, times: np.ndarray
) -> list[tuple[int, int, float]]:
    """Group instances (in uid order) by base name: each base's entry is its first instance
    that `qualifies`; it counts that instance and every later `considered` one, and sums
    their times in order. Returns (position of the entry, instance count, total time)."""
    base_id, _ = pd.factorize(bases)
    position = np.arange(len(bases))
    first = np.full(base_id.max() + 1, len(bases))
    np.minimum.at(first, base_id[qualifies], position[qualifies])
    counted = considered & (position >= first[base_id])
    instances = np.bincount(base_id[counted], minlength=len(first))
    totals = np.zeros(len(first))
    np.add.at(totals, base_id[counted], times[counted])  # in uid order, a running sum
    order = np.argsort(first, kind="stable")
    order = order[first[order] < len(bases)]
    return [(int(first[b]), int(instances[b]), float(totals[b])) for b in order]


def _segment_sums(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Sum of `values[bounds[i]:bounds[i + 1]]` per segment (0 for an empty one)."""
    sizes = np.diff(bounds)
    out = np.zeros(len(sizes))
    if len(values):
        out[sizes > 0] = np.add.reduceat(values, bounds[:-1][sizes > 0])
    return out


def _module_pass(model: TraceModel) -> list[FusionCandidate]:
    """One candidate per container base name: its first instance with >= 2 kernels, plus
    the count and kernel time of that instance and every later one."""
    names, dur = model.names, model.events["dur"].to_numpy()
    uids, nodes, bounds = _container_kernels(model)
    if not len(uids):
        return []
    bases = _base_names(model.events["name"], uids)
    named = bases != ""
    qualifies = named & (np.diff(bounds) >= 2)
    entries = []
    times = _segment_sums(dur[nodes], bounds)
    for pos, count, total in _first_instances(bases, named, qualifies, times):
        uid = int(uids[pos])
        kernels = [
            _module_kernel(str(names[k]), float(dur[k]), int(k))
            for k in nodes[bounds[pos] : bounds[pos + 1]]
        ]
        chain = [chain_label(str(names[a])) for a in ancestors(model.tree.parent, uid)]
        dims = json_cell(model.events["input_dims"].iat[uid])
        c = _candidate(str(names[uid]), str(bases[pos]), chain, kernels, total, dims)
        c.instance_count = count
        entries.append(c)
    return entries


def _module_kernel(name: str, dur_us: float, uid: int) -> dict[str, Any]:
    kind, eligible = _kernel_traits(name)
    return {"name": name, "type": kind, "dur_us": dur_us, "eligible": eligible, "gpu_op_uid": uid}


def _single_kernel_ops(model: TraceModel, ops: pd.DataFrame, owned: pd.DataFrame):
    """(op uid, kernel uid, parent uid) of the real ops owning exactly one GPU event, a
    kernel, sorted by parent then start time."""
    ev = model.events
    # pseudo ops are our own insertions above one kernel each (trace/pseudo.py), not code a
    # user could fuse: their kernels stay with the frame that launched them (module pass)
    pseudo = name_matches(ops["name"].astype("category"), lambda n: n.startswith(PSEUDO_PREFIX))
    real = ~ops["synthetic"].to_numpy() & ~pseudo
    op_row, gpu = owned["op"].to_numpy(), owned["gpu"].to_numpy()
    keep = real[op_row]
    op_row, gpu = op_row[keep], gpu[keep]
    single = np.bincount(op_row, minlength=len(ops))[op_row] == 1
    single &= (ev["cat"] == "kernel").to_numpy()[gpu]
    op_uid, gpu = ops["uid"].to_numpy()[op_row[single]], gpu[single]
    parent = model.tree.parent[op_uid]
    keep = parent != MISSING
    op_uid, gpu, parent = op_uid[keep], gpu[keep], parent[keep]
    order = np.lexsort((ev["ts"].to_numpy()[op_uid], parent))  # stable: ties keep row order
    return op_uid[order], gpu[order], parent[order]


def _sibling_pass(model: TraceModel, ops: pd.DataFrame, owned: pd.DataFrame) -> list:
    """Ops owning exactly one kernel, grouped under their parent (>= 2 per parent)."""
    names, dur = model.names, model.events["dur"].to_numpy()
    op_uid, gpu, parent = _single_kernel_ops(model, ops, owned)
    if not len(op_uid):
        return []
    parents, starts = np.unique(parent, return_index=True)
    bounds = np.append(starts, len(parent))
    grouped = np.diff(bounds) >= 2
    if not grouped.any():
        return []
    times = _segment_sums(dur[gpu], bounds)[grouped]
    parents, ends, starts = parents[grouped], bounds[1:][grouped], starts[grouped]
    bases = _base_names(model.events["name"], parents)
    entries = []
    every = np.ones(len(parents), dtype=bool)
    for pos, count, total in _first_instances(bases, every, every, times):
        a, b = starts[pos], ends[pos]
        kernels = [
            _sibling_kernel(names, int(o), int(k), dur)
            for o, k in zip(op_uid[a:b], gpu[a:b], strict=True)
        ]
        uid = int(parents[pos])
        dims = json_cell(model.events["input_dims"].iat[uid])
        raw, base = str(names[uid]), str(bases[pos])
        c = _candidate(raw, base, [], kernels, total, dims, "sibling_sequence")
        c.instance_count = count
        entries.append(c)
    return entries


def _sibling_kernel(names: np.ndarray, op: int, k: int, dur: np.ndarray) -> dict[str, Any]:
    name = str(names[k])
    return {
        "op": str(names[op]),
        "kernel_type": _kernel_traits(name)[0],
        "kernel_name": name,
        "dur_us": float(dur[k]),
        "gpu_op_uid": k,
    }


def narrow_attention(
    candidate: FusionCandidate, lookup: KernelLookup, shapes: KernelShapes | dict[int, str | None]
) -> None:
    """Keep only the GEMM..softmax..GEMM slice of an unfused attention block."""
    kernels = candidate.kernels
    gemm: dict[int, bool] = {}

    def is_gemm(j: int) -> bool:
        if j not in gemm:
            info = lookup.get(_kernel_name(kernels[j]), shapes.get(kernels[j]["gpu_op_uid"]))
            gemm[j] = bool(info) and info.get("op_category") == "GEMM"
        return gemm[j]

    for i, k in enumerate(kernels):
        if "softmax" not in _kernel_name(k).lower():
            continue
        before = next((j for j in range(i - 1, -1, -1) if is_gemm(j)), None)
        after = next((j for j in range(i + 1, len(kernels)) if is_gemm(j)), None)
        if after is None:  # no GEMM after this softmax, nor after any later one
            return
        if before is not None:
            part = kernels[before : after + 1]
            candidate.kernels = part
            candidate.kernel_count = len(part)
            candidate.eligible_kernel_count = sum(_eligible(_kernel_name(x)) for x in part)
            candidate.kernel_type_signature = _signature(part)
            if candidate.source is None:
                candidate.kernel_type_summary = _summary(candidate.kernel_type_signature)
            per_instance = sum(x["dur_us"] for x in part)
            candidate.total_kernel_time_us = per_instance * candidate.instance_count
            return


def _preference(c: FusionCandidate) -> tuple[bool, int]:
    return c.module_name.startswith(MODULE_PREFIX.strip()), len(c.parent_chain)


def dedup_by_kernel_set(candidates: list[FusionCandidate]) -> list[FusionCandidate]:
    """One candidate per ordered kernel-name tuple: prefer nn.Module, then a longer chain."""
    best: dict[tuple[str, ...], FusionCandidate] = {}
    for c in candidates:
        key = c.kernel_names()
        held = best.get(key)
        if held is None or _preference(c) > _preference(held):
            best[key] = c
    return list(best.values())


def fusion_candidates(
    model: TraceModel, unified_summary: pd.DataFrame | None, unified: UnifiedOps | None = None
) -> list[FusionCandidate]:
    """Standalone fusion candidates of one trace, sorted by total kernel time.

    `unified` is the report's rule-B attribution (`PerfReport.unified.ops`); without it the
    attribution is computed here."""
    modules = [
        c
        for c in _module_pass(model)
        if not c.has_fused_kernel and c.eligible_kernel_count >= 2 and not gemm_norm_only(c.kernels)
    ]
    if unified is None:
        unified = attribute_unified(model, registry.has_model, registry.has_backward)
    siblings = _sibling_pass(model, unified.ops, unified.kernels)
    candidates = modules + siblings
    if unified_summary is not None and not unified_summary.empty:
        shapes = KernelShapes(model, unified)
        lookup = KernelLookup.from_summary(unified_summary)
        for c in candidates:
            narrow_attention(c, lookup, shapes)
        candidates = dedup_by_kernel_set(candidates)
        for c in candidates:
            for k in c.kernels:
                info = lookup.get(_kernel_name(k), shapes.get(k["gpu_op_uid"]))
                if info is not None and info["data_in_mb"] is not None:
                    k["data_in_mb"] = info["data_in_mb"]
                    k["data_out_mb"] = info["data_out_mb"]
    return sorted(candidates, key=lambda c: -c.total_kernel_time_us)
