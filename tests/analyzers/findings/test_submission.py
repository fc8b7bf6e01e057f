"""Structured submission: the analyst's prose goes in, the draft's numbers stay."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rooflens.analyzers.findings.contract import parse_findings, render_findings
from rooflens.analyzers.findings.drafts import draft_findings
from rooflens.analyzers.findings.submission import (
    PItemProse,
    SubmissionError,
    apply_submission,
    submit_structured,
)
from rooflens.analyzers.findings.validate import validate_findings
from tests.analyzers.findings.test_drafts import GEMM, run_with

PROSE = PItemProse(
    rank=1,
    title="GEMMs under half of the bf16 roof",
    insight="The two projection GEMMs reach 35-42 % of the matrix roof.",
    action="Tune hipBLASLt for M=8944 or pad N to a multiple of 256.",
    identification="aten::mm and aten::addmm in the MLP projections.",
    reasoning="Small N tiles leave matrix units idle.",
    resolution="Try the tuned solution index for these shapes.",
)


def test_prose_replaces_the_draft_text_and_keeps_every_number(tmp_path):
    run = run_with(tmp_path, "gemm", GEMM)
    draft = draft_findings(run, "gemm")
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


def test_submit_structured_writes_the_validated_file(tmp_path):
    run = run_with(tmp_path, "gemm", GEMM)
    path = submit_structured(run, "gemm", [PROSE])
    assert path == run / "category_findings/gemm_findings.md"
    assert PROSE.action in path.read_text()


def test_an_unknown_rank_is_refused_naming_the_ranks_that_exist(tmp_path):
    draft = draft_findings(run_with(tmp_path, "gemm", GEMM), "gemm")
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
