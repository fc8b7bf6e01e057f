"""The "## What changed" markdown section: a headline, then small tables (top N of each list,
with a count of the rest). See docs/compare.md#what-changed. Operator, kernel and call-site
names, shapes and dtypes come from the traces: each is one `md_code` span
(docs/analysis.md#trace-text-in-markdown), and table cells escape `|`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from ..markdown_text import md_code
from .what_changed import (
    NOISE_FRACTION,
    NOISE_US,
    KernelChange,
    OnlyIn,
    ShapeChange,
    TimeChange,
    WhatChanged,
)

TOP_N = 5
NAME_CHARS = 60  # kernel and one-trace-only names are long; the tables show their head
Item = TypeVar("Item")


def headline(section: WhatChanged) -> str:
    """One sentence naming the largest difference: the largest time change above noise (with
    its kernel change, if the operator has one), else the largest kernel change."""
    top = section.top
    if top is None:
        quiet = (
            f"No shared operator's time changed by more than {NOISE_FRACTION:.0%} "
            f"(and {NOISE_US:g} µs)."
        )
        change = section.kernel_changes[0] if section.kernel_changes else None
        return quiet if change is None else f"{quiet} {_kernel_sentence(change)}"
    way = "slower" if top.delta_us > 0 else "faster"
    text = (
        f"{md_code(top.operator)} is {way} in trace 2: {_us(top.time1_us)} → "
        f"{_us(top.time2_us)} µs "
        f"({_signed(top.delta_us)} µs, ×{top.ratio:.2f})."
    )
    change = section.kernel_change_of(top.operator)
    return text if change is None else f"{text} {_kernel_sentence(change)}"


def _kernel_sentence(change: KernelChange) -> str:
    counts = f"{len(change.kernels1)} → {len(change.kernels2)} distinct kernels"
    if change.library_changed:
        families = f"{_join(change.families1)} to {_join(change.families2)}"
        return f"{md_code(change.operator)} moved from {families} ({counts})."
    return f"{md_code(change.operator)} runs other {_join(change.families1)} kernels ({counts})."


TIME_COLUMNS = ["operator", "call site", "count", "trace 1 µs", "trace 2 µs", "delta µs", "ratio"]


def what_changed_markdown(section: WhatChanged, top_n: int = TOP_N) -> str:
    """The section as markdown, ending in a newline."""
    parts = ["## What changed", "", headline(section), ""]
    parts += _table(
        "Slower in trace 2",
        section.regressions,
        TIME_COLUMNS,
        _time_row,
        top_n,
    )
    parts += _table(
        "Faster in trace 2",
        section.improvements,
        TIME_COLUMNS,
        _time_row,
        top_n,
    )
    parts += _table(
        "Same operator, other kernels",
        section.kernel_changes,
        ["operator", "count", "trace 1 kernels", "trace 2 kernels", "trace 1 µs", "trace 2 µs"],
        _kernel_row,
        top_n,
    )
    parts += _table(
        "Shape or dtype changes",
        section.shape_changes,
        ["operator", "count", "trace 1 dims / type", "trace 2 dims / type"],
        _shape_row,
        top_n,
    )
    only = ["name", "only in", "count", "GPU µs"]
    parts += _table("Operators in one trace only", section.operators_only, only, _only_row, top_n)
    parts += _table("Kernels in one trace only", section.kernels_only, only, _only_row, top_n)
    return "\n".join(parts).rstrip("\n") + "\n"


def _table(
    title: str,
    items: Sequence[Item],
    header: list[str],
    row: Callable[[Item], list[str]],
    top_n: int,
) -> list[str]:
    """`### title` and the first `top_n` items as a table; "None." when there are none."""
    lines = [f"### {title}", ""]
    if not items:
        return [*lines, "None.", ""]
    lines += ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row(item)) + " |" for item in items[:top_n]]
    if len(items) > top_n:
        lines += ["", f"… and {len(items) - top_n} more."]
    return [*lines, ""]


def _time_row(change: TimeChange) -> list[str]:
    return [
        md_code(change.operator),
        md_code(change.call_site) if change.call_site else "",
        str(change.count),
        _us(change.time1_us),
        _us(change.time2_us),
        _signed(change.delta_us),
        f"{change.ratio:.2f}",
    ]


def _kernel_row(change: KernelChange) -> list[str]:
    return [
        md_code(change.operator),
        str(change.count),
        _kernels(change.kernels1, change.families1),
        _kernels(change.kernels2, change.families2),
        _us(change.time1_us),
        _us(change.time2_us),
    ]


def _shape_row(change: ShapeChange) -> list[str]:
    return [
        md_code(change.operator),
        str(change.count),
        f"{_code(change.dims1)} / {_code(change.types1)}",
        f"{_code(change.dims2)} / {_code(change.types2)}",
    ]


def _only_row(item: OnlyIn) -> list[str]:
    return [
        md_code(item.name, NAME_CHARS),
        f"trace {item.trace}",
        str(item.count),
        _us(item.time_us),
    ]


def _kernels(names: tuple[str, ...], families: tuple[str, ...]) -> str:
    if not names:
        return "none"
    shown = "<br>".join(md_code(n, NAME_CHARS) for n in names[:3])
    more = f"<br>… {len(names) - 3} more" if len(names) > 3 else ""
    return f"{_join(families)}: {shown}{more}"


def _join(families: tuple[str, ...]) -> str:
    return " + ".join(families) if families else "none"


def _code(text: str | None) -> str:
    return "—" if text is None else md_code(text)


def _cell(text: str) -> str:
    """A cell of rooflens text and `md_code` spans: `|` escaped (GFM unescapes it even
    inside a span)."""
    return text.replace("|", "\\|")


def _us(value: float) -> str:
    return f"{value:,.1f}"


def _signed(value: float) -> str:
    return f"{value:+,.1f}"
