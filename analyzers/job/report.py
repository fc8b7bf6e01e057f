"""`job_analysis.md`: the job report, from a JobAnalysis (docs/multirank.md#the-job-report).

Stragglers and why, the job's findings on the impact scale, each rank's timeline per step
with a link to its own report, the collectives that cost most, and the slowest rank's top
operations. Code writes every number; nothing is estimated here that the analysis did not.
Names from the traces (operations, collectives, categories, links, paths) are code spans and
failure reasons escaped prose (docs/analysis.md#trace-text-in-markdown); finding titles are
Markdown already.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..findings.composing.cards import ms, ms_range
from ..markdown_text import md_code, md_prose, md_table_cell
from .analysis import JobAnalysis
from .causes import Cause
from .inputs import rank_ranges
from .outside import incomplete_groups

TOP_COLLECTIVES = 10


def job_report_md(
    a: JobAnalysis, rank_reports: Mapping[int, str] | None = None, plot: str | None = None
) -> str:
    """The report's Markdown. `rank_reports` maps a rank to the relative path of its own
    `analysis.md`; `plot` is the relative path of the job plot (left out when None)."""
    parts = [
        _heading(a),
        _stragglers(a),
        _outside(a),
        _findings(a),
        _ranks(a, rank_reports or {}, plot),
        _collectives(a),
        _slowest(a),
        _coverage(a),
    ]
    return "\n\n".join(p for p in parts if p).rstrip() + "\n"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A pipe table of rooflens's own cells (numbers, words, Markdown whose names are code
    spans already): `|` escaped."""

    def cell(value: object) -> str:
        return md_table_cell(str(value))

    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _per_step(a: JobAnalysis, us: float) -> str:
    return ms(us / 1e3 / (a.steps or 1))


def _heading(a: JobAnalysis) -> str:
    world = f" of a world of {a.world_size}" if a.world_size else ""
    platform = f"platform {md_code(a.platform)}" if a.platform else "no platform known"
    steps = (
        f"{a.steps} profiler step(s) per rank; times are per step"
        if a.steps
        else "no profiler steps marked; times are per profiled window"
    )
    return (
        f"# Job analysis: {len(a.ranks)} rank(s){world}\n\n"
        f"{len(a.ranks)} rank(s) analysed, {len(a.failures)} failed, {len(a.missing)} "
        f"missing; {platform}; {steps}. "
        f"{len(a.collectives.collectives)} collectives matched across ranks"
        f" ({a.collectives.left_out} kernels of non-synchronising collectives not matched)."
    )


def _stragglers(a: JobAnalysis) -> str:
    late, waiter = a.straggler, a.longest_waiter
    if late is None:
        why = (
            "one rank waits for no other"
            if len(a.ranks) < 2
            else "no collective was matched"
            if a.collectives.collectives.empty
            else "the ranks arrive together at every collective (none held another)"
        )
        return f"## Stragglers\n\nNo rank is named: {why}."
    lines = [
        "## Stragglers",
        "",
        f"- **Rank {late.rank} arrives last** at {late.times_last} of {late.collectives} "
        f"collectives ({late.pct_last:.1f} %) and waits least ({ms(late.total_wait_us / 1e3)} "
        f"ms in all). The others waited {ms(late.held_others_us / 1e3)} ms for it alone "
        f"({_per_step(a, late.held_others_us)} ms per {a.per}).",
        f"- **Why**: {_why(a.causes, a.ruled_out)}",
    ]
    if waiter is not None:
        lines.append(
            f"- **Rank {waiter.rank} waits longest**: {ms(waiter.total_wait_us / 1e3)} ms in "
            f"all, {ms(waiter.mean_wait_us / 1e3)} ms per collective."
        )
    rows = [
        (
            w.rank,
            w.times_last,
            w.times_first,
            f"{w.pct_last:.1f}",
            ms(w.total_wait_us / 1e3),
            ms(w.mean_wait_us / 1e3),
            ms(w.held_others_us / 1e3),
        )
        for w in sorted(a.waits, key=lambda w: (-w.times_last, w.total_wait_us, w.rank))
    ]
    header = ("rank", "last", "first", "% last", "total wait ms", "mean wait ms", "held others ms")
    note = "Every rank's arrivals and waits over the whole trace:"
    return "\n".join(lines) + f"\n\n{note}\n\n" + _table(header, rows)


def _why(causes: Sequence[Cause], ruled_out: Sequence[Cause] = ()) -> str:
    not_it = "".join(
        f" Not because of {c.label}: its {ms(c.straggler_us / 1e3)} ms over its trace is above "
        f"the other ranks' median of {ms(c.median_us / 1e3)} ms, but "
        + " and ".join(f"rank {r} has {ms(us / 1e3)} ms" for r, us in c.outdone_by)
        + (", and they" if len(c.outdone_by) > 1 else ", and it")
        + " did not hold the job back."
        for c in ruled_out
    )
    if not causes:
        return (
            "its own trace does not explain it: no figure of its compute, idle time, data "
            "loading or top operations is both a tenth of its cost above the other ranks' "
            "median and above every other rank's (other causes: a clock offset between nodes, "
            "work before the profiled window, the order of its work before each collective)."
            + not_it
        )
    return (
        "; ".join(
            f"{c.label}: {ms(c.straggler_us / 1e3)} ms against a median of "
            f"{ms(c.median_us / 1e3)} ms on the other ranks (+{ms(c.excess_us / 1e3)} ms)"
            for c in causes
        )
        + " (over each rank's whole trace)."
        + not_it
    )


def _outside(a: JobAnalysis) -> str:
    """Collectives whose group holds untraced ranks: their time is a wait, not a transfer."""
    o = a.outside
    if o is None:
        return ""
    lacks = (
        f"the trace set lacks ranks {rank_ranges(a.missing)} of {a.world_size}"
        if a.missing and a.world_size
        else f"{o.traced} of each group's {o.group_size} ranks are traced"
    )
    head = (
        "## Waiting for ranks outside the trace set\n\n"
        f"{o.collectives} of {o.of} collectives have a group of {o.group_size} ranks of which "
        f"{o.traced} are traced: {lacks}. The traced ranks' ends there lie a median "
        f"{ms(o.end_skew_us / 1e3)} ms apart (their starts {ms(o.start_skew_us / 1e3)} ms): "
        "they leave together when the last rank of the group arrives, and that rank may be "
        f"one with no trace. The last traced rank spent {_per_step(a, o.last_traced_us)} ms "
        f"per {a.per} in them."
    )
    if o.split:
        body = (
            f" Of that, {_per_step(a, o.wait_us)} ms per {a.per} is time beyond the fastest "
            "instance of the same collective (its kind, size and group): a wait for a rank "
            "outside the set (at least: the fastest instance may hold a wait too), not "
            "transfer time and not communication to overlap."
        )
    else:
        body = (
            " Every instance of each collective takes the same time, so the traces cannot "
            "tell a wait for an untraced rank from the transfer."
        )
    return (
        head
        + body
        + " Their bandwidth is not judged against the link. Profile the missing ranks (or "
        "the rank that arrives last among them) to see who the group waits for."
    )


def _findings(a: JobAnalysis) -> str:
    if not a.findings:
        return "## Findings\n\nNo finding: the traces support no saving."
    rows = [
        (
            f"P{f.p_number}",
            f.title,
            ms_range(f.saving.low_ms, f.saving.high_ms),
            ms(f.saving.mid_ms),
            f"{f.percent_mid:.1f}",
        )
        for f in a.findings
        if f.saving is not None
    ]
    header = ("", "finding", f"saving ms per {a.per}", "mid", f"% of the median {a.per}")
    basis = "\n".join(f"- P{f.p_number}: {f.saving.basis}." for f in a.findings if f.saving)
    return "## Findings\n\n" + _table(header, rows) + "\n\n" + basis


def _ranks(a: JobAnalysis, reports: Mapping[int, str], plot: str | None) -> str:
    t = a.timelines
    columns = ("compute_us", "exposed_comm_us", "exposed_copy_us", "idle_us", "total_us")
    rows = []
    for row in t.itertuples(index=False):
        link = f"[analysis.md]({reports[row.rank]})" if row.rank in reports else "—"
        mark = " (straggler)" if a.straggler and row.rank == a.straggler.rank else ""
        cells = [_per_step(a, getattr(row, c)) for c in (*columns, "wait_us", "data_loading_us")]
        rows.append((f"{row.rank}{mark}", *cells, link))
    header = (
        "rank",
        "compute",
        "exposed comm",
        "exposed copies",
        "idle",
        "GPU window",
        "wait at collectives",
        "data loading",
        "report",
    )
    i = a.imbalance
    spread = (
        f"Compute per rank: median {_per_step(a, i.median_us)} ms, most "
        f"{_per_step(a, i.max_us)} ms on rank {i.max_rank} (max / median "
        f"{i.max_over_median:.2f}, coefficient of variation {i.cv:.3f})."
    )
    comm = t["exposed_comm_us"].to_numpy(np.float64) / 1e3 / (a.steps or 1)
    waited = 100.0 * t["wait_us"].sum() / max(float(t["exposed_comm_us"].sum()), 1e-9)
    outside = (
        " (waits for untraced ranks are not in it: see above)" if a.outside is not None else ""
    )
    exposed = (
        f"Exposed communication ranges from {ms(comm.min())} to {ms(comm.max())} ms per "
        f"{a.per}; the ranks' waits for later traced ranks at collectives add up to "
        f"{min(waited, 100.0):.0f} % of it (the *wait* column{outside})."
        if comm.max() > 0
        else "No rank has exposed communication."
    )
    figure = f"\n\n![GPU time per rank]({plot})" if plot else ""
    return f"## Ranks (ms per {a.per})\n\n{spread} {exposed}{figure}\n\n" + _table(header, rows)


def _size(nbytes: float) -> str:
    """A message size a reader takes in at once: 96 B, 24.0 KiB, 1.50 MiB."""
    if nbytes < 1024:
        return f"{nbytes:.0f} B"
    if nbytes < 2**20:
        return f"{nbytes / 1024:.1f} KiB"
    return f"{nbytes / 2**20:.2f} MiB"


def _collectives(a: JobAnalysis) -> str:
    coll = a.collectives.collectives
    if coll.empty:
        return ""
    cost = coll.assign(cost=coll["avg_wait"] + coll["comm_latency"])
    top = cost.sort_values(["cost", "collective_id"], ascending=[False, True]).head(TOP_COLLECTIVES)
    bw = a.bandwidth.set_index("collective_id") if not a.bandwidth.empty else None
    partial = set(coll["collective_id"][incomplete_groups(a.collectives)])
    rows = []
    for c in top.itertuples(index=False):
        b = bw.loc[c.collective_id] if bw is not None and c.collective_id in bw.index else None
        link = "—"
        if c.collective_id in partial:
            link = "not judged: untraced ranks in its group"
        elif b is not None and b.link:
            link = f"{b.link_pct:.0f} % of {md_code(b.link)}"
        rows.append(
            (
                c.collective_id,
                md_code(c.kind) if c.kind else "(unnamed)",
                c.ranks,
                _size(b.msg_bytes) if b is not None else "—",
                c.last_rank,
                ms(c.start_skew / 1e3),
                ms(c.avg_wait / 1e3),
                f"{c.comm_latency:.0f}",
                f"{b.busbw_gbps:.1f}" if b is not None else "—",
                link,
            )
        )
    header = (
        "id",
        "collective",
        "ranks",
        "message",
        "last rank",
        "start skew ms",
        "mean wait ms",
        "transfer µs",
        "bus GB/s",
        "link",
    )
    note = (
        ""
        if bw is not None
        else "\n\nNo matched collective records its message size: no bandwidth can be given."
    )
    return (
        "## Costliest collectives\n\nBy the mean time a rank spent in each (its wait plus the "
        "transfer).\n\n" + _table(header, rows) + note
    )


def _slowest(a: JobAnalysis) -> str:
    if not a.slowest_ops:
        return ""
    rows = [(md_code(o.name), md_code(o.category), o.count, ms(o.gpu_us / 1e3))
            for o in a.slowest_ops]  # fmt: skip
    who = "the straggler" if a.straggler else "the most compute"
    return (
        f"## Rank {a.slowest_rank}'s top operations ({who})\n\nGPU time over its trace.\n\n"
        + _table(("operation", "category", "count", "GPU ms"), rows)
    )


def _coverage(a: JobAnalysis) -> str:
    lines = [
        f"- rank {f.rank if f.rank is not None else '?'} ({md_code(f.path)}): "
        f"{md_prose(f.reason, limit=300)}"
        for f in a.failures
    ]
    if a.missing:
        lines.append(f"- missing (no trace given): ranks {rank_ranges(a.missing)}")
    if not lines:
        return ""
    return "## Ranks left out\n\n" + "\n".join(lines)
