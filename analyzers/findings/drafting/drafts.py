"""Deterministic draft findings built from a category's metrics (docs/analysis.md#findings).

``draft_findings(key, metrics)`` returns a
complete :class:`Findings` for the key's tier: one card plus one Detailed Analysis block per
compute ``category_findings[]`` entry, per flagged system issue, or per kernel-fusion
estimate.  Impact markers carry the metrics numbers verbatim; prose is short template text
built only from those numbers.  Metrics with nothing to report (no findings, NO_DATA, or no
flagged issue) give the NO_FINDINGS form; an ERROR document gives ``**Status**: ERROR``.
Names from the trace or a user's file (operations, kernels, modules, categories) are code
spans, and table cells of them ``md_cell`` (docs/analysis.md#trace-text-in-markdown).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ...categories.any_metrics import Metrics
from ...categories.cpu_idle import CpuIdleMetrics
from ...categories.kernel_fusion import FusionEstimate, KernelFusionMetrics
from ...categories.models import (
    CategoryMetrics,
    Efficiency,
    Finding,
    ImpactEstimate,
    Operation,
)
from ...categories.multi_kernel import MultiKernelMetrics
from ...layout import KERNEL_FUSION, TIMELINE_SYSTEM_KEYS
from ...markdown_text import md_cell_lines, md_code, md_prose
from ...perf.kernel_names import short_kernel_name
from ..contract.contract import (
    COMPARATIVE_COLUMNS,
    STANDALONE_COLUMNS,
    DetailBlock,
    Findings,
    Marker,
    PItem,
    Section,
    Status,
    Table,
    Tier,
    no_findings,
    num,
)
from ..ranking.unmodelled import own_reason, reason_md
from .drafts_compare import (
    FUSION_ACTION_COMPARED,
    FusionComparison,
    comparative_words,
    fusion_insight,
    fusion_kernel_tables,
)
from .system_drafts import cpu_idle_pairs, multi_kernel_pairs

DASH = "—"
ICONS = {"high": "🔴", "medium": "🟡", "low": "🟢"}
COUNTERS = (
    "The trace cannot show the root cause: profile the slowest kernel with hardware counters."
)
ACTIONS = {
    "compute": "Try a better-tuned kernel or library backend for these shapes, "
    "and check that the shapes map well onto the matrix units.",
    "memory": "Cut the bytes moved: fuse these ops with their neighbours, "
    "or keep the data in a lower-precision dtype.",
    "unmodeled": "Profile this op's kernels with hardware counters "
    "to find which resource limits them.",
}
ACTIONS["unknown"] = ACTIONS["unmodeled"]  # one action per Finding.bound_type


def tier_for(key: str) -> Tier:
    """Findings tier of a manifest key."""
    if key == KERNEL_FUSION:
        return Tier.FUSION
    return Tier.SYSTEM if key in TIMELINE_SYSTEM_KEYS else Tier.COMPUTE


def cell(value: Any) -> str:
    """A table cell of rooflens's own text or a number: verbatim, ``—`` when empty, pipes
    escaped."""
    text = num(value) if not isinstance(value, str) else value
    return text.replace("|", "\\|") if text else DASH


def name_cell(value: Any) -> str:
    """A table cell of text from the trace (an operation, its args, launcher path or kernel
    name): ``md_cell_lines`` (one code span per ``<br>`` part), ``—`` when empty. The
    validators render the metrics' values the same way to compare them (validate.py)."""
    return DASH if value is None or value == "" else md_cell_lines(value)


def metrics_file(category: str) -> str:
    """`` `<category>_metrics.json` ``, as a code span whatever the category's name."""
    return md_code(f"{category}_metrics.json", limit=None)


Scored = Finding | FusionEstimate  # what carries an impact score: low, mid, high


def p_marker(item: Scored) -> Marker:
    scores = (item.impact_score_low, item.impact_score, item.impact_score_high)
    return Marker("p_item", tuple(zip(("low", "mid", "high"), map(num, scores), strict=True)))


def estimate_section(item: Scored, extra: tuple[str, ...] = ()) -> Section:
    low, high = num(item.impact_score_low), num(item.impact_score_high)
    marker = Marker("detail_estimate", (("low", low), ("high", high)))
    lines = [
        marker.render(),
        f"- Low end impact_score: {low}",
        f"- High end impact_score: {high}",
        *(f"- {e}" for e in extra),
        "<!-- impact-end -->",
    ]
    return Section("Impact estimate", body="\n".join(lines))


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def match_ops(
    operations: Sequence[Operation], members: Sequence[ImpactEstimate]
) -> list[Operation | None]:
    """The ``operations[]`` row of each member (same name, then same time), used once."""
    used: set[int] = set()
    found: list[Operation | None] = []
    for m in members:
        same = [i for i, o in enumerate(operations) if o.name == m.operation]
        free = [i for i in same if i not in used]
        exact = [i for i in free if operations[i].time_ms == m.time_ms]
        pick = (exact or free or [None])[0]
        if pick is not None:
            used.add(pick)
        found.append(operations[pick] if pick is not None else None)
    return found


def efficiency_cell(eff: Efficiency) -> str:
    pct = eff.efficiency_percent
    if pct is None:
        return DASH
    if eff.bound_type == "memory":
        return f"{pct:.2f}% of {num(eff.resolved_peak_hbm_bw)} TB/s"
    return f"{pct:.2f}% of {num(eff.resolved_peak_maf)} TFLOPS"


def data_row(op: Operation | None, member: ImpactEstimate, comparative: bool) -> tuple[str, ...]:
    if op is None:
        time = cell(member.time_ms)
        return (name_cell(member.operation), DASH, DASH, DASH, time, *([DASH] * 5))
    eff = op.efficiency
    heuristic = member.estimate_method == "heuristic"
    bound = eff.bound_type
    bound_cell = DASH if heuristic or not bound else f"{bound}-bound"
    head = (name_cell(op.name), name_cell(op.args), name_cell(op.launcher_path))
    kernel = name_cell(op.kernel_name_trunc)
    if comparative:
        counts = f"{num(op.count)}/{num(op.count_trace2)}"
        return (
            *head, kernel, cell(op.time_ms), cell(op.t2_time_ms), counts,
            cell(op.difference_ms), cell(eff.flops_per_byte), bound_cell,
        )  # fmt: skip
    return (
        *head, kernel, cell(op.time_ms), cell(op.percent_of_total), cell(op.count),
        cell(eff.flops_per_byte), DASH if heuristic else efficiency_cell(eff), bound_cell,
    )  # fmt: skip


def peak_phrase(bound: str, ops: Sequence[Operation]) -> str:
    """``the matrix_bf16 roofline (708.0 TFLOPS)`` / ``the HBM bandwidth roofline (5.3 TB/s)``."""
    eff = next((o.efficiency for o in ops), Efficiency())
    if bound == "memory":
        return f"the HBM bandwidth roofline ({num(eff.resolved_peak_hbm_bw)} TB/s)"
    spec = eff.compute_spec or "compute"
    return f"the {spec} roofline ({num(eff.resolved_peak_maf)} TFLOPS)"


class _Wording(NamedTuple):
    """The prose of one compute card: its title and the text of its fields and sections."""

    title: str
    insight: str
    reason: str
    action: str
    trailer: str = ""


def _unmodelled_wording(
    finding: Finding, names: list[str], time_ms: float, ops: Sequence[Operation | None]
) -> _Wording:
    """An op without a roofline: its impact is a share of time, not a roofline gap. Why it
    has none is the op's `unmodelled_reason` when it states one (no platform known ...)."""
    pct = num(finding.percent_of_total)
    stated = next((o.unmodelled_reason for o in ops if o and o.unmodelled_reason), "")
    why = reason_md(stated) if stated else "no performance model covers this op"
    opening = (
        f"{why[0].upper()}{why[1:]}"
        if not stated or own_reason(stated)
        else (f"The performance model declined it ({why})")
    )
    shown = ", ".join(md_code(n) for n in names)
    return _Wording(
        title=f"Unmodelled {', '.join(md_code(short_kernel_name(n)) for n in names)}",
        insight=f"{shown} ({num(time_ms)} ms) takes {pct}% of GPU time.",
        reason=(
            f"{opening}, so its roofline gap is unknown. "
            f"It takes {pct}% of the end-to-end GPU time. {COUNTERS}"
        ),
        action=ACTIONS["unmodeled"],
        trailer=(
            f"> **Estimated:** {why}. The impact is a fixed "
            f"share of its GPU time ({pct}%), not a roofline gap."
        ),
    )


def _roofline_wording(
    finding: Finding,
    members: Sequence[ImpactEstimate],
    ops: Sequence[Operation | None],
    category: str,
    time_ms: float,
) -> _Wording:
    """Modelled ops: how far below which roofline they run, and the span of their efficiency."""
    bound = str(finding.bound_type or "unknown")
    n = int(finding.member_count or len(members))
    count, verb = plural(n, "operation"), "runs" if n == 1 else "run"
    bucket = str(finding.eff_bucket or "unknown")
    where = "at an unknown fraction of" if bucket in ("unknown", "all") else f"at {bucket} % of"
    peak = peak_phrase(bound, [o for o in ops if o])
    effs = [m.efficiency_pct for m in members if m.efficiency_pct is not None]
    span = f"{min(effs)}-{max(effs)} %" if effs else "an unknown fraction"
    span = f"{effs[0]} %" if effs and min(effs) == max(effs) else span
    return _Wording(
        title=f"{bound.capitalize()}-bound {md_code(category)} ops {where} roofline",
        insight=f"{count} ({num(time_ms)} ms) {verb} {where} {peak}.",
        reason=f"These ops reach {span} of {peak}. {COUNTERS}",
        action=ACTIONS[bound],
    )


def compute_card(metrics: CategoryMetrics, finding: Finding) -> tuple[PItem, DetailBlock]:
    """The card and the Detailed Analysis block of one compute ``category_findings[]`` entry."""
    members = finding.members
    ops = match_ops(metrics.operations or (), members)
    rank = int(finding.rank or 0)
    library = finding.library
    suffix = library if library and library != "Unknown" else None
    category = str(metrics.category or "")
    time_ms = round(sum(float(m.time_ms or 0) for m in members), 3)
    names = sorted({str(m.operation) for m in members})
    n = int(finding.member_count or len(members))
    count, verb = plural(n, "operation"), "runs" if n == 1 else "run"
    comparative = metrics.comparison_scope == "comparative"
    if finding.estimate_method == "heuristic":
        words = _unmodelled_wording(finding, names, time_ms, ops)
    elif comparative:
        words = _Wording(*comparative_words(finding, members, ops, category, time_ms, count))
    else:
        words = _roofline_wording(finding, members, ops, category, time_ms)
    card = PItem(
        rank, words.title, suffix, fields=(("Insight", words.insight), ("Action", words.action)),
        impact=p_marker(finding), impact_text=f"impact_score: {num(finding.impact_score)}",
        trailer=words.trailer,
    )  # fmt: skip
    layer = next((" > ".join(o.module_chain) for o in ops if o and o.module_chain), "")
    ident = (
        f"{count} of the {md_code(category)} category ({', '.join(md_code(n) for n in names)}) "
        f"{verb}"
        + (f" on the {library} backend" if suffix else "")
        + (f" in the {md_code(layer)} layer" if layer else "")
        + f" (source: {metrics_file(category)} → `category_findings[rank={rank}]`, "
        "`operations[].library`, `operations[].module_chain`)."
    )
    table = Table(
        COMPARATIVE_COLUMNS if comparative else STANDALONE_COLUMNS,
        tuple(data_row(o, m, comparative) for o, m in zip(ops, members, strict=True)),
    )
    sections = (
        Section("Identification", ident),
        Section("Data", body=table.render()),
        Section("Reasoning for Slowdown", words.reason),
        Section("Resolution", words.action),
        estimate_section(finding),
    )
    return card, DetailBlock("compute", rank, words.title, sections=sections)


def draft_compute(key: str, metrics: CategoryMetrics) -> Findings:
    title = f"{md_code(metrics.category or key)} findings"
    findings = sorted(metrics.category_findings or (), key=lambda f: f.rank or 0)
    if metrics.status == "NO_DATA":
        reason = metrics.message or "No operations of this category in the trace."
        return no_findings(Tier.COMPUTE, title, md_prose(reason))
    ops_text = (
        f"{plural(int(metrics.operation_count or 0), 'operation')} take "
        f"{num(metrics.total_time_ms)} ms ({num(metrics.percent_of_compute)}% "
        "of compute)."
    )
    if not findings:
        reason = f"No finding reaches the P-item threshold. {ops_text}"
        return no_findings(Tier.COMPUTE, title, reason)
    pairs = [compute_card(metrics, f) for f in findings]
    overview = f"{ops_text} {plural(len(pairs), 'finding')} above the P-item threshold."
    return success(Tier.COMPUTE, title, overview, pairs)


def success(tier: Tier, title: str, overview: str, pairs: list) -> Findings:
    preamble = f"# {title}\n\n**Status**: {Status.SUCCESS}\n\n{overview}"
    cards = tuple(c for c, _ in pairs)
    return Findings(tier, preamble, cards=cards, details=tuple(b for _, b in pairs))


def fusion_pair(
    rank: int, est: FusionEstimate, comparative: bool, candidate: FusionComparison | None = None
):
    name, conf = str(est.operation), str(est.confidence or "low")
    modelled, kernels = num(est.modeled_kernel_count), num(est.kernel_count)
    coverage = f"{modelled}/{kernels} kernels"
    impact = f"impact_score: {num(est.impact_score)}"
    if not comparative:
        impact += f" (perf-model coverage {coverage})"
    shown = md_code(name)
    title = f"Fuse the {shown} kernels"
    action = "Fuse the chain into one kernel with a compiler or a hand-written fused kernel."
    suffix = f"{num(est.time_ms)} ms, {num(est.instance_count)} instances"
    insight = (
        f"{shown} launches {kernels} kernels per instance, {num(est.instance_count)} "
        f"times ({num(est.time_ms)} ms in total)."
    )
    if comparative and candidate is not None:  # what trace 2 runs instead, and its time
        insight = fusion_insight(candidate)
        action = FUSION_ACTION_COMPARED
    card = PItem(
        rank, title, suffix, ICONS[conf],
        fields=(("Insight", insight), ("Action", action),
                ("Confidence", f"{conf.capitalize()} -- from the module name and kernel mix")),
        impact=p_marker(est), impact_text=impact,
    )  # fmt: skip
    rows = [
        ("Time (ms)", num(est.time_ms)),
        ("Instances", num(est.instance_count)),
        ("Kernels per instance", kernels),
        ("Modelled kernels", modelled),
        ("Bound", cell(est.bound_type)),
        ("Fusion type", cell(est.fusion_type)),
        ("Estimation", cell(est.estimation)),
    ]
    affected = [(str(i), name_cell(k)) for i, k in enumerate(est.affected_gpu_kernels, 1)]
    body = Table(("Metric", "Value"), tuple(rows)).render()
    if affected:
        body += "\n\n" + Table(("#", "Kernel"), tuple(affected)).render()
    if comparative and candidate is not None:
        body = fusion_kernel_tables(candidate)
    extra = (f"Coverage: {modelled} of {kernels} kernels modelled", f"Confidence: {conf}")
    ident = (
        f"The {shown} module runs as {kernels} separate kernels "
        "(source: `kernel_fusion_metrics.json` → `impact_estimates`)."
    )
    sections = (
        Section("Identification", ident),
        Section("Data", body=body),
        estimate_section(est, extra if not comparative else extra[1:]),
    )
    block = DetailBlock("fusion", rank, f"{shown} kernel fusion", sections=sections)
    return card, block


def draft_fusion(metrics: KernelFusionMetrics, candidates: Sequence[Any]) -> tuple[list, str]:
    """The fusion cards, largest estimate first, and the overview; a comparative run's cards
    show each trace's kernels from its candidate of the same operator."""
    ests = sorted(metrics.impact_estimates or (), key=lambda e: -(e.impact_score or 0))
    comparative = any(e.estimation == "measured" for e in ests)
    by_name: dict[str, FusionComparison] = {}
    if comparative:
        for c in candidates:
            found = FusionComparison.of(c)
            by_name.setdefault(str(found.base_name), found)
    pairs = [fusion_pair(i, e, comparative, by_name.get(str(e.operation)))
             for i, e in enumerate(ests, 1)]  # fmt: skip
    overview = (
        f"{plural(int(metrics.candidate_count or 0), 'fusion candidate')} "
        f"checked, {plural(len(pairs), 'estimate')} above the threshold."
    )
    return pairs, overview


def draft_findings(
    key: str, analysed: Metrics, candidates: Sequence[Any] = (), trace2: Metrics | None = None
) -> Findings:
    """The drafted findings of category ``key`` from its metrics; a comparative run's kernel
    fusion also takes the run's fusion `candidates` (each trace's kernels, for its Data), its
    system analyses trace 2's metrics of the same key (`trace2`)."""
    tier, title = tier_for(key), f"{md_code(key)} findings"
    if analysed.status == "ERROR":
        error = md_code(analysed.error or "the analysis failed", limit=300)
        return Findings(tier, f"# {title}\n\n**Status**: {Status.ERROR}\n\nError: {error}")
    if isinstance(analysed, CategoryMetrics):
        return draft_compute(key, analysed)
    if isinstance(analysed, KernelFusionMetrics):
        pairs, overview = draft_fusion(analysed, candidates)
    else:
        if isinstance(analysed, CpuIdleMetrics):
            idle2 = trace2 if isinstance(trace2, CpuIdleMetrics) else None
            pairs = cpu_idle_pairs(analysed, idle2)
        else:
            multi2 = trace2 if isinstance(trace2, MultiKernelMetrics) else None
            pairs = multi_kernel_pairs(analysed, multi2)
        overview = f"{plural(len(pairs), 'flagged issue')} in {metrics_file(key)}."
    if not pairs:
        return no_findings(tier, title, "No flagged issue or estimate in the metrics.")
    return success(tier, title, overview, pairs)
