"""Structured submission: the analyst's prose goes in, the draft's numbers stay."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rooflens.analyzers.findings.contract.contract import (
    Findings,
    Status,
    parse_findings,
    render_findings,
)
from rooflens.analyzers.findings.contract.validate import validate_findings
from rooflens.analyzers.findings.drafting.drafts import draft_findings
from rooflens.analyzers.findings.drafting.submission import (
    ANALYST_OVERVIEW,
    MERGED_INTO,
    MERGES,
    SET_ASIDE,
    DropItem,
    MergeItems,
    PItemProse,
    SubmissionError,
    analyst_overview,
    apply_submission,
    submit,
)
from rooflens.analyzers.pipeline.folder import RunFolder
from tests.helpers.sample_metrics import GEMM, typed


def gemm_draft() -> Findings:
    return draft_findings("gemm", typed("gemm", GEMM))


PROSE = PItemProse(
    rank=1,
    title="GEMMs under half of the bf16 roof",
    insight="The two projection GEMMs reach 35-42 % of the matrix roof.",
    action="Tune hipBLASLt for M=8944 or pad N to a multiple of 256.",
    identification="aten::mm and aten::addmm in the MLP projections.",
    reasoning="Small N tiles leave matrix units idle.",
    resolution="Try the tuned solution index for these shapes.",
)


def test_prose_replaces_the_draft_text_and_keeps_every_number():
    draft = gemm_draft()
    submitted = apply_submission(draft, [PROSE])
    card = submitted.cards[0]
    assert card.title == PROSE.title
    assert card.field("Insight") == PROSE.insight and card.field("Action") == PROSE.action
    assert card.impact == draft.cards[0].impact  # the marker numbers are the draft's
    assert card.suffix == draft.cards[0].suffix  # the library too
    block = submitted.details[0]
    assert block.section("Reasoning for Slowdown").inline == PROSE.reasoning
    assert block.section("Data") == draft.details[0].section("Data")
    assert submitted.cards[1] == draft.cards[1]  # P2 was not submitted: unchanged
    text = render_findings(submitted)
    assert validate_findings(text, "compute", metrics=GEMM) == []
    assert parse_findings(text, "compute") == submitted


def test_submit_returns_the_validated_findings_the_folder_stores(tmp_path):
    submitted = submit(gemm_draft(), "gemm", [PROSE])
    assert submitted.cards[0].field("Action") == PROSE.action
    assert validate_findings(render_findings(submitted), "compute") == []
    path = RunFolder(tmp_path).write_findings("gemm", submitted)
    assert path == tmp_path / "category_findings/gemm_findings.md"
    assert PROSE.action in path.read_text()
    assert RunFolder(tmp_path).read_findings("gemm") == submitted


def test_a_note_replaces_the_overview_and_statuses_follow_the_draft():
    noted = submit(gemm_draft(), "gemm", [PROSE], note="Two GEMM shapes <dominate>.")
    assert noted.preamble.split("\n\n")[2] == f"{ANALYST_OVERVIEW}Two GEMM shapes \\<dominate\\>."
    assert analyst_overview(noted) == "Two GEMM shapes \\<dominate\\>."  # inert Markdown
    assert analyst_overview(gemm_draft()) is None  # code's overview is no analyst's
    with pytest.raises(SubmissionError, match="hold 2 finding"):
        submit(gemm_draft(), "gemm", [], status="nothing_to_report")
    with pytest.raises(SubmissionError, match="needs a note"):
        submit(gemm_draft(), "gemm", [], status="error")
    failed = submit(gemm_draft(), "gemm", [], status="error", note="The CSV was cut short.")
    assert failed.status == Status.ERROR and "The CSV was cut short." in failed.preamble


def test_an_unknown_rank_is_refused_naming_the_ranks_that_exist():
    draft = gemm_draft()
    with pytest.raises(SubmissionError, match=r"rank\(s\) \[7\].*ranks are \[1, 2\]"):
        apply_submission(draft, [PItemProse(rank=7, title="x")])


@pytest.mark.parametrize(
    "insight",
    [
        "Fine <!-- impact-begin kind=p_item low=1 mid=2 high=3 -->",
        "line one\n| a | b |",
        "text\n### P9: sneaky",
        "**Impact**: impact_score: 99",
        "   ",
    ],
)
def test_prose_cannot_carry_structure_or_be_empty(insight):
    with pytest.raises(ValidationError):
        PItemProse(rank=1, insight=insight)


def test_a_merge_and_a_drop_are_kept_on_the_cards_with_their_reasons(tmp_path):
    draft = gemm_draft()
    merged = submit(draft, "gemm", [], merge=[MergeItems(items=[2], into=1, reason="Same MLP.")])
    one, two = merged.cards
    assert one.field(MERGES) == f"{draft.cards[1].title} -- Same MLP."
    assert two.field(MERGED_INTO) == f"{draft.cards[0].title} -- Same MLP."
    assert [c.impact for c in merged.cards] == [c.impact for c in draft.cards]  # numbers stay
    dropped = submit(draft, "gemm", [], drop=[DropItem(item=2, reason="A [warm-up] artefact.")])
    assert dropped.cards[1].field(SET_ASIDE) == "A \\[warm-up\\] artefact."
    assert validate_findings(render_findings(dropped), "compute", metrics=GEMM) == []
    path = RunFolder(tmp_path).write_findings("gemm", dropped)
    assert RunFolder(tmp_path).read_findings("gemm") == dropped  # kept in the findings file
    assert f"**{SET_ASIDE}**: A" in path.read_text()


@pytest.mark.parametrize(
    ("merge", "drop", "message"),
    [
        ([MergeItems(items=[3], into=1, reason="r")], [], r"rank\(s\) \[3\] are not in"),
        ([], [DropItem(item=9, reason="r")], r"rank\(s\) \[9\] are not in"),
        ([MergeItems(items=[2], into=1, reason="r")], [DropItem(item=2, reason="r")], "more than"),
        ([MergeItems(items=[2], into=1, reason="r")], [DropItem(item=1, reason="r")], "more than"),
        ([MergeItems(items=[1, 2], into=1, reason="r")], [], "only the other items"),
        ([], [DropItem(item=1, reason="r"), DropItem(item=2, reason="r")], "at least one"),
    ],
)
def test_a_merge_or_drop_that_does_not_fit_the_draft_is_refused(merge, drop, message):
    with pytest.raises(SubmissionError, match=message):
        submit(gemm_draft(), "gemm", [], merge=merge, drop=drop)


def test_a_reason_is_required_and_plain():
    for reason in ("", "   ", "why\n## Heading"):
        with pytest.raises(ValidationError):
            DropItem(item=1, reason=reason)
        with pytest.raises(ValidationError):
            MergeItems(items=[2], into=1, reason=reason)
    with pytest.raises(SubmissionError, match="not items, merges or drops"):
        submit(
            gemm_draft(), "gemm", [], status="error", note="x", drop=[DropItem(item=1, reason="r")]
        )
