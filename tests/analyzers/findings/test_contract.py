"""Round-trip tests for the findings markdown model."""

from pathlib import Path

import pytest

from rooflens.analyzers.findings.contract.contract import (
    Findings,
    Marker,
    PItem,
    Status,
    Tier,
    no_findings,
    parse_findings,
    render_findings,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "findings"
CANONICAL = ["compute.md", "system.md", "fusion.md"]
EMPTY = ["empty_compute.md", "empty_system.md", "empty_fusion.md", "error_plain.md"]


@pytest.mark.parametrize("name", CANONICAL + EMPTY)
def test_render_of_parse_is_identity(name):
    text = (DATA / name).read_text(encoding="utf-8")
    assert render_findings(parse_findings(text)) == text


@pytest.mark.parametrize("name", CANONICAL + EMPTY)
def test_parse_of_render_is_identity(name):
    model = parse_findings((DATA / name).read_text(encoding="utf-8"))
    assert parse_findings(render_findings(model), model.tier) == model


def test_compute_structure():
    f = parse_findings((DATA / "compute.md").read_text(encoding="utf-8"))
    assert f.tier == Tier.COMPUTE and f.status == Status.SUCCESS
    (card,) = f.cards
    assert (card.number, card.title, card.library) == (
        1,
        "Tune the projection GEMMs",
        "vendor GEMM library",
    )
    assert card.field("Action").startswith("Try a tuned")
    assert card.impact == Marker("p_item", (("low", "1.2"), ("mid", "2.5"), ("high", "3.1")))
    assert card.impact_text == "impact_score: 2.5"
    (block,) = f.details
    assert (block.tier, block.rank) == ("compute", 1)
    assert [s.label for s in block.sections] == [
        "Identification", "Data", "Reasoning for Slowdown", "Resolution", "Impact estimate",
    ]  # fmt: skip
    (table,) = block.section("Data").tables
    assert table.header[:2] == ("Operation", "Args") and table.rows[0][1] == "`M=4096`<br>`N=4096`"
    assert block.section("Impact estimate").marker.attr("high") == "3.1"


def test_system_and_fusion_structure():
    s = parse_findings((DATA / "system.md").read_text(encoding="utf-8"))
    assert s.tier == Tier.SYSTEM and s.cards[0].suffix is None
    assert s.cards[0].impact.attr("mid") == "null"
    f = parse_findings((DATA / "fusion.md").read_text(encoding="utf-8"))
    card = f.cards[0]
    assert f.tier == Tier.FUSION and card.icon == "🔴" and card.suffix == "3.20 ms, 96 instances"
    assert card.field("Confidence").startswith("High")
    assert f.epilogue.startswith("## Impact Summary")


@pytest.mark.parametrize("tier", list(Tier))
def test_no_findings_builder_round_trips(tier):
    model = no_findings(tier, "Analysis", "No kernel fusion opportunities detected.")
    text = render_findings(model)
    assert model.status == Status.NO_FINDINGS and model.nothing_to_report
    assert parse_findings(text, tier) == model
    assert render_findings(parse_findings(text, tier)) == text


@pytest.mark.parametrize("line", ["Status: ERROR", "**Status**: ERROR", "**Status:** ERROR"])
def test_status_plain_and_bold(line):
    f = Findings(tier=Tier.COMPUTE, preamble=f"# T\n\n{line}")
    assert f.status == Status.ERROR


def test_model_built_in_code_round_trips():
    card = PItem(
        2,
        "Fuse",
        "Triton",
        None,
        (("Insight", "a"), ("Action", "b")),
        Marker("p_item", (("low", "1"), ("mid", "2"), ("high", "3"))),
        "impact_score: 2.0",
    )
    model = Findings(tier=Tier.COMPUTE, preamble="# X", cards=(card,))
    assert parse_findings(render_findings(model), Tier.COMPUTE) == model


def test_missing_sections_raise():
    with pytest.raises(ValueError):
        parse_findings("# nothing here\n")
