"""Structured submission: an analyst supplies the prose of each P-item, code owns the rest.

The draft of a category (drafts.py) already holds every number, table and marker from the
metrics. A submission replaces only the judgement: the title, insight, action,
identification, reasoning and resolution of the P-items it names. The result is validated
before it is stored, so a model can get the prose wrong but never the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field, field_validator

from ...markdown_text import md_prose
from ..contract.contract import (
    DetailBlock,
    Findings,
    PItem,
    Status,
    no_findings,
    render_findings,
)
from ..contract.validate import Problem, validate_findings
from .drafts import tier_for

SubmitStatus = Literal["findings", "nothing_to_report", "error"]
# text that would let prose smuggle in structure the validators and the report read
FORBIDDEN = ("<!--", "\n#", "\n|", "**Impact**")


class PItemProse(BaseModel):
    """One item's words; unset fields keep the draft's."""

    rank: int = Field(ge=1, description="its rank in the draft")
    title: str | None = Field(default=None, description="a short title")
    insight: str | None = Field(default=None, description="one sentence: what is wrong")
    action: str | None = Field(default=None, description="one or two sentences: what to do")
    identification: str | None = Field(
        default=None, description="the operations, kernels and library involved"
    )
    reasoning: str | None = Field(
        default=None, description="why it is slow, from what the trace shows"
    )
    resolution: str | None = Field(default=None, description="how to confirm the fix")
    confidence_reason: str | None = Field(
        default=None,
        description="kernel fusion only: why code's confidence level fits",
    )

    @field_validator(
        "title",
        "insight",
        "action",
        "identification",
        "reasoning",
        "resolution",
        "confidence_reason",
    )
    @classmethod
    def _plain_prose(cls, value: str | None) -> str | None:
        return None if value is None else _plain(value, "the field")


def _plain(value: str, what: str) -> str:
    text = value.strip()
    if not text:
        raise ValueError(f"{what} must not be empty; leave it out to keep the draft's text")
    if any(token in "\n" + text for token in FORBIDDEN):
        raise ValueError(
            f"{what} must be plain prose: no impact markers, headings, tables or **Impact** "
            "lines (those come from the metrics)"
        )
    return text


# an analyst's reason for a merge or a drop: plain prose, as the items' own words
Reason = Annotated[str, AfterValidator(lambda value: _plain(value, "reason"))]


class MergeItems(BaseModel):
    """Items that are one finding."""

    items: list[int] = Field(min_length=1, description="ranks folded into `into`")
    into: int = Field(ge=1, description="the rank that stays and speaks for them")
    reason: Reason = Field(description="why they are one finding")


class DropItem(BaseModel):
    """An item set aside; its numbers stay ranked."""

    item: int = Field(ge=1, description="the rank set aside")
    reason: Reason = Field(description="why it is no finding")


# the card fields that record an analyst's merge or drop (the report shows card fields as
# they are, and lists the items set aside with their reasons)
SET_ASIDE = "Set aside"
MERGED_INTO = "Merged into"
MERGES = "Merges"
# the overview paragraph of a findings file when an analyst wrote it (the report quotes it)
ANALYST_OVERVIEW = "**Analyst's overview**: "


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
    if prose.confidence_reason is not None:
        if "Confidence" not in fields:
            raise SubmissionError(
                f"P{card.number} has no confidence level (only kernel fusion items do); "
                "leave confidence_reason out"
            )
        level = fields["Confidence"].split(" -- ")[0]
        fields["Confidence"] = f"{level} -- {prose.confidence_reason}"
    return replace(card, title=prose.title or card.title, fields=tuple(fields.items()))


def _block(block: DetailBlock, prose: PItemProse) -> DetailBlock:
    given = {
        "Identification": prose.identification,
        "Reasoning for Slowdown": prose.reasoning,
        "Resolution": prose.resolution,
    }
    new_text = {label: text for label, text in given.items() if text is not None}
    sections = tuple(
        replace(s, inline=new_text[s.label]) if s.label in new_text else s for s in block.sections
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


def apply_changes(
    draft: Findings, merge: Sequence[MergeItems], drop: Sequence[DropItem]
) -> Findings:
    """The draft with each merge and drop recorded on its cards: a dropped card says it is
    set aside and why, a merged one which card it is merged into, the card that stays which
    it merges; every card and number stays (the ranking is code's)."""
    if not merge and not drop:
        return draft
    cards = {card.number: card for card in draft.cards}
    named = [m.into for m in merge] + [n for m in merge for n in m.items] + [d.item for d in drop]
    unknown = sorted(set(named) - set(cards))
    if unknown:
        raise SubmissionError(
            f"item rank(s) {unknown} are not in the draft; its ranks are {sorted(cards)}"
        )
    dropped = [d.item for d in drop]
    folded = [n for m in merge for n in m.items]
    for m in merge:
        if m.into in m.items:
            raise SubmissionError(f"merge into {m.into}: list only the other items in items")
    touched = dropped + folded + [m.into for m in merge]
    twice = sorted({n for n in touched if touched.count(n) > 1 and (n in dropped or n in folded)})
    if twice:
        raise SubmissionError(
            f"item rank(s) {twice} are dropped or merged more than once (an item is dropped, "
            "merged into another, or kept as the one others merge into, once)"
        )
    if len(set(dropped) | set(folded)) == len(cards):
        raise SubmissionError(
            "every drafted item would be dropped or merged away: keep at least one (the items "
            "are the metrics' findings; say in the note why they matter little)"
        )
    fields: dict[int, list[tuple[str, str]]] = {n: [] for n in cards}
    for d in drop:
        fields[d.item].append((SET_ASIDE, md_prose(d.reason)))
    for m in merge:
        into = cards[m.into].title
        fields[m.into].append(
            (MERGES, f"{'; '.join(cards[n].title for n in m.items)} -- {md_prose(m.reason)}")
        )
        for n in m.items:
            fields[n].append((MERGED_INTO, f"{into} -- {md_prose(m.reason)}"))
    return replace(
        draft,
        cards=tuple(
            replace(card, fields=(*card.fields, *fields[card.number]))
            if fields[card.number]
            else card
            for card in draft.cards
        ),
    )


def _with_note(findings: Findings, note: str | None) -> Findings:
    """The draft with its overview paragraph (after the title and status) replaced by the
    analyst's, marked as theirs (`ANALYST_OVERVIEW`) and made inert Markdown."""
    if note is None:
        return findings
    title, status_line, *_ = findings.preamble.split("\n\n")
    overview = ANALYST_OVERVIEW + md_prose(note)
    return replace(findings, preamble="\n\n".join([title, status_line, overview]))


def analyst_overview(findings: Findings) -> str | None:
    """The overview an analyst wrote in `findings` (Markdown, already inert), or None."""
    for paragraph in findings.preamble.split("\n\n"):
        if paragraph.startswith(ANALYST_OVERVIEW):
            return paragraph[len(ANALYST_OVERVIEW) :].strip()
    return None


def _status_file(draft: Findings, key: str, status: SubmitStatus, note: str | None) -> Findings:
    title = f"{key} findings"
    if status == "error":
        if not note:
            raise SubmissionError("status 'error' needs a note saying what failed")
        return Findings(draft.tier, f"# {title}\n\n**Status**: {Status.ERROR}\n\nError: {note}")
    if draft.cards:
        raise SubmissionError(
            f"the metrics of {key} hold {len(draft.cards)} finding(s) above the threshold; submit "
            "prose for them with status 'findings' (drafted items cannot be dropped)"
        )
    reason = ANALYST_OVERVIEW + md_prose(note) if note else "Nothing to report for this category."
    return no_findings(draft.tier, title, reason)


def submit(
    draft: Findings,
    key: str,
    items: Sequence[PItemProse],
    *,
    status: SubmitStatus = "findings",
    note: str | None = None,
    comparison_scope: str | None = None,
    merge: Sequence[MergeItems] = (),
    drop: Sequence[DropItem] = (),
) -> Findings:
    """Apply the prose (or the status) to the category's draft and validate the result (in
    the category's `comparison_scope`: a comparative draft has the comparative Data table).

    `note` replaces the overview paragraph; with status "nothing_to_report" or "error" it is
    the whole explanation, and items, merges and drops are not allowed. `merge` and `drop`
    record the analyst's judgement on the drafted items (`apply_changes`)."""
    if note is not None:
        try:
            note = _plain(note, "note")
        except ValueError as exc:
            raise SubmissionError(str(exc)) from None
    if status == "findings":
        findings = _with_note(apply_changes(apply_submission(draft, items), merge, drop), note)
    elif items or merge or drop:
        raise SubmissionError(f"status {status!r} takes a note, not items, merges or drops")
    else:
        findings = _status_file(draft, key, status, note)
    text = render_findings(findings)
    problems = validate_findings(text, tier_for(key), comparison_scope=comparison_scope)
    if problems:
        raise SubmissionError(f"the submitted {key} findings do not validate", problems)
    return findings
