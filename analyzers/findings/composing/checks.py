"""The report checks against ``priority_data.json`` (docs/analysis.md#validation): R1–R3 (one
card per item of ``priorities``, in its section, with its numbers), R4 (Top Operations rows,
one per ``tracelens_compute.priorities`` entry) and R6 (the
Priorities table and total). ``ReportProblem`` is the problem every report rule returns."""

from __future__ import annotations

from dataclasses import dataclass

from ... import layout
from ..contract.contract import (
    END_RE,
    P_HEADING_RE,
    Marker,
    is_separator,
    split_row,
)
from ..ranking.impact_scale import PriorityItem
from ..ranking.priorities import TRACELENS_KEY, PriorityData
from .cards import ms


@dataclass(frozen=True)
class ReportProblem:
    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{layout.REPORT} line {self.line}: [{self.rule}] {self.message}"


def _num(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


KIND_SECTIONS = {
    "compute": "Compute Kernel Optimizations",
    "kernel_fusion": "Kernel Fusion Opportunities (Experimental)",
    "system": "System-Level Optimizations",
}


def _cards(lines: list[str], sections: dict, markers: dict) -> tuple[dict, list[ReportProblem]]:
    """{P-number: (section, heading line, its p_item marker)} of every card of the three card
    sections, and R1 problems for a number used twice."""
    found: dict[int, tuple[str, int, Marker]] = {}
    probs = []
    for name in KIND_SECTIONS.values():
        if name not in sections:
            continue
        first, last = sections[name]
        heads = [n for n in range(first, last + 1) if P_HEADING_RE.match(lines[n - 1])]
        for k, n in enumerate(heads):
            end = heads[k + 1] if k + 1 < len(heads) else last + 1
            inside = [markers[i] for i in range(n, end) if i in markers]
            marker = next((m for m in inside if m.kind == "p_item"), Marker(""))
            number = int(P_HEADING_RE.match(lines[n - 1]).group(1))  # type: ignore[union-attr]
            if number in found:
                probs.append(
                    ReportProblem(
                        "R1",
                        n,
                        f"P{number} is used by two cards: number "
                        "every card once (P-numbers run across the report).",
                    )
                )
            found.setdefault(number, (name, n, marker))
    return found, probs


def priorities_problems(lines, sections, markers, priority: PriorityData) -> list[ReportProblem]:
    """R1–R4 and R6 against ``priority_data.json``."""
    items = priority.priorities
    cards, probs = _cards(lines, sections, markers)
    for k, item in enumerate(items, 1):
        probs += _item_problems(k, item, cards, sections)
    compute = sections.get(KIND_SECTIONS["compute"])
    tops = [n for n, m in markers.items() if compute and compute[0] <= n <= compute[1]
            and m.kind == "top_ops"]  # fmt: skip
    if tops and compute:
        probs += _top_ops_problems(lines, tops[0], compute[1], len(priority.top_operations))
    probs += _priority_table(lines, sections.get("Priorities"), items, priority)
    return probs


def _item_problems(k: int, item: PriorityItem, cards: dict, sections: dict) -> list[ReportProblem]:
    """R1–R3 for the k-th item: its card, in its section, with its numbers."""
    where = KIND_SECTIONS[item.kind]
    number = item.p_number
    if number != k:
        return [ReportProblem("R1", 1, f"priority_data.json priorities[{k - 1}].p_number={number} "
                              f"!= {k}: regenerate priority_data.json.")]  # fmt: skip
    if k not in cards or cards[k][0] != where:
        line = sections.get(where, (1, 1))[0]
        return [ReportProblem("R1", line, f"no '### P{k}:' card under '## {where}' for "
                              f"priority_data.json priorities[{k - 1}] ({item.title}): "
                              "write one card per item, numbered with its p_number.")]  # fmt: skip
    _, n, marker = cards[k]
    p, category = marker.attr("p"), marker.attr("category")  # as written, None when absent
    probs = []
    if p != str(k) or category != item.category:
        probs.append(
            ReportProblem(
                "R2",
                n,
                f"P{k}'s p_item marker has p={p} category={category}; priorities[{k - 1}] has "
                f"p_number={k} category={item.category}: copy them.",
            )
        )
    saving = item.saving
    if saving is None:  # an unquantified item: its marker is all null
        if [marker.attr(a) for a in ("low", "mid", "high")] != ["null"] * 3:
            message = f"P{k} has no saving: its marker needs low=null mid=null high=null."
            probs.append(ReportProblem("R3", n, message))
        return probs
    want = {"low": item.percent_low, "mid": item.percent_mid, "high": item.percent_high,
            "low_ms": saving.low_ms, "mid_ms": saving.mid_ms,
            "high_ms": saving.high_ms}  # fmt: skip
    for attr, value in want.items():
        got = marker.attr(attr)
        if not _close(got, value):
            probs.append(
                ReportProblem(
                    "R3",
                    n,
                    f"P{k}'s p_item marker {attr}={got}"
                    f" != priorities[{k - 1}] {value}: copy the number.",
                )
            )
    return probs


def _close(got: object, want: object) -> bool:
    """Equal once rounded as the markers write them (ms to 4 decimals, % to 2)."""
    a, b = _num(got), _num(want)
    return a is not None and b is not None and abs(a - b) <= 5e-5 + 1e-9


def _priority_table(
    lines, span, items: list[PriorityItem], priority: PriorityData
) -> list[ReportProblem]:
    """R6: the Priorities table lists P1..Pn in order; the total is the saving_totals mid."""
    if span is None:
        return []
    first, last = span
    rows = [split_row(lines[n - 1]) for n in range(first, last + 1)
            if lines[n - 1].lstrip().startswith("| P")]  # fmt: skip
    numbers = [r[0] for r in rows if r and r[0] != "P"]
    want = [f"P{k}" for k in range(1, len(items) + 1)]
    probs = []
    if numbers != want:
        probs.append(ReportProblem("R6", first, f"the Priorities table lists {numbers or 'no'} "
                                   f"rows; priority_data.json has {want or 'no items'}: one row "
                                   "per item, in P order."))  # fmt: skip
    totals = priority.saving_totals
    if items and totals is not None:
        body = "\n".join(lines[first - 1 : last])
        if f"at most {ms(totals.mid_ms)} ms" not in body:
            probs.append(ReportProblem("R6", first, "the Priorities section does not state the "
                                       f"total saving_totals.mid_ms = {totals.mid_ms}: "
                                       "write 'Together, at most X ms ...'."))  # fmt: skip
    return probs


def _top_ops_problems(lines, start: int, last: int, want: int) -> list[ReportProblem]:
    """R4: one Top Operations row per priority."""
    end = next((n for n in range(start + 1, last + 1) if END_RE.match(lines[n - 1])), last)
    rows = [split_row(lines[n - 1]) for n in range(start + 1, end)
            if lines[n - 1].lstrip().startswith("|")]  # fmt: skip
    data = max(0, len([r for r in rows if not is_separator(r)]) - 1)
    if data == want:
        return []
    return [
        ReportProblem(
            "R4",
            start,
            f"Top Operations table has {data} data rows "
            f"but priority_data.json::{TRACELENS_KEY}.priorities has {want} entries: "
            "write one row per priority, in order.",
        )
    ]
