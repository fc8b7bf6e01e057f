"""The truth corpus's checks (tests/helpers/truth.py) on every shared trace, GPU-only MI210,
B200 vLLM and the graph-capture traces included: `rooflens analyze` runs, `rooflens validate`
passes on the folder it wrote, the compute categories add up to the computation time within
2 %, no share passes 100 % and no estimate comes from a row without a usable roofline."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from rooflens.server.cli import main
from tests.helpers.golden import require_shared, shared_traces, trace_id, when_shared
from tests.helpers.truth import (
    RunView,
    cap_problems,
    category_time_problem,
    estimate_problems,
    share_problems,
)

FALLBACK_PLATFORM = "A100"  # for a GPU the catalogue does not know (the DLRM job's V100s)


def cli(*args: str) -> tuple[int, str]:
    """Exit code and everything the CLI printed."""
    printed = io.StringIO()
    with redirect_stdout(printed), redirect_stderr(printed):
        code = main(list(args))
    return code, printed.getvalue()


@pytest.fixture(scope="module", params=when_shared(shared_traces()), ids=trace_id)
def run(request, tmp_path_factory) -> Path:
    """The run folder `rooflens analyze` wrote for one shared trace (one run per trace)."""
    require_shared()
    out = tmp_path_factory.mktemp("truth") / "run"
    code, printed = cli("analyze", str(request.param), "--out", str(out))
    if code == 2 and "--platform" in printed and not out.exists():
        code, printed = cli("analyze", str(request.param), "--out", str(out),
                            "--platform", FALLBACK_PLATFORM)  # fmt: skip
    assert code == 0, printed
    return out


def test_validate_passes(run: Path) -> None:
    code, printed = cli("validate", str(run))
    assert code == 0, printed


def test_categories_add_up_to_the_computation_time(run: Path) -> None:
    assert category_time_problem(RunView.read(run)) is None


def test_no_share_passes_100_percent(run: Path) -> None:
    assert share_problems(RunView.read(run)) == []


def test_no_estimate_from_a_row_without_a_roofline(run: Path) -> None:
    assert estimate_problems(RunView.read(run)) == []


def test_no_item_is_capped_by_more_than_its_pool_holds(run: Path) -> None:
    assert cap_problems(RunView.read(run)) == []
