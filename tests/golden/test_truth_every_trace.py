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


# Kernel-fusion candidates whose time is the first instance's kernel time times the number of
# instances (prepare/fusion.py narrow_attention, categories/kernel_fusion.py estimate): when
# the instances differ in shape, that is more than the kernels ran, even more than the
# computation time. Known, not yet fixed; each entry says by how much.
OVER_CAPPED: dict[str, str] = {
    "traces/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz": (
        "Fuse Owlv2Attention: 180 instances x the first instance's 4.09 ms = 735.9 ms, "
        "the computation time is 552.2 ms"
    ),
    "traces/mi300/google_owlv2-large-patch14-ensemble__1016001.json.gz": (
        "Fuse Owlv2Attention: 180 instances x the first instance's kernel time = "
        "370.5 ms, the computation time is 327.4 ms"
    ),
}


def test_no_item_is_capped_by_more_than_its_pool_holds(run: Path, request) -> None:
    reason = OVER_CAPPED.get(trace_id(request.node.callspec.params["run"]))
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    assert cap_problems(RunView.read(run)) == []
