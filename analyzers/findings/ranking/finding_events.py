"""A finding's own events in the trace: the GPU events a compute finding or a fusion
candidate is about, the collectives exposed communication is about, the host spans an idle
cause names.

They are what the replay changes to price a fix (findings/ranking/replay_price.py) and where
in time the finding happens. Found from the analyses' own records: a compute finding's
operators through the unified table's attribution (the kernels each operator instance owns),
a fusion candidate's kernels under its module or operator, an idle cause's culprits by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ...categories.cpu_idle import IdleCauseShare
from ...categories.kernel_fusion import FusionEstimate
from ...categories.models import Finding
from ...layout import CPU_IDLE, MULTI_KERNEL
from ...prepare.categories import normalise_category
from ...replay.changes import outermost
from ...report.unified_table import UnifiedTable
from ...trace.columns import MISSING
from ...trace.model import TraceModel
from .impact_scale import Candidate
from .run_metrics import RunMetrics

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")
CULPRIT_SHARE = 0.8  # an idle cause's culprits are read until they hold this share of it
MAX_CULPRITS = 3
MAX_DEPTH = 64  # how far up from a launch a fusion candidate's module is looked for


@dataclass(frozen=True)
class FindingEvents:
    """GPU events (trace uids) a change would make faster, or host spans (outermost per
    thread, trace uids) whose code a change would cut; `names`: the operators, module or
    calls they are of (trace text)."""

    gpu: np.ndarray
    host: np.ndarray
    names: tuple[str, ...]
    collectives: bool = False  # the GPU events are collectives a fix overlaps, not speeds up

    @property
    def empty(self) -> bool:
        return len(self.gpu) == 0 and len(self.host) == 0


def finding_events(
    candidate: Candidate, run: RunMetrics, model: TraceModel, unified: UnifiedTable | None
) -> FindingEvents | None:
    """The candidate's events; None when its analysis records none a change could touch (an
    exposed copy, a precision item, an idle cause without named calls)."""
    if candidate.kind == "compute":
        finding = _finding(run, candidate)
        if finding is None or unified is None or unified.attribution is None:
            return None
        return _operator_kernels(model, unified, candidate.category, finding)
    if candidate.kind == "kernel_fusion" and run.kernel_fusion is not None:
        estimates = run.kernel_fusion.impact_estimates or []
        k = (candidate.source_rank or 0) - 1
        return _fusion_kernels(model, estimates[k]) if 0 <= k < len(estimates) else None
    if (
        candidate.category == MULTI_KERNEL
        and candidate.saving is not None
        and candidate.saving.pool == "exposed_comm"
    ):
        gpu = model.gpu
        uids = gpu.index.to_numpy()[gpu["bucket"].to_numpy() == "communication"]
        names = tuple(dict.fromkeys(str(n) for n in model.names[uids]))[:MAX_CULPRITS]
        return FindingEvents(uids.astype(np.int64), np.empty(0, np.int64), names, True)
    if candidate.category == CPU_IDLE and run.cpu_idle is not None:
        host_side = run.cpu_idle.host_side
        if host_side is None or not host_side.host_recorded:
            return None
        k = (candidate.source_rank or 0) - 1
        causes = host_side.idle_causes
        return _culprit_spans(model, causes[k]) if 0 <= k < len(causes) else None
    return None


def _finding(run: RunMetrics, candidate: Candidate) -> Finding | None:
    analysed = run.compute.get(candidate.category)
    if analysed is None:
        return None
    found = (f for f in analysed.category_findings or () if f.rank == candidate.source_rank)
    return next(found, None)


def _operator_kernels(
    model: TraceModel, unified: UnifiedTable, category: str, finding: Finding
) -> FindingEvents:
    """The kernels every instance of the finding's operators owns in its category."""
    inst = unified.instances
    names = {m.operation for m in finding.members}
    keys = inst["op category"].map(lambda v: normalise_category(v)[0]).to_numpy()
    rows = np.flatnonzero(inst["name"].isin(names).to_numpy() & (keys == category))
    kernels = unified.attribution.kernels
    gpu = kernels["gpu"].to_numpy()[np.isin(kernels["op"].to_numpy(), rows)]
    return FindingEvents(np.unique(gpu), np.empty(0, np.int64), tuple(sorted(names)))


def _fusion_kernels(model: TraceModel, estimate: FusionEstimate) -> FindingEvents:
    """The candidate's kernels launched inside its module (or operator)."""
    wanted = set(estimate.affected_gpu_kernels)
    gpu = model.gpu
    uids = gpu.index.to_numpy()[gpu["name"].isin(wanted).to_numpy() & gpu["linked"].to_numpy()]
    launch = model.links.launch[uids]
    inside = np.zeros(len(uids), dtype=bool)
    module = re.compile(rf"^(nn\.Module: )?{re.escape(estimate.operation)}(_\d+)?$")
    names = model.names
    matching = [n for n in model.events["name"].cat.categories if module.match(str(n))]
    node = model.tree.parent[launch]
    for _ in range(MAX_DEPTH):
        live = node != MISSING
        if not live.any():
            break
        inside[live] |= np.isin(names[node[live]], matching)
        node = np.where(live, model.tree.parent[np.maximum(node, 0)], MISSING)
    found = uids[inside]
    return FindingEvents(found, np.empty(0, np.int64), (estimate.operation,))


def _culprit_spans(model: TraceModel, cause: IdleCauseShare) -> FindingEvents | None:
    """The host events named like the cause's main culprits, outermost per thread."""
    named = sum(c.idle_ms for c in cause.culprits)
    chosen, held = [], 0.0
    for culprit in cause.culprits[:MAX_CULPRITS]:
        if held >= CULPRIT_SHARE * named:
            break
        chosen.append(culprit.name)
        held += culprit.idle_ms
    if not chosen:
        return None
    ev = model.recorded
    host = ~ev["cat"].isin(GPU_CATEGORIES).to_numpy() & (ev["ph"] == "X").to_numpy()
    spans = np.flatnonzero(host & np.isin(model.names[: len(ev)], chosen))
    if len(spans) == 0:
        return None
    ts, dur = ev["ts"].to_numpy(float), ev["dur"].to_numpy(float)
    outer = outermost(spans, ts, dur, model.thread_code)
    return FindingEvents(np.empty(0, np.int64), outer, tuple(chosen))


def finding_key(candidate: Candidate) -> tuple[str, str, int]:
    """One finding across the ranking: its category, kind and rank in its own analysis."""
    return (candidate.category, candidate.kind, candidate.source_rank or 0)
