"""The comparative run record on a generated pair with one planted difference (trace 2 runs
the forward GELU on another kernel in half the time): what `load_comparison` holds, what the
run folder writes for it, and a second trace that cannot be compared."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.compare.compare_columns import COMPARISON_COLUMNS, DELTA, SPEEDUP
from rooflens.analyzers.compare.comparison import Comparison, load_comparison
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.pipeline.steps import LOADED, NotAnalysable, Pipeline, RunResults
from rooflens.analyzers.prepare.categories import gpu_utilization
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.synthetic.sample import GELU
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from tests.helpers.compare_pairs import FAST_GELU, planted_pair
from tests.helpers.sample_traces import write_variant


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Comparison, list[float], Path]:
    one, two, gelu = planted_pair(tmp_path_factory.mktemp("pair"))
    model1 = build_model(load_trace(one))
    report1 = build_report(model1, get_platform("MI300X"))
    return load_comparison(model1, report1, two, platform="H100"), gelu, two


def test_trace2_on_its_own_platform(pair) -> None:
    comparison, _, two = pair
    assert comparison.trace_path == str(two)
    assert (
        comparison.platform is not None and comparison.platform.name == "H100_SXM"
    )  # the alias resolved
    assert comparison.platform_source == "platform H100"
    summary = comparison.report.sheets["unified_perf_summary"]
    assert FAST_GELU in "".join(summary["kernel_details_summary"].astype(str))


def test_planted_difference_in_every_part(pair) -> None:
    comparison, gelu, _ = pair
    stats = comparison.diff_stats
    by_side = stats.groupby("source")["kernel_time"].sum()
    assert by_side["trace1"] == pytest.approx(sum(gelu))
    assert by_side["trace2"] == pytest.approx(sum(gelu) / 2)
    assert set(stats["name"]) == {GELU, FAST_GELU}
    table = comparison.trace1_sheets["unified_perf_summary"]
    rows = table[table["lca_name"].notna()]
    assert set(rows["name"]) == {"aten::gelu"}
    assert rows[SPEEDUP].tolist() == pytest.approx([0.5] * len(rows))
    assert rows[DELTA].sum() == pytest.approx(-sum(gelu) / 2)
    top = comparison.what_changed.top
    assert top is not None and top.operator == "aten::gelu"
    assert top.delta_us == pytest.approx(-sum(gelu) / 2)


def test_run_folder_writes_the_comparative_layout(pair, tmp_path: Path) -> None:
    comparison, _, _ = pair
    written = RunFolder(tmp_path).write_comparison(comparison)
    names = {p.relative_to(tmp_path).as_posix() for p in written}
    assert layout.DIFF_STATS in names
    assert f"{layout.TRACE1_CSVS}/unified_perf_summary.csv" in names
    assert {f"{layout.TRACE2_CSVS}/{s}.csv" for s in comparison.report.sheets} <= names
    unified = pd.read_csv(tmp_path / layout.TRACE1_CSVS / "unified_perf_summary.csv")
    assert set(COMPARISON_COLUMNS) <= set(unified.columns)
    assert len(pd.read_csv(tmp_path / layout.DIFF_STATS)) == len(comparison.diff_stats)
    figures = json.loads((tmp_path / layout.TRACE2_UTILIZATION).read_text())
    assert figures == gpu_utilization(comparison.report.sheets["gpu_timeline"])
    assert figures["total_time_ms"] > 0


def test_unreadable_trace2_is_named(pair, tmp_path: Path) -> None:
    comparison, _, _ = pair
    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    model1, report1 = comparison.diff.tree1.model, build_report(comparison.diff.tree1.model, None)
    with pytest.raises(TraceError, match=r"broken\.json: trace 2: "):
        load_comparison(model1, report1, bad)
    no_gpu = write_variant(tmp_path / "cpu_only.json.gz", _without_gpu)
    with pytest.raises(TraceError, match="trace 2 holds no GPU events"):
        load_comparison(model1, report1, no_gpu)


def _without_gpu(document: dict) -> None:
    document["traceEvents"] = [
        e
        for e in document["traceEvents"]
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset")
    ]


def test_restored_comparative_run_without_trace_2_is_refused(pair, tmp_path: Path) -> None:
    """A comparative run restored without its Comparison must not be recomputed standalone."""
    comparison, _, _ = pair
    model1 = comparison.diff.tree1.model
    report1 = build_report(model1, get_platform("MI300X"))
    done: list[str] = [LOADED]
    results = RunResults(model1, report1, None, "t1", str(tmp_path), comparison=comparison)
    folder = RunFolder(tmp_path)
    Pipeline(
        results, folder, done=done.__contains__, mark=lambda *steps: done.extend(steps)
    ).prepare()
    assert read_json(tmp_path / layout.MANIFEST)["comparison_scope"] == "comparative"
    restored = RunResults(model1, report1, None, "t1", str(tmp_path))  # trace 2 not loaded
    steps = Pipeline(
        restored,
        folder,
        done=done.__contains__,
        mark=lambda *steps: done.extend(steps),
        label="run x",
    )
    with pytest.raises(NotAnalysable, match="run x compares two traces, and trace 2 is not"):
        steps.category_data()


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))
