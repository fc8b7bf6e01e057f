"""The job plot: one stacked bar per rank (GPU compute, exposed communication, exposed
copies, idle, in ms per step) with the straggler marked, so the slow rank and what the
others did meanwhile read at a glance (docs/multirank.md#the-job-report).

matplotlib is imported inside `draw_job_plot` only (about 0.3 s): nothing else pays for it.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from ..findings.composing.plot import PALETTE, REMAINDER_COLOR, PlotResult

if TYPE_CHECKING:
    from .analysis import JobAnalysis

# (timeline column, legend label, colour): the stack from the axis up
PARTS = (
    ("compute_us", "GPU compute", PALETTE[0]),
    ("exposed_comm_us", "exposed communication", PALETTE[1]),
    ("exposed_copy_us", "exposed copies", PALETTE[2]),
    ("idle_us", "GPU idle", REMAINDER_COLOR),
)
STRAGGLER_COLOR = PALETTE[5]
MAX_LABELLED_RANKS = 32  # beyond this, rank labels go every few ranks


def draw_job_plot(analysis: JobAnalysis) -> PlotResult:
    """The PNG of the per-rank stacked bars (ms per step, or per profiled window)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    t = analysis.timelines
    if t.empty:
        return PlotResult(None, reason="no rank was summarised")
    scale = 1e3 * (analysis.steps or 1)  # µs over the trace -> ms per step
    ranks = t["rank"].to_numpy()
    x = list(range(len(ranks)))
    fig = Figure(figsize=(min(4 + 0.35 * len(ranks), 24), 5.5), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    bottom = [0.0] * len(ranks)
    for column, label, colour in PARTS:
        heights = (t[column].to_numpy() / scale).tolist()
        ax.bar(x, heights, bottom=bottom, color=colour, label=label, width=0.8)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    late = analysis.straggler
    if late is not None and late.rank in set(ranks.tolist()):
        i = ranks.tolist().index(late.rank)
        ax.bar([i], [bottom[i]], width=0.9, fill=False, edgecolor=STRAGGLER_COLOR, linewidth=2.5)
        ax.annotate(
            f"straggler: rank {late.rank}",
            (i, max(bottom)),  # above every bar, so no neighbour hides it
            xytext=(0, 6),
            textcoords="offset points",
            ha="center",
            color=STRAGGLER_COLOR,
            fontweight="bold",
        )
    step = max(1, len(ranks) // MAX_LABELLED_RANKS)
    ax.set_xticks(x[::step], [str(r) for r in ranks[::step]])
    ax.set_xlabel("rank")
    ax.set_ylabel(f"ms per {analysis.per}")
    ax.set_ylim(0, max(bottom) * 1.15 if max(bottom) > 0 else 1)
    ax.set_title(_title(analysis), loc="left")
    ax.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=4, fontsize="small", frameon=False
    )
    ax.spines[["top", "right"]].set_visible(False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", facecolor="white", bbox_inches="tight", pad_inches=0.3)
    return PlotResult(buf.getvalue(), categories_drawn=[p[0] for p in PARTS])


def _title(analysis: JobAnalysis) -> str:
    n = len(analysis.ranks)
    late = analysis.straggler
    if late is None:
        return f"Time per rank (busy and idle), {n} rank(s): no straggler named"
    return (
        f"Time per rank (busy and idle), {n} ranks: rank {late.rank} arrives last at "
        f"{late.times_last} of {late.collectives} collectives"
    )
