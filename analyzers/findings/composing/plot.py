"""Headless performance plot: GPU time per category and the estimated savings.

Drawn from the run's manifest and, once ranked, its priorities: one savings bar per
`priority_data.items` entry (compute, kernel fusion and system alike), labelled with its
report-wide P-number (docs/analysis.md#the-plot). The run folder keeps the PNG
(and a base64 copy for clients that cannot fetch binaries). Uses ``matplotlib.figure.Figure``
with the Agg canvas directly so no global pyplot state is touched. Names on the figure
(categories, item titles, model and platform) go through `plot_text`: one line, no control
characters, no code-span backticks, no mathtext.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...markdown_text import plain_line
from ...perf.platforms import Platform
from ...prepare.categories import GpuUtilization
from ...prepare.manifest import CategoryEntry, Manifest
from ..ranking.priorities import PriorityData
from .cards import ms, ms_range
from .comparative import ReportComparison
from .model_info import UNKNOWN as UNKNOWN_MODEL
from .model_info import ModelIdentification

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

REMAINDER_LABEL = "Non-compute (idle, exposed comm/memcpy)"  # when the split is not known
REMAINDER_COLOR = "#BBBBBB"
IDLE_LABEL = "GPU idle"
IDLE_COLOR = "#EEEEEE"
IDLE_HATCH = "///"
# the window's time that is not compute, as the timeline splits it: (name, label, colour)
EXPOSED = (
    ("exposed_comm", "Exposed communication", "#6E6E6E"),
    ("exposed_memcpy", "Exposed copies", "#A0A0A0"),
)
NOT_COMPUTE = frozenset({"non_compute", "idle", *(name for name, _, _ in EXPOSED)})
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
    time2_ms: float | None = None  # trace 2's time in a comparison (None: standalone)


@dataclass(frozen=True)
class Bar:
    """One ranked item's saving, as the savings panel draws it."""

    p_number: int
    kind: str
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


def plot_text(text: str) -> str:
    """Text (plain or Markdown with `md_code` spans) as a figure label: `plain_line`, the
    code-span backticks dropped, `$` escaped so matplotlib draws it instead of reading math."""
    return plain_line(text).replace("`", "").replace("$", r"\$")


def _pretty(cat: CategoryEntry) -> str:
    return _capital(cat.display_name or cat.name or "?")


def _capital(name: str) -> str:
    text = plot_text(name)
    return text[:1].upper() + text[1:]


def compute_segments(
    manifest: Manifest, comparison: ReportComparison | None = None
) -> tuple[float, list[Segment]]:
    """Return (baseline_ms, segments) — compute categories by time desc, then exposed
    communication, exposed copies and GPU idle (`_not_compute`). In a comparison each segment
    also holds trace 2's time of its category, and a category only trace 2 has gets a
    segment of its own (no trace-1 time)."""
    total = manifest.gpu_utilization.total_time_ms
    cats = [
        c
        for c in manifest.categories
        if c.tier.startswith("compute") and (c.gpu_kernel_time_ms or 0.0) > 0
    ]
    cats.sort(key=lambda c: (-(c.gpu_kernel_time_ms or 0.0), c.name))
    named = [(c.name, _pretty(c), c.gpu_kernel_time_ms or 0.0) for c in cats]
    if comparison is not None:
        seen = {name.lower() for name, _, _ in named}
        only2 = sorted((k for k in comparison.category_ms2 if k not in seen and
                        comparison.category_ms2[k] > 0), key=comparison.category_ms2.get,
                       reverse=True)  # fmt: skip
        named += [(k, _capital(comparison.display2(k)), 0.0) for k in only2]
    segments = [
        Segment(name, label, t1, PALETTE[i % 10], _time2(comparison, name))
        for i, (name, label, t1) in enumerate(named)
    ]
    compute1 = sum(s.time_ms for s in segments)
    compute2 = sum(s.time2_ms or 0.0 for s in segments)
    rest = {p[0]: p for p in _not_compute(manifest.gpu_utilization, total - compute1)}
    rest2: dict[str, float] | None = None
    window2 = 0.0
    if comparison is not None:
        window2 = comparison.utilization2.total_time_ms
        parts2 = _not_compute(comparison.utilization2, window2 - compute2)
        rest2 = {name: ms2 for name, _, _, ms2 in parts2}
        rest |= {p[0]: (*p[:3], 0.0) for p in parts2 if p[0] not in rest}
    for name, label, color, ms1 in rest.values():
        ms2 = None if rest2 is None else rest2.get(name, 0.0)
        if _shown(ms1, total) or (ms2 is not None and _shown(ms2, window2)):
            segments.append(Segment(name, label, ms1, color, ms2))
    return total, segments


def _shown(ms: float, window: float) -> bool:
    """Whether a part of the window is worth a segment: at least 0.05 % of it (a legend
    entry of "0.0 ms (0.0 %)" says nothing)."""
    return window > 0 and ms >= window * 5e-4


def _not_compute(util: GpuUtilization, remainder: float) -> list[tuple[str, str, str, float]]:
    """The window's time beyond the compute categories: exposed communication and copies
    as the timeline measured them, and the rest as GPU idle; one grey "non-compute" segment
    when the timeline gave no split (name, label, colour, ms)."""
    remainder = max(remainder, 0.0)
    exposed = [util.exposed_comm_time_percent, util.exposed_memcpy_time_percent]
    if util.idle_time_percent <= 0 and not any(exposed):
        return [("non_compute", REMAINDER_LABEL, REMAINDER_COLOR, remainder)]
    parts = [
        (name, label, color, min(util.total_time_ms * pct / 100, remainder))
        for (name, label, color), pct in zip(EXPOSED, exposed, strict=True)
    ]
    idle = max(remainder - sum(p[3] for p in parts), 0.0)
    return [*parts, ("idle", IDLE_LABEL, IDLE_COLOR, idle)]


def _time2(comparison: ReportComparison | None, name: str) -> float | None:
    if comparison is None:
        return None
    return comparison.time2(name) or 0.0


MAX_BARS = 12  # the savings panel draws the first items; the title says how many in all
LABEL_WIDTH = 110  # characters per line of an item's title, written above its bar
LABEL_LINES = 2  # a longer title is shortened there and given whole in the caption
KIND_COLORS = {"system": "#555555", "kernel_fusion": "#999933"}  # compute: its segment's


def read_savings(priority: PriorityData | None) -> list[Bar]:
    """One bar per ranked item with a saving, in P order (unquantified items have none)."""
    if priority is None:
        return []
    bars = []
    for item in priority.items:
        if item.saving is None or item.percent_mid is None or item.saving.mid_ms <= 0:
            continue
        title = plot_text(item.title)
        bars.append(
            Bar(
                item.p_number, item.kind, item.category, f"P{item.p_number} {title}",
                item.saving.low_ms, item.saving.mid_ms, item.saving.high_ms, item.percent_mid,
            )
        )  # fmt: skip
    return bars


def _together(priority: PriorityData | None, bars: list[Bar], total: float) -> tuple[float, float]:
    """(ms, % of the window) all ranked items could save, each pool counted once."""
    totals = priority.saving_totals if priority else None
    if totals is not None:
        return totals.mid_ms, totals.percent_mid
    mid = sum(b.mid_ms for b in bars)
    return mid, mid / total * 100 if total > 0 else 0.0


@dataclass(frozen=True)
class Savings:
    """The savings panel: the bars it draws, how many items there are, their total."""

    bars: list[Bar]
    items: int
    together_ms: float
    together_pct: float


def draw_png(title: str, total: float, segments: list[Segment], savings: Savings) -> bytes:
    """The plot as PNG bytes (what the run folder and the MCP resource hold)."""
    fig = draw_figure(title, total, segments, savings)
    buf = io.BytesIO()
    # a tight bounding box keeps long titles, category labels and range texts whole
    fig.savefig(buf, format="png", facecolor="white", bbox_inches="tight", pad_inches=0.3)
    return buf.getvalue()


def draw_figure(title: str, total: float, segments: list[Segment], savings: Savings) -> Figure:
    """Lay out the three panels (breakdown bar, its legend, savings) under the title, every
    text inside the figure: item titles wrap above their bars (a title too long for
    `LABEL_LINES` lines is shortened there and given whole in a caption below the panels)."""
    labels = [bar_label(b.label) for b in savings.bars]
    lines = max((text.count("\n") + 1 for text, _ in labels), default=1)
    row = 0.42 + 0.19 * lines  # inches per savings bar: the bar and its title above it
    caption = _caption([b.label for b, (_, cut) in zip(savings.bars, labels, strict=True) if cut])
    caption_h = 0.17 * len(caption) + 0.25 if caption else 0.0
    legend_rows = (len(segments) + 1) // 2
    first = 2.0 if any(seg.time2_ms is not None for seg in segments) else 1.3
    heights = [first, 0.3 * legend_rows + 0.2, 1.0 + row * max(len(savings.bars), 1)]
    # matplotlib costs about 0.3 s to import: only a run that draws pays it
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, sum(heights) + 1.6 + caption_h), dpi=120)
    FigureCanvasAgg(fig)
    gap = 0.85 * 3 / sum(heights)  # about 0.85 inch between panels, whatever their heights
    grid = fig.add_gridspec(3, 1, height_ratios=heights, hspace=gap)
    ax = fig.add_subplot(grid[0])
    _draw_breakdown(ax, total, segments)
    lax = fig.add_subplot(grid[1])
    lax.axis("off")
    handles, texts = ax.get_legend_handles_labels()
    lax.legend(handles, texts, loc="center", ncol=2, fontsize=10, frameon=False)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    bx = fig.add_subplot(grid[2])
    if savings.bars:
        _draw_savings(bx, segments, savings, [text for text, _ in labels], row, lines)
    else:
        _draw_no_savings(bx)
    for side in ("top", "right"):
        bx.spines[side].set_visible(False)
    if caption:
        fig.text(0.02, 0.1 / fig.get_figheight(), "\n".join(caption), fontsize=9, va="bottom",
                 color="#333333")  # fmt: skip
    _title(fig, title, caption_h)
    _fit(fig, ax, bx)
    return fig


def bar_label(label: str) -> tuple[str, bool]:
    """An item's label as drawn above its bar: wrapped to `LABEL_WIDTH`, at most
    `LABEL_LINES` lines; and whether it had to be shortened to fit."""
    lines = textwrap.wrap(label, LABEL_WIDTH) or [""]
    if len(lines) <= LABEL_LINES:
        return "\n".join(lines), False
    kept = textwrap.wrap(label, LABEL_WIDTH, max_lines=LABEL_LINES, placeholder=" …")
    return "\n".join(kept), True


def _caption(labels: list[str]) -> list[str]:
    """Caption lines giving the whole title of every item shortened above its bar."""
    lines: list[str] = []
    for label in labels:
        lines += textwrap.wrap(label, LABEL_WIDTH + 40, subsequent_indent="    ")
    return lines


def _fit(fig: Figure, ax: Axes, bx: Axes) -> None:
    """Keep every text inside the figure: the left margin as wide as the breakdown's tick
    labels need (none in a standalone run), and the savings axis long enough for the range
    text right of each bar."""
    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width
    ticks = [t.get_window_extent(renderer).width for t in ax.get_yticklabels() if t.get_text()]
    fig.subplots_adjust(left=(max(ticks, default=0.0) + 24) / width)
    for _ in range(3):  # each widening of the axis also moves the texts; settle in a few
        right = bx.get_window_extent(renderer).x1
        over = max((t.get_window_extent(renderer).x1 for t in bx.texts), default=0.0)
        if over <= right:
            return
        lo, hi = bx.get_xlim()
        shown = right - bx.get_window_extent(renderer).x0
        bx.set_xlim(lo, hi * (1 + (over - right) / max(shown, 1.0) + 0.02))


def _breakdown_title(total: float, segments: list[Segment]) -> str:
    """Say what the bar holds: compute by category and, where there is any, exposed
    transfers and idle, so idle time is never read as GPU work."""
    names = {seg.name for seg in segments}
    parts = ["GPU compute by category"]
    parts += [label.lower() for name, label, _ in EXPOSED if name in names]
    if "idle" in names:
        parts.append("GPU idle (hatched)")
    elif "non_compute" in names:
        parts.append("non-compute time (grey)")
    return f"The analysed window, {total:,.1f} ms: " + ", ".join(parts)


def _draw_breakdown(ax: Axes, total: float, segments: list[Segment]) -> None:
    """One stacked bar of the window's time: compute categories, then exposed transfers and
    idle (two in a comparison: trace 1 above trace 2, on one time axis); shares of 6 % or
    more are printed on it, idle's as "idle N %"."""
    compared = any(seg.time2_ms is not None for seg in segments)
    total2 = sum(seg.time2_ms or 0.0 for seg in segments)
    bars = [(1, total, lambda seg: seg.time_ms), (0, total2, lambda seg: seg.time2_ms or 0.0)]
    widest = total
    for y, bar_total, time_of in bars if compared else [(0, total, bars[0][2])]:
        left = 0.0
        for seg in segments:
            width = time_of(seg)
            pct = 100 * width / bar_total if bar_total > 0 else 0.0
            label = f"{seg.label} — {seg.time_ms:,.1f} ms ({pct:.1f} %)"
            if compared:
                label = f"{seg.label} — {seg.time_ms:,.2f} ms vs {seg.time2_ms or 0.0:,.2f} ms"
            idle = seg.name == "idle"
            ax.barh(y, width, left=left, color=seg.color, height=0.6,
                    edgecolor="#999999" if idle else "white", linewidth=0.8,
                    hatch=IDLE_HATCH if idle else None,
                    label=label if y == (1 if compared else 0) else None)  # fmt: skip
            if pct >= 6:
                ax.text(left + width / 2, y, f"idle {pct:.0f} %" if idle else f"{pct:.0f} %",
                        ha="center", va="center", fontsize=10, color="black",
                        fontweight="bold")  # fmt: skip
            left += width
        widest = max(widest, left)
    ax.set_xlim(0, widest)
    ax.set_xlabel("time in the analysed window (ms)", fontsize=10)
    if not compared:
        ax.set_yticks([])
        ax.set_title(_breakdown_title(total, segments), fontsize=11, loc="left")
        return
    ax.set_yticks([1, 0], [f"Trace 1 ({total:,.2f} ms)", f"Trace 2 ({total2:,.2f} ms)"])
    ax.set_title(
        "The analysed windows, trace 1 against trace 2 (legend: trace 1 vs trace 2)",
        fontsize=11, loc="left",
    )  # fmt: skip


def _draw_savings(
    bx: Axes, segments: list[Segment], savings: Savings, labels: list[str], row: float, lines: int
) -> None:
    """Mid-estimate bars with low–high whiskers, P1 first, each item's title above its bar
    (`row`: inches per bar; `lines`: the most lines a title takes): a compute item in its
    category's colour, kernel fusion and system items in their own."""
    bars = savings.bars
    ys = list(range(len(bars)))
    bar_h = 0.3 / row  # 0.3 inch, in data units
    err = [[b.mid_ms - b.low_ms for b in bars], [b.high_ms - b.mid_ms for b in bars]]
    colors = {seg.name: seg.color for seg in segments}
    fills = [KIND_COLORS.get(b.kind) or colors.get(b.category, "#4477AA") for b in bars]
    bx.barh(
        ys,
        [b.mid_ms for b in bars],
        color=fills,
        height=bar_h,
        xerr=err,
        error_kw={"ecolor": "#333333", "capsize": 4, "lw": 1.2},
    )
    xmax = max(b.high_ms for b in bars) or 1.0
    above = bx.get_yaxis_transform()  # x in axes fractions, y in data
    for y, (b, label) in enumerate(zip(bars, labels, strict=True)):
        rng = f" (range {ms_range(b.low_ms, b.high_ms)})" if b.high_ms > b.low_ms else ""
        text = f"{ms(b.mid_ms, b.high_ms)} ms · {b.mid_pct:.1f} %{rng}"
        bx.text(b.high_ms + xmax * 0.015, y, text, va="center", fontsize=9)
        bx.text(0.0, y - bar_h / 2 - 0.05 / row, label, transform=above, ha="left",
                va="bottom", fontsize=10)  # fmt: skip
    bx.set_yticks([])
    bx.set_ylim(len(bars) - 1 + bar_h / 2 + 0.1 / row, -bar_h / 2 - (0.1 + 0.19 * lines) / row)
    bx.set_xlim(0, xmax * 1.6)
    shown = f" (P1–P{len(bars)} of {savings.items})" if savings.items > len(bars) else ""
    bx.set_title(
        f"Estimated savings per finding{shown} — together at most ≈ "
        f"{ms(savings.together_ms)} ms ({savings.together_pct:.1f} %) at the mid estimate; "
        "whiskers show low–high",
        fontsize=11,
        loc="left",
    )
    bx.set_xlabel("Estimated time saved (ms)", fontsize=10)


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


def _title(fig: Figure, title: str, caption_h: float) -> None:
    """Wrap the title and leave room for it above the panels (and the caption below)."""
    lines = textwrap.wrap(title, TITLE_WIDTH) or [""]
    fig.suptitle("\n".join(lines), fontsize=14, fontweight="bold")
    fig.subplots_adjust(
        left=0.03,
        right=0.98,
        top=1 - (0.5 + 0.3 * len(lines)) / fig.get_figheight(),
        bottom=(0.55 + caption_h) / fig.get_figheight(),
    )


Drawer = Callable[[str, float, list[Segment], Savings], bytes]


def render_plot(
    manifest: Manifest,
    priorities: PriorityData | None,
    title: str,
    draw: Drawer = draw_png,
    comparison: ReportComparison | None = None,
) -> PlotResult:
    """Draw the plot of a run; never raises for degenerate inputs (says why instead).
    `draw` turns the laid-out data into PNG bytes (`PlotProcess.draw` does it in a helper
    process whose matplotlib import overlapped the run). With `comparison` the breakdown
    shows trace 1 and trace 2 per category."""
    laid = plot_layout(manifest, priorities, comparison)
    if isinstance(laid, str):
        return PlotResult(None, reason=laid)
    total, segments, savings = laid
    return PlotResult(draw(title, total, segments, savings), [s.name for s in segments])


def plot_layout(
    manifest: Manifest, priorities: PriorityData | None, comparison: ReportComparison | None
) -> tuple[float, list[Segment], Savings] | str:
    """What the plot draws (window, segments, savings), or why there is nothing to draw."""
    total, segments = compute_segments(manifest, comparison)
    if total <= 0:
        return "baseline (total_time_ms) is not positive"
    if not any(s.name not in NOT_COMPUTE for s in segments):
        return "no segments: no compute category has GPU time"
    bars = read_savings(priorities)
    together_ms, together_pct = _together(priorities, bars, total)
    return total, segments, Savings(bars[:MAX_BARS], len(bars), together_ms, together_pct)


def plot_title(
    identity: ModelIdentification | None,
    platform: Platform | None,
    compared: ReportComparison | None = None,
) -> str:
    """The plot's title: the model (when identified) on its platform, against trace 2's in a
    comparison."""
    known = identity is not None and identity.model not in ("", UNKNOWN_MODEL)
    name = identity.model if identity is not None and known else "Unidentified model"
    where = platform.name if platform else "an unknown platform"
    if compared is not None:  # trace 1's platform against trace 2's
        where += f" vs {compared.platform2 or 'an unknown platform'}"
    return plot_text(f"{name} on {where} - Performance Breakdown")
