"""What the analysts said about their categories, as the report shows it: each analyst's
overview (the `note` of a submission) and the drafted items they set aside, with reasons.

The words are the analysts'; they were made inert Markdown when the findings were submitted
(`md_prose`, drafting/submission.py), so they are quoted here as they are. Merges show on the
cards themselves (`Merges` / `Merged into` lines); the numbers stay code's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...markdown_text import md_code
from ..contract.contract import Findings
from ..drafting.submission import SET_ASIDE, analyst_overview
from .cards import Placed

OVERVIEWS = "**The analysts' overviews**:"
SET_ASIDE_LEAD = (
    "**Set aside by the analysts** (still ranked with code's numbers; the cards say why):"
)


def overviews(findings: Mapping[str, Findings]) -> str | None:
    """A list of each category's overview an analyst wrote, or None when none did."""
    lines = [
        f"- {md_code(key)}: {text}"
        for key, found in findings.items()
        if (text := analyst_overview(found))
    ]
    return "\n".join([OVERVIEWS, "", *lines]) if lines else None


def set_aside(placed: Iterable[Placed]) -> str | None:
    """The report's items whose card an analyst set aside, each with its reason."""
    lines = [
        f"- P{p.number} ({md_code(p.key)}): {reason}"
        for p in placed
        if (reason := p.card.field(SET_ASIDE)) is not None
    ]
    return "\n".join([SET_ASIDE_LEAD, "", *lines]) if lines else None
