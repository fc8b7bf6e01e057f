"""`category_data/fusion_candidates.json`: kernel sequences worth fusing.

See docs/analysis.md#fusion-candidates.

Standalone algorithm only: a module pass (host containers with >= 2 GPU events, by base name)
and a sibling pass (rule-B ops owning one kernel each, grouped by parent); then the filters,
attention narrowing, dedup by kernel set and the data in/out split when a summary is given.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooflens.analyzers.perf import registry
from rooflens.analyzers.prepare.kernel_types import classify_kernel
from rooflens.analyzers.report.launchers import subtree_pairs
from rooflens.analyzers.report.unified import attribute_unified
from rooflens.analyzers.report.write_csv import atomic_write_bytes
from rooflens.analyzers.trace.columns import MISSING
from rooflens.analyzers.trace.model import TraceModel
from rooflens.analyzers.trace.pseudo_rows import PSEUDO_PREFIX
from rooflens.analyzers.trace.tree import ancestors

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


def is_already_fused(name: str) -> bool:
    return any(word in name.lower() for word in FUSION_ALREADY_FUSED)


def _kernel_name(kernel: dict[str, Any]) -> str:  # module pass: name; sibling: kernel_name
    return kernel.get("name", kernel.get("kernel_name", ""))


def _kernel_type(kernel: dict[str, Any]) -> str:
    return kernel.get("type", kernel.get("kernel_type", "Unknown"))


def _eligible(name: str) -> bool:
    return not is_excluded(name) and not is_already_fused(name)


def _json_cell(text: Any) -> Any:
    if isinstance(text, str):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return None if isinstance(text, float) and math.isnan(text) else text


def _shape_key(dims: Any) -> str | None:
    """The first input shape as compact JSON text (the lookup key), or None."""
    dims = _json_cell(dims)
    if isinstance(dims, list | tuple) and dims:
        return json.dumps(dims[0], separators=(",", ":"))
    return None


def _signature(kernels: list[dict[str, Any]]) -> list[str]:
    return [_kernel_type(k) for k in kernels]


def _summary(signature: list[str]) -> dict[str, int]:
    return dict(Counter(signature))


def gemm_norm_only(kernels: list[dict[str, Any]]) -> bool:
    """A GEMM/conv kernel with nothing else but norms, plain adds and copies around it.

    Needs at least one other kernel: GEMM + split-K reduce (two GEMM kernels) stays a candidate.
    """
    matrix = [k for k in kernels if _kernel_type(k) in MATRIX_TYPES]
    others = [k for k in kernels if _kernel_type(k) not in MATRIX_TYPES]
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
    )


def _add_instance(entries: dict[str, FusionCandidate], base: str, time_us: float) -> bool:
    """A later instance of a known base name only adds to the count and the time."""
    if base not in entries:
        return False
    entries[base].instance_count += 1
    entries[base].total_kernel_time_us += time_us
    return True


def _module_pass(model: TraceModel) -> list[FusionCandidate]:
    ev = model.events
    names = model.names
    parent = model.tree.parent
    cat = ev["cat"].astype(str).to_numpy()
    gpu = model.gpu
    linked = gpu[gpu["linked"].to_numpy()]
    is_container = ~np.isin(cat, SKIPPED_CONTAINERS) & (ev["ph"] == "X").to_numpy()
    pairs = subtree_pairs(parent, linked.index.to_numpy(), is_container)
    if pairs.empty:
        return []
    ts = ev["ts"].to_numpy()
    dur = ev["dur"].to_numpy()
    pairs = pairs.assign(ts=ts[pairs["node"].to_numpy()])
    pairs = pairs.sort_values(["ancestor", "ts", "node"], kind="stable")
    gpu_count = pairs.groupby("ancestor").size()
    kernel_pairs = pairs[cat[pairs["node"].to_numpy()] == "kernel"]
    kernels_of = kernel_pairs.groupby("ancestor")["node"].agg(list)
    entries: dict[str, FusionCandidate] = {}
    for uid in gpu_count.index[gpu_count.to_numpy() >= 2].sort_values():
        base = base_name(str(names[uid]))
        if not base:
            continue
        kernel_uids = kernels_of.get(uid, [])
        time_us = float(dur[kernel_uids].sum()) if len(kernel_uids) else 0.0
        if _add_instance(entries, base, time_us):
            continue
        if len(kernel_uids) < 2:
            continue
        kernels = []
        for k in kernel_uids:
            name = str(names[k])
            kind = classify_kernel(name)[0]
            kernels.append(
                dict(name=name, type=kind, dur_us=float(dur[k]), eligible=_eligible(name))
                | {"gpu_op_uid": int(k)}
            )
        chain = [chain_label(str(names[a])) for a in ancestors(parent, int(uid))]
        dims = _json_cell(ev["input_dims"].iat[uid])
        entries[base] = _candidate(str(names[uid]), base, chain, kernels, time_us, dims)
    return list(entries.values())


def _sibling_pass(model: TraceModel, ops: pd.DataFrame, owned: pd.DataFrame) -> list:
    """Ops owning exactly one kernel, grouped under their parent (>= 2 per parent)."""
    ev = model.events
    names = model.names
    parent = model.tree.parent
    cat = ev["cat"].astype(str).to_numpy()
    dur = ev["dur"].to_numpy()
    # pseudo ops are our own insertions above one kernel each (trace/pseudo.py), not code a
    # user could fuse: their kernels stay with the frame that launched them (module pass)
    pseudo = ops["name"].astype(str).str.startswith(PSEUDO_PREFIX).to_numpy()
    real = ops[~ops["synthetic"].to_numpy() & ~pseudo]
    owned = owned[owned["op"].isin(real.index)]
    counts = owned.groupby("op").size()
    single = owned[owned["op"].isin(counts.index[counts.to_numpy() == 1])]
    single = single[cat[single["gpu"].to_numpy()] == "kernel"]
    if single.empty:
        return []
    op_uid = real.loc[single["op"].to_numpy(), "uid"].to_numpy()
    table = pd.DataFrame({"op": op_uid, "gpu": single["gpu"].to_numpy(), "parent": parent[op_uid]})
    table = table[table["parent"].to_numpy() != MISSING]
    table = table.assign(ts=ev["ts"].to_numpy()[table["op"].to_numpy()])
    table = table.sort_values(["parent", "ts"], kind="stable")
    entries: dict[str, FusionCandidate] = {}
    for parent_uid, group in table.groupby("parent", sort=True):
        if len(group) < 2:
            continue
        kernels = []
        for op, k in zip(group["op"].tolist(), group["gpu"].tolist(), strict=True):
            name = str(names[k])
            kind = classify_kernel(name)[0]
            kernels.append(
                dict(op=str(names[op]), kernel_type=kind, kernel_name=name, dur_us=float(dur[k]))
                | {"gpu_op_uid": int(k)}
            )
        time_us = sum(k["dur_us"] for k in kernels)
        base = base_name(str(names[parent_uid]))
        if _add_instance(entries, base, time_us):
            continue
        dims = _json_cell(ev["input_dims"].iat[int(parent_uid)])
        raw = str(names[parent_uid])
        entries[base] = _candidate(raw, base, [], kernels, time_us, dims, "sibling_sequence")
    return list(entries.values())


def data_in_out(row: pd.Series) -> tuple[float | None, float | None]:
    """Split an op's `Data Moved (MB)` into what it reads and what it writes."""
    moved = row.get("Data Moved (MB)")
    if moved is None or not isinstance(moved, int | float) or math.isnan(moved):
        return None, None
    moved = float(moved)
    params = row.get("perf_params")
    params = params if isinstance(params, dict) else {}
    category = str(row.get("op category", ""))
    try:
        if category == "GEMM" and all(k in params for k in ("M", "N", "K")):
            m, n, k = (float(params[x]) for x in ("M", "N", "K"))
            inputs, output = m * k + k * n, m * n
            return moved * inputs / (inputs + output), moved * output / (inputs + output)
    except (TypeError, ValueError, ZeroDivisionError):
        return moved / 2, moved / 2
    if category == "reduce":
        return moved, 0.0
    if category == "elementwise" and "shape_in1" in params:
        return moved * 2 / 3, moved / 3
    return moved / 2, moved / 2


class KernelLookup:
    """kernel name -> {first input shape -> info}, with prefix and any-shape fallbacks."""

    def __init__(self, table: dict[str, dict[str | None, dict[str, Any]]]) -> None:
        self.table = table

    @classmethod
    def from_summary(cls, summary: pd.DataFrame) -> KernelLookup:
        table: dict[str, dict[str | None, dict[str, Any]]] = {}
        for _, row in summary.iterrows():
            details = row.get("kernel_details_summary")
            details = _json_cell(details) if isinstance(details, str) else details
            if not isinstance(details, list):
                continue
            info = dict(zip(("data_in_mb", "data_out_mb"), data_in_out(row), strict=True))
            info["op_category"] = row.get("op category")
            shape = _shape_key(row.get("Input Dims"))
            for detail in details:
                name = detail.get("name") if isinstance(detail, dict) else None
                if name:
                    table.setdefault(str(name), {}).setdefault(shape, info)
        return cls(table)

    def get(self, name: str, shape: str | None) -> dict[str, Any] | None:
        shapes = self.table.get(name)
        if shapes is None:
            for known, value in self.table.items():
                if known.startswith(name) or name.startswith(known):
                    shapes = value
                    break
        if not shapes:
            return None
        return shapes.get(shape) or next(iter(shapes.values()))


def narrow_attention(candidate: FusionCandidate, lookup: KernelLookup, shapes: dict) -> None:
    """Keep only the GEMM..softmax..GEMM slice of an unfused attention block."""
    kernels = candidate.kernels
    is_gemm = []
    for k in kernels:
        info = lookup.get(_kernel_name(k), shapes.get(k["gpu_op_uid"]))
        is_gemm.append(bool(info) and info.get("op_category") == "GEMM")
    for i, k in enumerate(kernels):
        if "softmax" not in _kernel_name(k).lower():
            continue
        before = [j for j in range(i) if is_gemm[j]]
        after = [j for j in range(i + 1, len(kernels)) if is_gemm[j]]
        if before and after:
            part = kernels[before[-1] : after[0] + 1]
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
    model: TraceModel, unified_summary: pd.DataFrame | None
) -> list[FusionCandidate]:
    """Standalone fusion candidates of one trace, sorted by total kernel time."""
    modules = [
        c
        for c in _module_pass(model)
        if not c.has_fused_kernel and c.eligible_kernel_count >= 2 and not gemm_norm_only(c.kernels)
    ]
    unified = attribute_unified(model, registry.has_model, registry.has_backward)
    siblings = _sibling_pass(model, unified.ops, unified.kernels)
    candidates = modules + siblings
    if unified_summary is not None and not unified_summary.empty:
        shapes = _kernel_shapes(model, unified.ops, unified.kernels)
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


def _kernel_shapes(model: TraceModel, ops: pd.DataFrame, owned: pd.DataFrame) -> dict:
    """GPU uid -> first input shape of the unified op that owns it."""
    dims = model.events["input_dims"].to_numpy()
    source = ops["source_uid"].to_numpy()
    return {
        int(g): _shape_key(dims[source[o]])
        for o, g in zip(owned["op"].to_numpy(), owned["gpu"].to_numpy(), strict=True)
    }


def write_fusion_candidates(run_dir: Path, candidates: list[FusionCandidate]) -> Path:
    """Write `category_data/fusion_candidates.json` atomically; returns its path."""
    path = Path(run_dir) / "category_data" / FUSION_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps([c.as_dict() for c in candidates], indent=2, default=str)
    atomic_write_bytes(path, text.encode())
    return path
