"""The truth corpus's checks (tests/helpers/truth.py) on every shared trace, GPU-only MI210,
B200 vLLM and the graph-capture traces included: `rooflens analyze` runs every listed
analysis, `rooflens validate` passes on the folder it wrote, the compute categories add up
to the computation time within 2 %, no share passes 100 % and no estimate comes from a row
without a usable roofline."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from rooflens.analyzers.categories.scoring import ANOMALY_PCT
from rooflens.cli.main import main
from tests.helpers.golden import require_shared, shared_traces, trace_id, when_shared
from tests.helpers.truth import (
    RunView,
    cap_problems,
    category_time_problem,
    estimate_problems,
    share_problems,
)

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared


def cli(*args: str) -> tuple[int, str]:
    """Exit code and everything the CLI printed."""
    printed = io.StringIO()
    with redirect_stdout(printed), redirect_stderr(printed):
        code = main(list(args))
    return code, printed.getvalue()


@pytest.fixture(scope="module", params=when_shared(shared_traces()), ids=trace_id)
def run(request, tmp_path_factory) -> Path:
    """The run folder `rooflens analyze` wrote for one shared trace (one run per trace, the
    platform chosen from the trace as a user would get it)."""
    require_shared()
    out = tmp_path_factory.mktemp("truth") / "run"
    code, printed = cli("analyze", str(request.param), "--out", str(out))
    assert code == 0, printed
    return out


def test_every_listed_analysis_ran(run: Path) -> None:
    manifest = json.loads((run / "category_data/category_manifest.json").read_text())
    for entry in manifest["categories"]:
        metrics = json.loads((run / "category_data" / f"{entry['name']}_metrics.json").read_text())
        assert metrics.get("status", "OK") in {"OK", "SUCCESS", "NO_DATA"}, (entry["name"], metrics)


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


def _read(out: Path, name: str) -> dict[str, Any]:
    return json.loads((out / name).read_text(encoding="utf-8"))


def _usable(op: dict[str, Any]) -> bool:
    eff = op.get("efficiency") or {}
    pct = eff.get("efficiency_percent")
    return (
        pct is not None
        and pct <= ANOMALY_PCT
        and not eff.get("is_anomaly")
        and not op.get("unmodelled_reason")
    )


def _member_ops(metrics: dict[str, Any], member: dict[str, Any]) -> list[dict[str, Any]]:
    """The operations a finding member estimates: same name and kernel time."""
    return [
        op
        for op in metrics.get("operations") or ()
        if op["name"] == member["operation"] and abs(op["time_ms"] - member["time_ms"]) < 1e-6
    ]


def test_no_saving_from_an_unmodelled_or_anomalous_row(run: Path) -> None:
    """Every item with a saving comes from usable rows; the rest are unquantified items that
    say why, ranked last, in no total (docs/analysis.md#unquantified-items)."""
    out = run
    items = _read(out, "priority_data.json")["priorities"]
    quantified = [i for i in items if i["saving"] is not None]
    assert items[: len(quantified)] == quantified  # unquantified items rank last
    for item in items:
        if item["saving"] is None:
            assert item["estimate_method"] == "unquantified" and item["unquantified_reason"]
            assert item["percent_mid"] is None
            continue
        assert item["estimate_method"] == "quantified"
        if item["kind"] != "compute":
            continue
        metrics = _read(out, f"category_data/{item['category']}_metrics.json")
        finding = next(f for f in metrics["category_findings"] if f["rank"] == item["source_rank"])
        assert finding["estimate_method"] == "quantified", item["title"]
        for member in finding["members"]:
            assert member["efficiency_pct"] is not None
            assert member["efficiency_pct"] <= ANOMALY_PCT, item["title"]
            ops = _member_ops(metrics, member)
            assert ops and any(_usable(op) for op in ops), (item["title"], member["operation"])
    totals = _read(out, "priority_data.json")["saving_totals"]
    saved = sum(i["saving"]["mid_ms"] for i in quantified)
    assert totals["mid_ms"] <= saved + 1e-3  # the totals add only quantified items
