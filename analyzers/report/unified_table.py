"""`unified_perf_summary`: op instances of rule B, scored and grouped by signature.

See docs/report-tables.md#unified_perf_summary.

Perf models run once per unique signature (name + recorded args); each instance then gets
its own kernel busy time and achieved rates, and instances with the same signature on the
same thread are summarised into one row with TraceLens's column names.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..perf.base import (
    NO_BACKWARD_MODEL,
    NO_MODEL,
    PerfModel,
    Unrecorded,
    Unsupported,
    Work,
    parse_args,
)
from ..perf.categories import CategoryTable
from ..perf.gemm import MODELS as GEMM_MODELS
from ..perf.gemm_kernels import gemm_transpose
from ..perf.platform_choice import NO_PLATFORM_REASON
from ..perf.roofline import Roof, achieved_metrics, static_metrics
from ..trace.intervals import grouped_union_length
from ..trace.model import TraceModel
from .kernel_stats import group_ids, kernel_summaries, truncate
from .op_context import with_op_context
from .ops_tables import ARG_COLUMNS, with_shares
from .stacks import call_stack_full, entry_point
from .unified import UnifiedOps

GROUP_KEYS = [
    "name",
    "op category",
    "process_name",
    "process_label",
    "thread_name",
    *ARG_COLUMNS.values(),
]
GEMM_OPS = frozenset(GEMM_MODELS)


@dataclass(frozen=True)
class UnifiedTable:
    """Per-instance rows (drill-down) and the per-signature summary (the sheet)."""

    instances: pd.DataFrame
    summary: pd.DataFrame
    unsupported: Mapping[str, int]  # reason -> number of signatures the models declined
    attribution: UnifiedOps | None = None  # the rule-B ops and kernels the rows come from


def _evaluate(
    signatures: pd.DataFrame, model_for: Callable[[str], PerfModel | None]
) -> tuple[list[Work | None], list[str | None], Counter[str]]:
    """Work per signature (name, args, backward flag, op context); None where no model applies.

    Also why each declined signature is unmodelled (None for the others): what the trace did
    not record (docs/perf-models.md#unmodelled), or the model's own reason."""
    works: list[Work | None] = []
    reasons: list[str | None] = []
    declined: Counter[str] = Counter()
    columns = ["name", *ARG_COLUMNS, "backward", "annotation", "kernels"]
    for name, *recorded, backward, annotation, kernels in signatures[columns].itertuples(
        index=False
    ):
        dims, types, strides, concrete = (_text(v) for v in recorded)
        model = model_for(name)
        formula = None if model is None else (model.backward if backward else model.forward)
        if formula is None:
            works.append(None)
            reasons.append(NO_MODEL if model is None else NO_BACKWARD_MODEL)
            continue
        reason = None
        try:
            args = parse_args(name, dims, types, strides, concrete, annotation, kernels)
            args.check_recorded(model.needs_values)
            works.append(formula(args))
        except Unrecorded as exc:
            reason = str(exc)
            declined[f"{name}: {reason}"] += 1
            works.append(None)
        except Unsupported as exc:
            reason = f"the perf model declined it ({exc})"
            declined[str(exc)] += 1
            works.append(None)
        reasons.append(reason)
    return works, reasons, declined


def _with_gemm_layout(
    works: list[Work | None],
    names: pd.Series,
    sig: np.ndarray,
    unified: UnifiedOps,
    model: TraceModel,
) -> list[dict[str, Any] | None]:
    """perf_params, plus `transpose` for GEMMs whose kernel names spell their layout."""
    params = [dict(w.params) if w else None for w in works]
    first_row = pd.Series(np.arange(len(sig))).groupby(sig).first().to_numpy()
    ops, gpu = _kernels_by_op(unified, model)
    kernel_names = model.names
    for s_id, name in enumerate(names):
        if params[s_id] is None or name not in GEMM_OPS:
            continue
        row = first_row[s_id]
        kernels = gpu[np.searchsorted(ops, row) : np.searchsorted(ops, row, side="right")]
        layouts = (gemm_transpose(kernel_names[g]) for g in kernels)
        layout = next((t for t in layouts if t is not None), None)
        if layout is not None:
            params[s_id]["transpose"] = layout
    return params


def _kernels_by_op(unified: UnifiedOps, model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    """(op row, GPU uid) of every owned kernel, sorted by op row then start time."""
    op, gpu = unified.kernels["op"].to_numpy(), unified.kernels["gpu"].to_numpy()
    order = np.lexsort((model.events["ts"].to_numpy()[gpu], op))  # stable: ties keep order
    return op[order], gpu[order]


def _categories(
    inst: pd.DataFrame,
    ops: pd.DataFrame,
    names: np.ndarray,
    first_kernel: np.ndarray,
    categories: CategoryTable,
    model_for: Callable[[str], PerfModel | None],
) -> list[str]:
    """The table's category; a sole-backward row takes its forward model's bwd_category."""
    out = []
    known: dict[tuple[Any, Any], str] = {}
    for name, kernel, backward, fwd in zip(
        inst["name"], first_kernel, ops["backward"], ops["model_uid"], strict=True
    ):
        perf = model_for(names[fwd]) if backward else None
        if perf is not None and perf.bwd_category:
            out.append(perf.bwd_category)
            continue
        category = known.get((name, kernel))
        if category is None:
            category = known[(name, kernel)] = categories.category(name, kernel)
        out.append(category)
    return out


_OPAQUE = re.compile(r"OpaqueType<(\d)u?>")


def _typed_from_kernel(types: Any, kernel: str | None) -> Any:
    """A TensorList's element size from its kernel's template (`OpaqueType<2u>` -> 2 bytes).

    Traces record `cat`/`stack` inputs as `TensorList` without a dtype; the copy kernel's
    instantiation carries the element size, which is all the byte count needs.
    """
    if not isinstance(types, str) or not types.startswith('["TensorList"') or not kernel:
        return types
    match = _OPAQUE.search(kernel)
    if match is None:
        return types
    return '["opaque' + match.group(1) + '"' + types[len('["TensorList"') :]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def build_unified(
    model: TraceModel,
    unified: UnifiedOps,
    categories: CategoryTable,
    model_for: Callable[[str], PerfModel | None],
    platform: Roof | None,
) -> UnifiedTable:
    inst, first_kernel = _instances(model, unified, categories, model_for)
    static, sig, declined = _signature_metrics(model, unified, first_kernel, model_for, platform)
    inst = pd.concat([inst, static.iloc[sig].reset_index(drop=True)], axis=1)
    achieved = achieved_metrics(
        inst["GFLOPS"].to_numpy(),
        inst["Data Moved (MB)"].to_numpy(),
        inst["Roofline Time (µs)"].to_numpy() if platform is not None else None,
        inst["Kernel Time (µs)"].to_numpy(),
    )
    inst = pd.concat([inst, achieved], axis=1)
    summary = _summarise(inst, unified, model, platform is not None)
    return UnifiedTable(
        instances=inst, summary=summary, unsupported=dict(declined), attribution=unified
    )


def _instances(
    model: TraceModel,
    unified: UnifiedOps,
    categories: CategoryTable,
    model_for: Callable[[str], PerfModel | None],
) -> tuple[pd.DataFrame, np.ndarray]:
    """One row per op instance with its kernel busy time and category; and each op's first
    kernel name (None without one)."""
    ev = model.events
    ops = unified.ops
    src = ops["source_uid"].to_numpy()
    labels = model.thread_labels(src)
    k = unified.kernels
    k_ts = ev["ts"].to_numpy()[k["gpu"].to_numpy()]
    k_end = k_ts + ev["dur"].to_numpy()[k["gpu"].to_numpy()]
    busy = grouped_union_length(k["op"].to_numpy(), k_ts, k_end)
    busy = np.pad(busy, (0, len(ops) - len(busy)))
    # the kernel-name fallback reads the op's own first kernel (launched directly by it),
    # as TraceLens's kernel_details do; the subtree's first kernel only when it has none
    own = model.launcher[k["gpu"].to_numpy()] == ops["uid"].to_numpy()[k["op"].to_numpy()]
    first = k.assign(ts=k_ts, nested=~own).sort_values(["op", "nested", "ts"])
    first = first.drop_duplicates("op")
    first_kernel = np.full(len(ops), None, dtype=object)
    first_kernel[first["op"].to_numpy()] = model.names[first["gpu"].to_numpy()]
    inst = pd.DataFrame(
        {
            "name": ops["name"].to_numpy(),
            "UID": ops["uid"].to_numpy(),
            "pid": ev["pid"].to_numpy()[src],
            "tid": ev["tid"].to_numpy()[src],
            "process_name": labels["process_name"].to_numpy(),
            "process_label": labels["process_label"].to_numpy(),
            "thread_name": labels["thread_name"].to_numpy(),
            **{out: ev[col].to_numpy()[src] for col, out in ARG_COLUMNS.items()},
            "duration_us": ev["dur"].to_numpy()[src],
            "Kernel Time (µs)": busy,
        }
    )
    category = _categories(inst, ops, model.names, first_kernel, categories, model_for)
    inst.insert(1, "op category", category)
    return inst, first_kernel


def _signature_metrics(
    model: TraceModel,
    unified: UnifiedOps,
    first_kernel: np.ndarray,
    model_for: Callable[[str], PerfModel | None],
    platform: Roof | None,
) -> tuple[pd.DataFrame, np.ndarray, Counter[str]]:
    """Perf models run once per signature: (metrics per signature, signature id per
    instance, why models declined)."""
    ev, ops = model.events, unified.ops
    # the model reads the forward op's args for a sole-backward row, the row's own otherwise
    model_uid = ops["model_uid"].to_numpy()
    evaluated = pd.DataFrame(
        {
            "name": model.names[model_uid],
            **{col: ev[col].to_numpy()[model_uid] for col in ARG_COLUMNS},
            "backward": ops["backward"].to_numpy(),
        }
    )
    synthetic = ops["synthetic"].to_numpy()
    evaluated.loc[synthetic, "name"] = ops["name"].to_numpy()[synthetic]
    evaluated["input_type"] = [
        _typed_from_kernel(t, k)
        for t, k in zip(evaluated["input_type"].to_numpy(), first_kernel, strict=True)
    ]
    # annotation / kernels / recovered index args, only for the ops whose models read them
    evaluated = with_op_context(model, evaluated, model_uid, unified.kernels)
    sig = group_ids(evaluated, list(evaluated.columns))
    signatures = evaluated.groupby(sig, sort=True).first()
    works, reasons, declined = _evaluate(signatures, model_for)
    static = static_metrics(
        np.array([w.flops if w else np.nan for w in works], dtype=np.float64),
        np.array([w.bytes if w and w.bytes is not None else np.nan for w in works]),
        np.array([w.compute_spec if w else "" for w in works], dtype=object),
        platform,
        memory_only=np.array([bool(w and w.unit == "vector") for w in works]),
    )
    static["perf_params"] = _with_gemm_layout(works, signatures["name"], sig, unified, model)
    static["has_perf_model"] = [w is not None for w in works]
    if platform is None:  # modelled, but nothing to score against (docs/analysis.md)
        modelled = [w is not None for w in works]
        reasons = [NO_PLATFORM_REASON if m else r for m, r in zip(modelled, reasons, strict=True)]
    static["unmodelled_reason"] = reasons
    return static, sig, declined


def _kernel_details(
    groups: pd.Index, group: np.ndarray, unified: UnifiedOps, model: TraceModel
) -> list[list]:
    """Each group's kernels in launch order (`kernel_details_summary`)."""
    ev = model.events
    k = unified.kernels
    gpu = k["gpu"].to_numpy()
    summaries = kernel_summaries(
        pd.DataFrame(
            {
                "group": group[k["op"].to_numpy()],
                "instance": k["op"].to_numpy(),
                "ts": ev["ts"].to_numpy()[gpu],
                "name": model.names[gpu],
                "stream": ev["stream"].to_numpy()[gpu],
                "dur": ev["dur"].to_numpy()[gpu],
            }
        )
    )
    return [summaries.get(int(i), []) for i in groups]


def _summarise(
    inst: pd.DataFrame, unified: UnifiedOps, model: TraceModel, roofline: bool
) -> pd.DataFrame:
    group = group_ids(inst, GROUP_KEYS)
    g = inst.assign(group=group, ex_UID=inst["UID"], row=np.arange(len(inst)))
    g = g.groupby("group", sort=True)
    table = g[GROUP_KEYS].first()
    table["ex_UID"] = g["ex_UID"].first()
    table["operation_count"] = g.size()
    dur = g["duration_us"]
    table["total_duration_us"] = dur.sum()
    table["mean_duration_us"] = dur.mean()
    table["std_duration_us"] = dur.std()
    for column in ("GFLOPS", "Data Moved (MB)", "FLOPS/Byte", "Compute Spec"):
        table[column] = g[column].first()
    if roofline:
        table["Roofline Bound"] = g["Roofline Bound"].first()
    for column in ("TB/s", "TFLOPS/s", "Kernel Time (µs)"):
        table[f"{column}_mean"] = g[column].mean()
        table[f"{column}_std"] = g[column].std()
    table["Kernel Time (µs)_sum"] = g["Kernel Time (µs)"].sum()
    for stat in ("median", "min", "max"):
        table[f"duration_us_{stat}"] = dur.agg(stat)
    for column in ("TB/s", "TFLOPS/s"):
        for stat in ("median", "min", "max"):
            table[f"{column}_{stat}"] = g[column].agg(stat)
    if roofline:
        table["Roofline Time (µs)_first"] = g["Roofline Time (µs)"].first()
        for stat in ("mean", "median", "std", "min", "max"):
            table[f"Pct Roofline_{stat}"] = g["Pct Roofline"].agg(stat)
    for stat in ("median", "min", "max"):
        table[f"Kernel Time (µs)_{stat}"] = g["Kernel Time (µs)"].agg(stat)

    table["kernel_details_summary"] = _kernel_details(table.index, group, unified, model)
    table["trunc_kernel_details"] = table["kernel_details_summary"].map(truncate)
    table["perf_params"] = g["perf_params"].first()
    table["has_perf_model"] = g["has_perf_model"].first()
    table["unmodelled_reason"] = g["unmodelled_reason"].first()
    first_rows = g["row"].first().to_numpy()
    stacks = _stacks(model, unified, first_rows)
    table["entry_point"] = [entry_point(st, n) for st, n in stacks]
    table["call_stack_full"] = [st for st, _ in stacks]
    table = table.sort_values(
        ["Kernel Time (µs)_sum", "ex_UID"], ascending=[False, True], kind="stable"
    ).reset_index(drop=True)
    table = with_shares(table, "Kernel Time (µs)_sum")
    # ours, after TraceLens's columns: why a row has no model (docs/perf-models.md#unmodelled)
    return table[[*table.columns.drop("unmodelled_reason"), "unmodelled_reason"]]


def _stacks(
    model: TraceModel, unified: UnifiedOps, rows: np.ndarray
) -> list[tuple[list[Any], str]]:
    """Call stack and op name of one instance per group (the first)."""
    names = model.names
    is_cpu_op = (model.events["cat"] == "cpu_op").to_numpy()
    parent = model.tree.parent
    ops, gpu = _kernels_by_op(unified, model)
    source = unified.ops["source_uid"].to_numpy()
    out = []
    for row in rows:
        op_uid = int(source[row])
        kernels = gpu[np.searchsorted(ops, row) : np.searchsorted(ops, row, side="right")]
        stack = call_stack_full(parent, names, is_cpu_op, op_uid, kernels.tolist())
        out.append((stack, names[op_uid]))
    return out
