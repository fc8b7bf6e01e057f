"""The report's summary parts: the Executive Summary, the Priorities table, the Warnings, the
Top Operations table and the Appendix (docs/analysis.md#the-report). Category, operation and
platform names are code spans (docs/analysis.md#trace-text-in-markdown); item titles are
Markdown already."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from ... import layout
from ...categories.any_metrics import Metrics
from ...categories.cpu_idle import IterationSummary
from ...layout import CPU_IDLE, KERNEL_FUSION, TIMELINE_SYSTEM_KEYS
from ...markdown_text import md_cell, md_prose, md_table_cell
from ...perf.platforms import Platform
from ...prepare.categories import GpuUtilization
from ...prepare.manifest import CategoryEntry, CategoryMetadata, Manifest
from ...trace.health import HealthWarning
from ...trace.iterations import IterationMethod
from ..contract.contract import Findings, Status
from ..drafting.differences import (
    DIFF_HEAD,
    ms_difference,
    point_difference,
    slower_sentence,
)
from ..drafting.drafts import num
from ..drafting.system_compare import idle_sentence
from ..ranking.impact_scale import PriorityItem
from ..ranking.priorities import PriorityData
from ..ranking.run_metrics import RunMetrics
from .cards import cap_text, ms, ms_range, saving_text
from .comparative import ReportComparison
from .model_info import ModelIdentification
from .numbers import (
    RANK_HEAD,
    RANK_NOTE,
    idle_counts,
    same_idle,
    workbook_note,
)
from .prose import ReportProse

UNKNOWN = "Cannot be inferred from trace"
KIND_WORDS = {"compute": "compute", KERNEL_FUSION: "kernel fusion", "system": "system"}


def pct(value: float | None) -> str:
    return "—" if value is None else f"{float(value):.2f}%"


@dataclass(frozen=True)
class ReportInputs:
    """Everything the report is composed from, as the pipeline holds it, and the figures
    several of its parts share."""

    manifest: Manifest
    metadata: Mapping[str, CategoryMetadata]
    metrics: Mapping[str, Metrics]
    findings: Mapping[str, Findings]
    priorities: PriorityData
    identity: ModelIdentification | None
    has_plot: bool
    prose: ReportProse | None = None
    platform: Platform | None = None
    health: tuple[HealthWarning, ...] | None = None  # the trace's health warnings
    comparison: ReportComparison | None = None  # trace 2, in a comparative run
    # the workbook's ops_summary_by_category: op category (lower case) -> (calls, ms)
    workbook: Mapping[str, tuple[int, float]] | None = None

    @cached_property
    def analysed(self) -> RunMetrics:
        """`metrics`, typed: the system analyses by name, the compute categories by key."""
        return RunMetrics.of(self.metrics)

    @property
    def util(self) -> GpuUtilization:
        return self.manifest.gpu_utilization

    @property
    def by_name(self) -> dict[str, CategoryEntry]:
        return {c.name: c for c in self.manifest.categories}

    def compute_categories(self) -> list[CategoryEntry]:
        return [c for c in self.manifest.categories if c.tier != "system"]

    def compute_ms(self) -> float:
        """The computation time: the share of the window compute kernels ran."""
        return self.util.total_time_ms * self.util.computation_time_percent / 100

    def compute_share(self, kernel_ms: float | None) -> str:
        """`kernel_ms` as a share of compute time. The denominator is the larger of the
        computation time and the compute categories' summed kernel time, so no share of it
        passes 100 % when the categories hold more than the timeline's computation."""
        total = max(self.compute_ms(), sum(c.gpu_kernel_time_ms or 0.0
                                           for c in self.compute_categories()))  # fmt: skip
        if kernel_ms is None or total <= 0:
            return "—"
        return f"{kernel_ms / total * 100:.1f}%"

    def iterations(self) -> IterationSummary | None:
        """The iterations the host-side analysis found (cpu_idle's `host_side`)."""
        idle = self.analysed.cpu_idle
        host = idle.host_side if idle is not None else None
        return host.iterations if host is not None else None

    def peaks(self) -> CategoryMetadata | None:
        for key in sorted(self.metadata, key=lambda k: f"{k}_metadata.json"):
            if self.metadata[key].max_achievable_tflops:
                return self.metadata[key]
        return None


def _top_category(run: ReportInputs) -> tuple[str, str]:
    """The compute category with the most kernel time, and its share of compute time."""
    cats = [c for c in run.compute_categories() if c.gpu_kernel_time_ms is not None]
    if not cats:
        return "—", "—"
    top = max(cats, key=lambda c: c.gpu_kernel_time_ms or 0.0)
    return top.display_name or top.name, run.compute_share(top.gpu_kernel_time_ms)


def _metric_rows(u: GpuUtilization, top: str, share: str) -> list[tuple[str, str]]:
    return [
        ("Total Time", f"{u.total_time_ms:.2f} ms"),
        ("GPU Busy %", pct(100 - u.idle_time_percent)),
        ("Compute %", pct(u.computation_time_percent)),
        ("Idle %", pct(u.idle_time_percent)),
        ("Exposed Communication %", pct(u.exposed_comm_time_percent)),
        ("Top Bottleneck Category", _top_cell(top, share)),
    ]


def _top_cell(top: str, share: str) -> str:
    """The top category (a code span: a user's table can name it) and its share."""
    if top == "—":
        return top
    return f"{md_cell(top)} ({share} of compute time)" if share != "—" else md_cell(top)


def _metrics_table(run: ReportInputs) -> str:
    """The metric rows: one value column, or trace 1, trace 2 and their difference."""
    top, share = _top_category(run)
    rows = _metric_rows(run.util, top, share)
    c = run.comparison
    if c is None:
        rows[0] = (rows[0][0], f"{rows[0][1]} (the analysed window)")
        lines = ["| Metric | Value |", "| --- | --- |", *(f"| {a} | {b} |" for a, b in rows)]
        return "\n".join(lines)
    u1, u2 = run.util, c.utilization2
    top2, share2 = _top_category2(c)
    ones = {e.name.lower(): e.display_name for e in run.compute_categories()}
    top2 = top2 if top2 == "—" else ones.get(top2) or c.display2(top2)
    diffs = [ms_difference(u1.total_time_ms, u2.total_time_ms)]
    diffs += [point_difference(100 - u1.idle_time_percent, 100 - u2.idle_time_percent)]
    diffs += [point_difference(getattr(u1, k), getattr(u2, k)) for k in (
        "computation_time_percent", "idle_time_percent", "exposed_comm_time_percent")]  # fmt: skip
    diffs.append("same category" if top.lower() == top2.lower() else "different categories")
    rows2 = _metric_rows(u2, top2, share2)
    one = md_cell(run.manifest.platform) if run.manifest.platform else "unknown platform"
    two = md_cell(c.platform2) if c.platform2 else "unknown platform"
    head = f"| Metric | Trace 1 ({one}) | Trace 2 ({two}) | {DIFF_HEAD} |"
    paired = zip(rows, rows2, diffs, strict=True)
    body = [f"| {a} | {b} | {b2} | {d} |" for (a, b), (_, b2), d in paired]
    return "\n".join([head, "| --- | --- | --- | --- |", *body])


def _top_category2(c: ReportComparison) -> tuple[str, str]:
    """Trace 2's category with the most kernel time, and its share of its compute time."""
    if not c.category_ms2:
        return "—", "—"
    name, time2 = max(c.category_ms2.items(), key=lambda kv: kv[1])
    compute2 = c.utilization2.total_time_ms * c.utilization2.computation_time_percent / 100
    total = max(compute2, sum(c.category_ms2.values()))
    return name, f"{time2 / total * 100:.1f}%" if total > 0 else "—"


def executive_summary(run: ReportInputs, prose: ReportProse | None = None) -> str:
    """What the window held, what it is worth fixing first; the prose, when a model wrote
    one, replaces only the opening paragraph."""
    table = _metrics_table(run)
    para = prose.summary if prose is not None and prose.summary else _paragraph(run)
    if run.has_plot:
        plot = f"![Performance breakdown]({layout.PLOT})"
    else:
        plot = "_No performance breakdown plot was produced for this run._"
    parts = ["## Executive Summary", para, _facts(run), table, plot]
    if prose is not None and prose.recommendation:
        parts.append(f"**Recommendation**: {prose.recommendation}")
    return "\n\n".join(parts)


def _paragraph(run: ReportInputs) -> str:
    items, totals = run.priorities.priorities, run.priorities.saving_totals
    if not items:
        return run.priorities.nothing_to_rank or (
            "No finding has an estimated saving: nothing in this window is ranked."
        )
    kinds = [i.kind for i in items]
    text = (
        f"This report ranks {len(items)} finding(s) on one scale, what each could save of the "
        f"analysed window: {kinds.count('compute')} compute, "
        f"{kinds.count('kernel_fusion')} kernel fusion and {kinds.count('system')} system."
    )
    unquantified = sum(1 for i in items if i.saving is None)
    if unquantified:
        text += (
            f" Not quantifiable from this trace (no usable roofline): {unquantified}, "
            "ranked last with the reason."
        )
    if totals is not None:
        text += (
            f" Together they could save at most {ms(totals.mid_ms)} ms "
            f"({totals.percent_mid:.2f} % of the window) at the mid estimate, never counting "
            "a pool of the window twice."
        )
    return text


def _facts(run: ReportInputs) -> str:
    """The window, its iterations (when known), GPU busy vs idle, and the top three fixes."""
    u, window = run.util, run.util.total_time_ms

    def part(percent: float) -> str:
        return f"{ms(window * percent / 100)} ms ({percent:.2f} %)"

    lines = [
        f"- **Analysed window**: {ms(window)} ms, from the first to the last GPU event the "
        "timeline counts; it may hold several iterations, or part of one.",
    ]
    iterations = iteration_line(run.iterations())
    if iterations:
        lines.append(f"- **Iterations**: {iterations}")
    found = run.iterations()
    if found is not None and found.warmup_detail:
        lines.append(f"- **Before the steady state**: {found.warmup_detail}.")
    if run.comparison is not None:
        u2 = run.comparison.utilization2
        lines.append(f"- **Against trace 2**: {slower_sentence(window, u2.total_time_ms)}")
        alike = run.comparison.comparability
        if alike is not None:
            why = "; ".join(md_prose(r) for r in alike.reasons) or "like for like"
            lines.append(f"- **Comparability**: {alike.score}/100: {why}.")
        if run.comparison.headline:
            lines.append(f"- **Largest difference**: {run.comparison.headline}")
        if run.comparison.system is not None:
            lines.append(f"- **Idle against trace 2**: {idle_sentence(run.comparison.system)}")
    lines += [
        f"- **GPU busy**: {part(100 - u.idle_time_percent)}: compute "
        f"{part(u.computation_time_percent)}, exposed communication "
        f"{part(u.exposed_comm_time_percent)}, exposed copies "
        f"{part(u.exposed_memcpy_time_percent)}.",
        f"- **GPU idle**: {part(u.idle_time_percent)}{_idle_counted(run)}.",
    ]
    top = top_fixes(run)
    if top:
        lines.append("- **Top fixes**:")
        lines += [f"  - P{i.p_number}: {i.title} — could save {saving_text(i)}" for i in top]
    return "\n".join(lines)


def top_fixes(run: ReportInputs) -> list[PriorityItem]:
    """The first three items that could save something: a one-time cost priced at nothing
    (an upload in set-up) is ranked and explained, but it is no fix."""
    found = run.priorities.priorities
    return [i for i in found if i.saving is not None and i.saving.high_ms > 0][:3]


def _idle_counted(run: ReportInputs) -> str:
    """How much of the window's idle each idle item among the top fixes counts, when it is not
    all of it ("; P1 counts 32.59 ms of it: input pipeline (DataLoader), in the steady-state
    iterations"): one idle figure, the parts said in words (docs/analysis.md#the-report)."""
    idle = run.analysed.cpu_idle
    host = idle.host_side if idle is not None else None
    whole = run.util.total_time_ms * run.util.idle_time_percent / 100
    parts = []
    for item in top_fixes(run):
        size = item.saving.cap_ms if item.category == CPU_IDLE and item.saving else None
        if size is None or same_idle(whole, size):
            continue
        causes = host.idle_causes if host is not None and host.host_recorded else []
        k = (item.source_rank or 0) - 1
        cause = causes[k] if 0 <= k < len(causes) else None
        label = cause.label if cause is not None else "the idle this item is priced on"
        steady = cause is not None and cause.steady_ms is not None
        parts.append(idle_counts(item.p_number, size, label, steady))
    return "; " + "; ".join(parts) if parts else ""


def iteration_line(iterations: IterationSummary | None) -> str | None:
    """The iteration count and time per iteration, from the host-side analysis; None (the
    line is left out, never guessed) when it found no iteration with a measured time."""
    if iterations is None or iterations.count == 0:
        return None
    how: dict[IterationMethod, str] = {
        "none": "found by no method",
        "profiler_step": "from ProfilerStep# marks",
        "optimizer_step": "ended by optimizer steps",
        "benchmark_marks": "from the benchmark's own annotations",
        "repeating_ops": "from repeating operators",
    }
    text = f"{iterations.count} ({how[iterations.method]}"
    text += ")" if iterations.confident else ", low confidence)"
    phases = f" Phases: {iterations.phase_detail}." if iterations.phase_detail else ""
    if iterations.count == 1:
        return f"{text}; {ms(iterations.median_ms)} ms.{phases}"
    if iterations.growing:  # no one figure stands for iterations that keep slowing down
        return f"{text}; {iterations.phase_detail}; no median stands for them."
    return (
        f"{text}; {ms(iterations.median_ms)} ms per iteration (median; "
        f"{ms_range(iterations.min_ms, iterations.max_ms)} ms, CV {iterations.cv:.2f}).{phases}"
    )


PRIORITIES_HEAD = (
    "| P | Kind | Finding | Saving (ms) | Mid (ms) | % of window (low–high) | Capped by |\n"
    "| --- | --- | --- | --- | --- | --- | --- |"
)


def priorities_table(run: ReportInputs) -> str:
    """Every item, P1..Pn, with its saving, and what they could save together."""
    items = run.priorities.priorities
    window = run.util.total_time_ms
    intro = (
        f"Every finding on one scale: what it could save of the analysed window "
        f"({ms(window)} ms), low–high around a mid estimate, never more than the time it is "
        "capped by. Items the trace cannot quantify (no usable roofline) come after the "
        "measured ones, with the reason instead of a saving."
    )
    if run.comparison is not None:
        intro += (
            " The window is trace 1's; a compute or kernel-fusion saving is the time trace 1 "
            "could recover by doing that work as fast as trace 2."
        )
    if not items:
        why = run.priorities.nothing_to_rank or "No finding has an estimated saving."
        return "\n\n".join(["## Priorities", intro, why])
    rows = []
    counted = run.priorities.saving_totals.counted_in if run.priorities.saving_totals else {}
    for item in items:
        kind = KIND_WORDS[item.kind]
        s = item.saving
        over = item.p_number in counted  # its kernels are a higher-ranked item's
        shared = f"; its kernels are P{counted[item.p_number]}'s, counted there" if over else ""
        title = md_table_cell(item.title)
        if s is None:
            rows.append(
                f"| P{item.p_number} | {kind} | {title} | "
                f"{md_table_cell(saving_text(item))} | — | — | — |"
            )
            continue
        rows.append(
            f"| P{item.p_number} | {kind} | {title} | "
            f"{ms_range(s.low_ms, s.high_ms)} | {ms(s.mid_ms, s.high_ms)} | "
            f"{item.percent_low:.2f}–{item.percent_high:.2f} | {cap_text(item)}{shared} |"
        )
    parts = ["## Priorities", intro, "\n".join([PRIORITIES_HEAD, *rows])]
    totals = run.priorities.saving_totals
    if totals is not None:
        parts.append(
            f"Together, at most {ms(totals.mid_ms)} ms ({totals.percent_mid:.2f} % of the "
            f"window) at the mid estimate ({ms_range(totals.low_ms, totals.high_ms)} ms), "
            "never counting a pool of the window twice."
        )
    return "\n\n".join(parts)


def warnings(run: ReportInputs) -> str | None:
    failed = _failed(run)
    variance: list[tuple[str, str, str, str]] = []
    compute = run.analysed.compute
    for key in sorted(compute, key=lambda k: f"{k}_metrics.json"):  # the files' order
        metrics = compute[key]
        for op in metrics.operations or ():
            if op.high_variance is True:
                cat = md_cell(metrics.category or key)
                variance.append((md_cell(op.name), cat, num(op.cov), num(op.time_ms)))
    if not failed and not variance:
        return None
    out = ["## Warnings"]
    if failed:
        out.append("Some analyses failed, so their findings are missing from this report.")
        rows = [f"| {a} | {t} | {e} |" for a, t, e in failed]
        out.append("\n".join(["| Analysis | Tier | Error Summary |", "| --- | --- | --- |", *rows]))
    if variance:
        out.append("These ops vary a lot between calls, so their averaged numbers are less sure.")
        rows = [f"| {o} | {c} | {v} | {t} |" for o, c, v, t in variance]
        head = "| Operation | Category | CoV | Reported Time (ms) |\n| --- | --- | --- | --- |"
        out.append("\n".join([head, *rows]))
    return "\n\n".join(out)


def _failed(run: ReportInputs) -> list[tuple[str, str, str]]:
    """(analysis, tier, error) of every failed analysis, from the priorities and the files."""
    failed = [
        (item.category, _tier_name(item.category), md_cell(item.message or "analysis failed", 300))
        for item in run.priorities.failed_categories
        if item.status == "ERROR"
    ]
    seen = {f[0] for f in failed}
    for key in [*(c.name for c in run.manifest.categories), KERNEL_FUSION]:
        if key in seen or key not in run.findings or run.findings[key].status != Status.ERROR:
            continue
        lines = run.findings[key].preamble.splitlines()
        msg = next((ln for ln in lines if ln.startswith("Error")), "")
        failed.append((key, _tier_name(key), md_table_cell(msg) or "analysis failed"))
        seen.add(key)
    return [(md_cell(key), tier, error) for key, tier, error in failed]


def _tier_name(key: str) -> str:
    return (
        "fusion" if key == KERNEL_FUSION else "system" if key in TIMELINE_SYSTEM_KEYS else "compute"
    )


def top_operations(run: ReportInputs) -> str:
    """The reference's Top Operations rows: time, share of compute time, calls (Ops) and
    unique shapes (the manifest's `ops_count`, the rows of the category table)."""
    rows = []
    shown = []
    for p in run.priorities.top_operations:
        cat = run.by_name.get(p.category)
        kernel_ms = cat.gpu_kernel_time_ms if cat else getattr(p, "gpu_kernel_time_ms", None)
        compute = run.analysed.compute
        calls = compute[p.category].operation_count if p.category in compute else None
        low = getattr(p, "impact_score_low", None)
        high = getattr(p, "impact_score_high", None)
        tail = f"<!-- top-ops-row low={'null' if low is None else low} "
        tail += f"high={'null' if high is None else high} -->"
        times = [num(kernel_ms)]
        if run.comparison is not None:  # trace 2's time of the category, and the difference
            t2 = run.comparison.time2(p.category)
            times.append(num(None if t2 is None else round(t2, 3)))
            times.append(num(None if t2 is None or kernel_ms is None else round(kernel_ms - t2, 3)))
        cells = (p.rank, md_cell(p.display_name), *times, run.compute_share(kernel_ms),
                 num(calls), num(cat.ops_count if cat else None))  # fmt: skip
        rows.append("| " + " | ".join(str(c) for c in cells) + f" | {tail}")
        shown.append((p.category, p.display_name, calls, kernel_ms))
    times_head = ["Time (ms)"]
    if run.comparison is not None:
        times_head = ["Trace 1 Time (ms)", "Trace 2 Time (ms)", f"{DIFF_HEAD}, ms"]
    columns = [RANK_HEAD, "Category", *times_head, "% of Compute Time", "Ops", "Unique shapes"]
    head = f"| {' | '.join(columns)} |\n|{' --- |' * len(columns)}"
    body = "\n".join([head, *rows])
    note = RANK_NOTE if run.workbook is None or not shown else workbook_note(shown, run.workbook)
    block = f"<!-- impact-begin kind=top_ops -->\n{body}\n<!-- impact-end -->"
    return f"### Top Operations\n\n{block}\n\n{note}"
