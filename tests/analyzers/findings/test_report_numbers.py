"""One set of numbers per run (docs/analysis.md#the-report), on the generator's host-bound
trace (analyzers/synthetic/host.py, HostBoundPlan; figures worked out in
tests/analyzers/findings/test_report_host_bound.py): five 10 ms steps whose data loader holds
the host, so P1 is the idle GPU.

* `priority_data.json`'s `priorities` is the report's ranking: P1 the data-loader idle item;
  TraceLens's compute-only rank (`other` first) is under `tracelens_compute`.
* One idle figure: the window's idle is 34.075 ms, P1 prices the loader's 32.588 ms of it in
  the steady-state iterations; the summary says so (R7).
* Top Operations against the workbook: `other` holds 36 calls of 45 µs per step, 180 calls
  and 8.1 ms of computation; the workbook's `ops_summary_by_category` also counts each step's
  30 µs copy there (185 calls, 8.25 ms), and the note under the table says so (R8).
* The rank column says what it orders by (R9).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.findings.validation.analysis_checks import (
    validate_report,
    validate_report_text,
)
from rooflens.analyzers.findings.validation.run_checks import validate_run
from rooflens.analyzers.synthetic.host import write_host_bound_trace
from rooflens.cli.main import main

pytestmark = pytest.mark.slow  # whole analyses, in the tests or their module fixtures

IDLE = (
    "- **GPU idle**: 34.08 ms (79.16 %); P1 counts 32.59 ms of it: input pipeline "
    "(DataLoader), in the steady-state iterations."
)
WORKBOOK = "There: `other` 185 ops, 8.250 ms (here 180 ops, 8.100 ms)."


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("numbers")
    trace = write_host_bound_trace(folder / "host_bound.json.gz")
    out = folder / "run"
    assert main(["analyze", str(trace), "--out", str(out), "--platform", "H100_SXM"]) == 0
    return out


def _report(run: Path) -> str:
    return (run / layout.REPORT).read_text(encoding="utf-8")


def _rules(text: str, run: Path) -> list[str]:
    return [p.rule for p in validate_report_text(text, run)]


def test_priorities_is_the_ranking_the_report_shows(run: Path) -> None:
    data = json.loads((run / layout.PRIORITIES).read_text(encoding="utf-8"))
    p1 = data["priorities"][0]
    assert (p1["p_number"], p1["category"], p1["kind"]) == (1, "cpu_idle", "system")
    assert p1["title"].startswith("The GPU sat idle waiting for the next batch")
    assert "| P1 | system | The GPU sat idle waiting for the next batch" in _report(run)
    compute = data["tracelens_compute"]
    assert [r["category"] for r in compute["priorities"]] == ["other", "multi_tensor_apply"]
    assert not {"items", "findings", "recommendations", "all_estimates"} & set(data)
    assert validate_run(run).priority_check.status == "PASS"


def test_one_idle_figure(run: Path) -> None:
    report = _report(run)
    assert IDLE in report
    assert validate_report(run) == []
    bare = report.replace(IDLE, "- **GPU idle**: 34.08 ms (79.16 %).")
    (problem,) = validate_report_text(bare, run)
    assert problem.rule == "R7" and "P1 counts 32.59 ms of it" in problem.message


def test_top_operations_agree_with_the_workbook_or_say_why(run: Path) -> None:
    report = _report(run)
    rows = (run / layout.PERF_CSVS / "ops_summary_by_category.csv").read_text().splitlines()
    assert any(r.startswith("other,185,8.25") for r in rows)
    assert WORKBOOK in report
    assert "| 1 | `other` | 8.1 | 91.8% | 180 | 2 |" in report
    assert _rules(report.replace(WORKBOOK, "There: nothing."), run) == ["R8"]


def test_the_rank_column_names_its_order(run: Path) -> None:
    report = _report(run)
    head = "| Rank (by estimated saving) | Category | Time (ms) |"
    assert head in report
    assert "Rank orders the categories by their findings' summed estimated saving" in report
    assert _rules(report.replace(head, "| Rank | Category | Time (ms) |"), run) == ["R9"]
