"""One set of numbers per report (docs/analysis.md#the-report): the figures the report states in
two places agree, or the report says in words why they differ, and the checks that hold it to
that (docs/analysis.md#validation):

R7  the Executive Summary's GPU idle and P1's idle, when P1 is an idle item: the same figure,
    or the summary's idle line says how much of it P1 counts and which part
    ("P1 counts 32.59 ms of it: input pipeline (DataLoader), in the steady-state iterations").
R8  each Top Operations row against the workbook's ``ops_summary_by_category`` (its calls and
    its time): the same, or the note under the table gives the workbook's figures for that
    category. They differ by rule, not by mistake: Top Operations counts computation time and
    the calls that ran a computation kernel (docs/analysis.md#category-time); the workbook
    keeps TraceLens's direct kernel time per launching operator, copies, memsets and
    overlapping kernels counted in full.
R9  the Top Operations "Rank" column names its order.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ... import layout
from ...markdown_text import md_cell
from ..contract.contract import is_separator, split_row
from ..ranking.priorities import PriorityData
from .cards import ms
from .checks import ReportProblem

Workbook = Mapping[str, tuple[int, float]]  # op category, lower case -> (calls, ms)

WORKBOOK_SHEET = "ops_summary_by_category"
RANK_HEAD = "Rank (by estimated saving)"
RANK_NOTE = (
    "Rank orders the categories by their findings' summed estimated saving (those with a "
    "roofline estimate first, then those with a heuristic one); categories without a finding "
    "follow, by kernel time. Time is each category's computation time and Ops its calls that "
    "ran a computation kernel (docs/analysis.md#category-time)."
)
WORKBOOK_NOTE = (
    "The workbook's `ops_summary_by_category` counts differently: TraceLens's direct kernel "
    "time of every launching operator, with calls that ran only copies or memsets, copy time "
    "and overlapping kernels counted in full. There:"
)
IDLE_LINE = "- **GPU idle**:"
SUMMARY_MS_RE = re.compile(r"^- \*\*GPU idle\*\*: ([0-9][0-9,]*(?:\.[0-9]+)?) ms")
TIME_HEADS = ("Time (ms)", "Trace 1 Time (ms)")
CSV_LIMIT = 1 << 20


def workbook_figures(frame: Any) -> dict[str, tuple[int, float]] | None:
    """(calls, ms) per op category of the ``ops_summary_by_category`` sheet; None without it."""
    if frame is None or not {"op category", "Count"} <= set(getattr(frame, "columns", ())):
        return None
    column = "total_direct_kernel_time_ms"
    if column not in frame.columns:
        return None
    out: dict[str, tuple[int, float]] = {}
    for name, count, time in zip(frame["op category"], frame["Count"], frame[column], strict=True):
        try:
            out[str(name).lower()] = (int(count), float(time))
        except (TypeError, ValueError):
            continue
    return out


def read_workbook(run_dir: Path) -> dict[str, tuple[int, float]] | None:
    """The sheet's figures from the run folder's CSV; None when it is missing or unreadable."""
    paths = [
        Path(run_dir) / d / f"{WORKBOOK_SHEET}.csv" for d in (layout.PERF_CSVS, layout.TRACE1_CSVS)
    ]
    path = next((p for p in paths if p.is_file()), None)
    try:
        if path is None or path.stat().st_size > CSV_LIMIT:
            return None
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    out: dict[str, tuple[int, float]] = {}
    for row in rows:
        try:
            count = int(float(row.get("Count") or ""))
            time = float(row.get("total_direct_kernel_time_ms") or "")
        except ValueError:
            continue
        out[str(row.get("op category") or "").lower()] = (count, time)
    return out


def in_workbook(book: Workbook, category: str, display: str) -> tuple[int, float] | None:
    return book.get(display.lower()) or book.get(category.lower())


def agrees(calls: int | None, time_ms: float | None, there: tuple[int, float] | None) -> bool:
    """Same calls, and the same time to the table's 3 decimals."""
    if there is None or calls is None or time_ms is None:
        return False
    return calls == there[0] and abs(time_ms - there[1]) <= 5e-4 + 1e-9


def workbook_phrase(display: str, there: tuple[int, float] | None) -> str:
    """The note's words for one category: the workbook's figures, or that it has none."""
    if there is None:
        return f"{md_cell(display)} has no row"
    return f"{md_cell(display)} {there[0]} ops, {there[1]:.3f} ms"


def workbook_note(rows: list[tuple[str, str, int | None, float | None]], book: Workbook) -> str:
    """The note under Top Operations: rows are (category, display, calls, ms) as the table
    shows them; every row that differs from the workbook is named with the workbook's
    figures."""
    parts = []
    for category, display, calls, time_ms in rows:
        there = in_workbook(book, category, display)
        if not agrees(calls, time_ms, there):
            here = "—" if time_ms is None else f"{time_ms:.3f}"
            parts.append(f"{workbook_phrase(display, there)} (here {calls} ops, {here} ms)")
    if not parts:
        return f"{RANK_NOTE} The workbook's `{WORKBOOK_SHEET}` has the same calls and times."
    return f"{RANK_NOTE} {WORKBOOK_NOTE} {'; '.join(parts)}."


def same_idle(a: float, b: float) -> bool:
    """Two idle figures are one when they agree to the 3 decimals the report writes."""
    return abs(a - b) <= max(5e-4, abs(b) * 1e-4)


def idle_counts(p_number: int, size_ms: float, label: str, steady: bool) -> str:
    """How much of the window's idle an idle item counts, and which part of it."""
    where = ", in the steady-state iterations" if steady else ""
    return f"P{p_number} counts {ms(size_ms)} ms of it: {label}{where}"


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def idle_problems(
    lines: list[str], span: tuple[int, int] | None, priority: PriorityData
) -> list[ReportProblem]:
    """R7 (module docstring)."""
    ranked = priority.priorities
    if span is None or not ranked or ranked[0].category != "cpu_idle":
        return []
    saving = ranked[0].saving
    size = None if saving is None else saving.cap_ms
    found = [(n, lines[n - 1]) for n in range(span[0], span[1] + 1)
             if lines[n - 1].startswith(IDLE_LINE)]  # fmt: skip
    if size is None or not found:
        return []
    n, line = found[0]
    match = SUMMARY_MS_RE.match(line)
    stated = _number(match.group(1)) if match else None
    if stated is not None and match is not None:
        decimals = len(match.group(1).partition(".")[2])
        shown = 0.5 * 10.0**-decimals  # the summary rounds; P1's figure is exact
        if abs(stated - size) <= shown + max(5e-4, abs(size) * 1e-4):
            return []
    if f"P1 counts {ms(size)} ms of it" in line:
        return []
    return [ReportProblem("R7", n, f"the summary's GPU idle ({stated} ms) is not P1's idle "
                          f"({ms(size)} ms) and the line does not say which part P1 counts: "
                          f"write 'P1 counts {ms(size)} ms of it: <cause>'.")]  # fmt: skip


def top_ops_problems(
    lines: list[str], block: tuple[int, int], priority: PriorityData, book: Workbook | None
) -> list[ReportProblem]:
    """R8 and R9 (module docstring) for the Top Operations table in lines block[0]..block[1]
    (the begin and end markers); the note follows the end marker."""
    start, end = block
    rows = [split_row(lines[n - 1]) for n in range(start + 1, end)
            if lines[n - 1].lstrip().startswith("|")]  # fmt: skip
    rows = [r for r in rows if not is_separator(r)]
    if not rows:
        return []
    head, body = rows[0], rows[1:]
    probs = []
    if not head or not re.fullmatch(r"Rank \(by [^)]+\)", head[0]):
        probs.append(ReportProblem("R9", start + 1, f"the Top Operations rank column is "
                                   f"'{head[0] if head else ''}': say what it orders by, "
                                   f"'{RANK_HEAD}'."))  # fmt: skip
    if book is None or "Ops" not in head:
        return probs
    time_col = next((head.index(h) for h in TIME_HEADS if h in head), None)
    note = lines[end] if end < len(lines) else ""
    note = note if note.strip() else (lines[end + 1] if end + 1 < len(lines) else "")
    tops = priority.top_operations
    for k, (row, top) in enumerate(zip(body, tops, strict=False), start=1):
        display = top.display_name or top.category
        there = in_workbook(book, top.category, display)
        calls = _number(row[head.index("Ops")]) if len(row) > head.index("Ops") else None
        time = _number(row[time_col]) if time_col is not None and len(row) > time_col else None
        same = agrees(None if calls is None else int(calls), time, there)
        phrase = workbook_phrase(display, there)
        if not same and phrase not in note:
            message = (
                f"Top Operations row {k} ({row[head.index('Ops')]} ops, {row[time_col or 0]} "
                f"ms) differs from the workbook's {WORKBOOK_SHEET} and the note under the "
                f"table does not give '{phrase}': name the difference there."
            )
            probs.append(ReportProblem("R8", start + 1 + k, message))
    return probs
