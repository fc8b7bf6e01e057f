"""Structured submission: an analyst supplies the prose of each P-item, code owns the rest.

The draft of a category (drafts.py) already holds every number, table and marker from the
metrics. A submission replaces only the judgement: the title, insight, action,
identification, reasoning and resolution of the P-items it names. The result is validated
before it is stored, so a model can get the prose wrong but never the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from rooflens.analyzers.findings.contract import DetailBlock, Findings, PItem, render_findings
from rooflens.analyzers.findings.drafts import draft_findings, findings_path, tier_for
from rooflens.analyzers.findings.validate import Problem, validate_findings
from rooflens.analyzers.report.write_csv import atomic_write_bytes

# text that would let prose smuggle in structure the validators and the report read
FORBIDDEN = ("<!--", "\n#", "\n|", "**Impact**")


class PItemProse(BaseModel):
    """The analyst's words for one P-item (`rank` as in the draft); unset fields keep the draft."""

    rank: int = Field(ge=1)
    title: str | None = None
    insight: str | None = None
    action: str | None = None
    identification: str | None = None
    reasoning: str | None = None
    resolution: str | None = None

    @field_validator("title", "insight", "action", "identification", "reasoning", "resolution")
    @classmethod
    def _plain_prose(cls, value: str | None) -> str | None:
        if value is None:
            return None
        text = value.strip()
        if not text:
            raise ValueError("must not be empty; leave the field out to keep the draft's text")
        if any(token in "\n" + text for token in FORBIDDEN):
            raise ValueError(
                "must be plain prose: no impact markers, headings, tables or **Impact** lines "
                "(those come from the metrics)"
            )
        return text


class SubmissionError(ValueError):
    """The submission does not fit the draft (unknown rank, invalid result)."""

    def __init__(self, message: str, problems: Sequence[Problem] = ()) -> None:
        self.problems = list(problems)
        details = "".join(f"\n  {p}" for p in self.problems)
        super().__init__(message + details)


def _card(card: PItem, prose: PItemProse) -> PItem:
    fields = dict(card.fields)
    if prose.insight is not None:
        fields["Insight"] = prose.insight
    if prose.action is not None:
        fields["Action"] = prose.action
    return replace(card, title=prose.title or card.title, fields=tuple(fields.items()))


def _block(block: DetailBlock, prose: PItemProse) -> DetailBlock:
    new_text = {
        "Identification": prose.identification,
        "Reasoning for Slowdown": prose.reasoning,
        "Resolution": prose.resolution,
    }
    sections = tuple(
        replace(s, inline=new_text[s.label]) if new_text.get(s.label) is not None else s
        for s in block.sections
    )
    return replace(block, title=prose.title or block.title, sections=sections)


def apply_submission(draft: Findings, items: Sequence[PItemProse]) -> Findings:
    """The draft with the submitted prose in place; every number stays the draft's."""
    by_rank = {item.rank: item for item in items}
    known = {card.number for card in draft.cards}
    unknown = sorted(set(by_rank) - known)
    if unknown:
        raise SubmissionError(
            f"P-item rank(s) {unknown} are not in the draft; its ranks are {sorted(known)}"
        )
    cards = tuple(_card(c, by_rank[c.number]) if c.number in by_rank else c for c in draft.cards)
    details = tuple(_block(b, by_rank[b.rank]) if b.rank in by_rank else b for b in draft.details)
    return replace(draft, cards=cards, details=details)


def submit_structured(run_dir: Path, key: str, items: Sequence[PItemProse]) -> Path:
    """Draft from the metrics, apply the prose, validate, and store the findings file."""
    findings = apply_submission(draft_findings(run_dir, key), items)
    text = render_findings(findings)
    problems = validate_findings(text, tier_for(key))
    if problems:
        raise SubmissionError(f"the submitted {key} findings do not validate", problems)
    path = findings_path(run_dir, key)
    atomic_write_bytes(path, text.encode("utf-8"))
    return path
