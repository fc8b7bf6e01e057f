"""Headless performance plot: GPU time per category and the estimated savings.

Drawn from the run's manifest and, once ranked, its priorities; the run folder keeps the PNG
(and a base64 copy for clients that cannot fetch binaries). Uses ``matplotlib.figure.Figure``
with the Agg canvas directly so no global pyplot state is touched.
"""

from __future__ import annotations

import io
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rooflens.analyzers.findings.priorities import PriorityData, Recommendation, RollupPriority
from rooflens.analyzers.prepare.manifest import CategoryEntry, Manifest

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

REMAINDER_LABEL = "Non-compute (idle, exposed comm/memcpy)"
REMAINDER_COLOR = "#BBBBBB"
TITLE_WIDTH = 90  # characters per title line at 14 pt on the 12-inch-wide figure
# Okabe-Ito colour-blind-safe palette (black left out; grey is reserved for the remainder).
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#882255",
    "#44AA99",
    "#332288",
)


@dataclass(frozen=True)
class Segment:
    name: str
    label: str
    time_ms: float
    color: str


@dataclass(frozen=True)
class Saving:
    category: str
    label: str
    low_ms: float
    mid_ms: float
    high_ms: float
    mid_pct: float


@dataclass(frozen=True)
class PlotResult:
    png_bytes: bytes | None
    categories_drawn: list[str] = field(default_factory=list)
    reason: str | None = None  # why nothing was drawn, when png_bytes is None

    @property
    def drawn(self) -> bool:
        return self.png_bytes is not None


def _pretty(cat: CategoryEntry) -> str:
    name = cat.display_name or cat.name or "?"
    return name[:1].upper() + name[1:]


def compute_segments(manifest: Manifest) -> tuple[float, list[Segment]]:
    """Return (baseline_ms, segments) — compute categories by time desc, then the remainder."""
    total = manifest.gpu_utilization.total_time_ms
    cats = [
        c
        for c in manifest.categories
        if c.tier.startswith("compute") and (c.gpu_kernel_time_ms or 0.0) > 0
    ]
    cats.sort(key=lambda c: (-(c.gpu_kernel_time_ms or 0.0), c.name))
    segments = [
        Segment(c.name, _pretty(c), c.gpu_kernel_time_ms or 0.0, PALETTE[i % 10])
        for i, c in enumerate(cats)
    ]
    remainder = total - sum(s.time_ms for s in segments)
    if remainder > 0:
        segments.append(Segment("non_compute", REMAINDER_LABEL, remainder, REMAINDER_COLOR))
    return total, segments


def read_savings(
    priority: PriorityData | None, total_ms: float, labels: dict[str, str]
) -> list[Saving]:
    """Per-category savings in ms from ``recommendations`` (or ``priorities``), biggest first."""
    if priority is None or total_ms <= 0:
        return []
    rows = priority.recommendations or priority.priorities
    acc: dict[str, list[float]] = {}
    for row in rows:
        if not isinstance(row, Recommendation | RollupPriority) or row.impact_score <= 0:
            continue
        mid = row.impact_score
        vals = acc.setdefault(row.category, [0.0, 0.0, 0.0])
        for i, v in enumerate((row.impact_score_low, mid, row.impact_score_high)):
            vals[i] += v
    out = [
        Saving(
            cat,
            labels.get(cat, cat[:1].upper() + cat[1:]),
            min(lo, mid) / 100 * total_ms,
            mid / 100 * total_ms,
            max(hi, mid) / 100 * total_ms,
            mid,
        )
        for cat, (lo, mid, hi) in acc.items()
    ]
    out.sort(key=lambda s: (-s.mid_ms, s.category))
    return out


def _draw(title: str, total: float, segments: list[Segment], savings: list[Saving]) -> bytes:
    """Lay out the three panels (breakdown bar, its legend, savings) and return the PNG."""
    legend_rows = (len(segments) + 1) // 2
    heights = [1.3, 0.3 * legend_rows + 0.2, 1.0 + 0.5 * max(len(savings), 1)]
    # matplotlib costs about 0.3 s to import: only a run that draws pays it
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, sum(heights) + 1.6), dpi=120)
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(3, 1, height_ratios=heights, hspace=0.5)
    ax = fig.add_subplot(grid[0])
    _draw_breakdown(ax, total, segments)
    lax = fig.add_subplot(grid[1])
    lax.axis("off")
    handles, texts = ax.get_legend_handles_labels()
    lax.legend(handles, texts, loc="center", ncol=2, fontsize=10, frameon=False)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    bx = fig.add_subplot(grid[2])
    if savings:
        _draw_savings(bx, total, segments, savings)
    else:
        _draw_no_savings(bx)
    for side in ("top", "right"):
        bx.spines[side].set_visible(False)
    return _titled_png(fig, title)


def _draw_breakdown(ax: Axes, total: float, segments: list[Segment]) -> None:
    """One stacked bar of GPU time per category; shares of 6 % or more are printed on it."""
    left = 0.0
    for seg in segments:
        pct = 100 * seg.time_ms / total
        ax.barh(
            0,
            seg.time_ms,
            left=left,
            color=seg.color,
            edgecolor="white",
            linewidth=0.8,
            height=0.6,
            label=f"{seg.label} — {seg.time_ms:,.1f} ms ({pct:.1f} %)",
        )
        if pct >= 6:
            ax.text(
                left + seg.time_ms / 2,
                0,
                f"{pct:.0f} %",
                ha="center",
                va="center",
                fontsize=10,
                color="black",
                fontweight="bold",
            )
        left += seg.time_ms
    ax.set_xlim(0, max(total, left))
    ax.set_yticks([])
    ax.set_xlabel("GPU time (ms)", fontsize=10)
    ax.set_title(f"GPU time by category — end-to-end {total:,.1f} ms", fontsize=11, loc="left")


def _draw_savings(bx: Axes, total: float, segments: list[Segment], savings: list[Saving]) -> None:
    """Mid-estimate bars with low–high whiskers, in the colour of each category's segment."""
    ys = list(range(len(savings)))
    mids = [s.mid_ms for s in savings]
    err = [[s.mid_ms - s.low_ms for s in savings], [s.high_ms - s.mid_ms for s in savings]]
    colors = {seg.name: seg.color for seg in segments}
    bx.barh(
        ys,
        mids,
        color=[colors.get(s.category, "#4477AA") for s in savings],
        height=0.55,
        xerr=err,
        error_kw={"ecolor": "#333333", "capsize": 4, "lw": 1.2},
    )
    xmax = max(s.high_ms for s in savings) or 1.0
    for y, s in enumerate(savings):
        rng = f" (range {s.low_ms:,.1f}–{s.high_ms:,.1f})" if s.high_ms > s.low_ms else ""
        bx.text(
            s.high_ms + xmax * 0.015,
            y,
            f"{s.mid_ms:,.1f} ms · {s.mid_pct:.1f} %{rng}",
            va="center",
            fontsize=9,
        )
    bx.set_yticks(ys, [s.label for s in savings], fontsize=10)
    bx.invert_yaxis()
    bx.set_xlim(0, xmax * 1.6)
    total_mid = sum(mids)
    bx.set_title(
        f"Estimated savings — ≈ {total_mid:,.1f} ms ({100 * total_mid / total:.1f} %) "
        "in total at the mid estimate; whiskers show low–high",
        fontsize=11,
        loc="left",
    )
    bx.set_xlabel("Estimated GPU time saved (ms)", fontsize=10)


def _draw_no_savings(bx: Axes) -> None:
    """Say in the savings panel why it is empty, so a blank panel is not read as zero."""
    bx.axis("off")
    bx.text(
        0.5,
        0.5,
        "No quantified savings estimates (priority_data.json missing or empty)",
        ha="center",
        va="center",
        fontsize=10,
        color="#555555",
    )


def _titled_png(fig: Figure, title: str) -> bytes:
    """Wrap the title, leave room for it above the panels, and render the figure to PNG."""
    lines = textwrap.wrap(title, TITLE_WIDTH) or [""]
    fig.suptitle("\n".join(lines), fontsize=14, fontweight="bold")
    fig.subplots_adjust(
        left=0.2,
        right=0.97,
        top=1 - (0.5 + 0.3 * len(lines)) / fig.get_figheight(),
        bottom=0.55 / fig.get_figheight(),
    )
    buf = io.BytesIO()
    # a tight bounding box keeps long titles, category labels and range texts whole
    fig.savefig(buf, format="png", facecolor="white", bbox_inches="tight", pad_inches=0.3)
    return buf.getvalue()


def render_plot(manifest: Manifest, priorities: PriorityData | None, title: str) -> PlotResult:
    """Draw the plot of a run; never raises for degenerate inputs (says why instead)."""
    total, segments = compute_segments(manifest)
    if total <= 0:
        return PlotResult(None, reason="baseline (total_time_ms) is not positive")
    if not any(s.name != "non_compute" for s in segments):
        return PlotResult(None, reason="no segments: no compute category has GPU time")
    labels = {s.name: s.label for s in segments}
    for c in manifest.categories:
        labels.setdefault(c.name, _pretty(c))
    png = _draw(title, total, segments, read_savings(priorities, total, labels))
    return PlotResult(png, [s.name for s in segments])
