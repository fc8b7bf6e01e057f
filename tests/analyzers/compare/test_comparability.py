"""The comparability check on a generated pair that is not like for like
(analyzers/synthetic/unlike_pair.py): a 2-rank compiled job against an 8-rank eager one."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.compare.comparability import COSTS, comparability
from rooflens.analyzers.compare.comparison import load_comparison
from rooflens.analyzers.compare.what_changed_md import headline
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.synthetic.unlike_pair import UnlikePlan, write_unlike_pair
from rooflens.cli.main import main


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    return write_unlike_pair(tmp_path_factory.mktemp("unlike"))


def test_job_size_and_mode_are_said_and_cost_the_score(pair) -> None:
    one, two = (read_trace(p)[0] for p in pair)
    alike = comparability(one, two)
    assert (alike.trace1.world_size, alike.trace2.world_size) == (2, 8)
    assert (alike.trace1.mode, alike.trace2.mode) == ("compiled", "eager")
    assert alike.score == 100 - COSTS["world"] - COSTS["mode"]
    assert alike.reasons[0].startswith("trace 1 is a 2-rank job (rank 0), trace 2 an 8-rank job")
    assert "trace 1 ran compiled, trace 2 eager" in alike.reasons[1]
    assert comparability(one, one).score == 100 and comparability(one, one).reasons == []


def test_the_headline_comes_from_compute_not_the_collectives(pair) -> None:
    """The all-reduce changes most (200 -> 900 µs a layer), but between jobs of 2 and 8
    ranks that is expected: the headline is the add (100 -> 160 µs a layer)."""
    one, two = pair
    model1 = read_trace(one)[0]
    report1 = build_report(model1, get_platform("H100"))
    found = load_comparison(model1, report1, two, platform="H100")
    changed = found.what_changed
    assert changed.regressions[0].operator == "c10d::allreduce_"  # still listed in the table
    assert changed.top is not None and changed.top.operator == "aten::add"
    assert headline(changed).startswith("`aten::add` is slower in trace 2")
    plan = UnlikePlan()
    assert changed.top.delta_us == pytest.approx(plan.layers * (plan.add2_us - plan.add1_us))


def test_the_summary_says_it_first(pair, tmp_path: Path, capsys) -> None:
    one, two = pair
    assert (
        main(["compare", str(one), str(two), "--out", str(tmp_path / "r"), "--until", "prepared"])
        == 0
    )
    text = capsys.readouterr().out
    assert "Comparability 50/100: trace 1 is a 2-rank job (rank 0), trace 2 an 8-rank job" in text
