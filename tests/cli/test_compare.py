"""`rooflens compare` end to end on a generated pair with one planted difference: trace 2 runs
the forward GELU on another kernel in half the time (tests/helpers/compare_pairs.py). The
run folder, the comparative scores read back against hand-computed values, the report
validating, and the second trace's bad inputs refused with exit 2 before anything is written."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.compare.compare_columns import COMPARISON_COLUMNS
from rooflens.analyzers.compare.comparison import SAME_TRACE
from rooflens.cli.main import main
from tests.helpers.capture_traces import write_case
from tests.helpers.compare_pairs import planted_pair
from tests.helpers.sample_traces import write_variant
from tests.helpers.trace_builder import TraceBuilder

pytestmark = pytest.mark.slow  # whole analyses, in the tests or their module fixtures


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[float], Path]:
    """The whole comparative run, to the report."""
    folder = tmp_path_factory.mktemp("compare")
    one, two, gelu = planted_pair(folder)
    out = folder / "run"
    argv = ["compare", str(one), str(two), "--platform", "MI300X", "--platform2", "H100"]
    assert main([*argv, "--out", str(out)]) == 0
    return out, gelu, two


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def header(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as f:
        return next(csv.reader(f))


def test_json_outcome_names_both_traces(tmp_path: Path, capsys) -> None:
    one, two, _ = planted_pair(tmp_path)
    out = tmp_path / "run"
    argv = ["compare", str(one), str(two), "--platform2", "H100", "--until", "prepared"]
    assert main([*argv, "--out", str(out), "--json"]) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["command"] == "compare"
    assert outcome["steps"] == ["loaded", "prepared"]
    other = outcome["compare_with"]
    assert other["trace"] == str(two.absolute())
    assert other["trace_sha256"] == hashlib.sha256(two.read_bytes()).hexdigest()
    assert other["platform"] == "H100_SXM"
    assert other["platform_source"] == "platform H100"
    assert other["what_changed"].startswith("`aten::gelu` is faster in trace 2")
    assert read(out / layout.MANIFEST)["comparison_scope"] == "comparative"
    assert other["warnings"] == []  # two different traces


def test_a_trace_compared_with_itself_is_warned_about(tmp_path: Path, capsys) -> None:
    """The same file twice (a slip more often than a plan): the run goes on, every difference
    is zero, and the summary, the JSON outcome and the report's trace-2 health say why."""
    one, _, _ = planted_pair(tmp_path)
    copy = tmp_path / "copy.json.gz"
    copy.write_bytes(one.read_bytes())
    out = tmp_path / "run"
    assert main(["compare", str(one), str(one), "--until", "prepared", "--out", str(out)]) == 0
    assert f"Warning: {SAME_TRACE.message}" in capsys.readouterr().out
    argv = ["compare", str(one), str(copy), "--out", str(tmp_path / "copy_run"), "--json"]
    assert main(argv) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["compare_with"]["warnings"] == [SAME_TRACE.message]
    report = (tmp_path / "copy_run" / layout.REPORT).read_text(encoding="utf-8")
    assert "`same_as_trace1`" in report and "Trace 2: Trace 2 records exactly" in report


def test_run_folder_holds_both_traces_and_the_diff(run) -> None:
    out, gelu, two = run
    assert (out / layout.PERF_CSVS / "unified_perf_summary.csv").is_file()  # trace 1 alone
    assert not set(COMPARISON_COLUMNS) & set(header(out / layout.table_csv("unified_perf_summary")))
    comparative = header(out / layout.TRACE1_CSVS / "unified_perf_summary.csv")
    assert set(COMPARISON_COLUMNS) <= set(comparative)
    assert (out / layout.TRACE2_CSVS / "unified_perf_summary.csv").is_file()
    with (out / layout.DIFF_STATS).open(newline="", encoding="utf-8") as f:
        stats = list(csv.DictReader(f))
    assert len(stats) == 2 * len(gelu)  # each forward GELU, once per trace
    record = read(out / "run.json")["compare_with"]
    assert record["trace"]["sha256"] == hashlib.sha256(two.read_bytes()).hexdigest()
    assert record["platform"] == "H100_SXM"
    utilization = read(out / layout.TRACE2_UTILIZATION)
    assert read(out / layout.MANIFEST)["trace2_gpu_utilization"] == utilization


def test_gelu_scored_against_trace_2(run) -> None:
    out, gelu, _ = run
    metrics = read(out / layout.metrics("elementwise"))
    assert metrics["comparison_scope"] == "comparative"
    (op,) = [o for o in metrics["operations"] if o["name"] == "aten::gelu"]
    assert op["efficiency"]["efficiency_percent"] == 50.0  # trace 2 takes half the time
    assert op["t2_time_ms"] == round(sum(gelu) / 2 / 1000, 3)
    assert op["difference_ms"] == round(-sum(gelu) / 2 / 1000, 3)
    assert op["count_trace2"] == len(gelu)  # one shared aten::gelu per layer
    baseline = read(out / layout.MANIFEST)["gpu_utilization"]["total_time_ms"]
    (estimate,) = [e for e in metrics["impact_estimates"] if e["operation"] == "aten::gelu"]
    share = op["time_ms"] / baseline * 100
    assert estimate["impact_score_high"] == round(0.5 * share, 2)
    assert estimate["impact_score"] == round(0.5 * 0.875 * share, 2)
    assert all(f["eff_bucket"] == "all" for f in metrics["category_findings"])
    # every other elementwise row ran the same kernels in both traces: nothing to set against
    others = [o for o in metrics["operations"] if o["name"] != "aten::gelu"]
    assert others and all(o["efficiency"]["efficiency_percent"] is None for o in others)


def test_report_validates(run, capsys) -> None:
    out, _, _ = run
    assert (out / layout.REPORT).is_file()
    assert main(["validate", str(out)]) == 0, capsys.readouterr().out


def test_unreadable_trace_2_is_refused_before_writing(tmp_path: Path, capsys) -> None:
    one, _, _ = planted_pair(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = tmp_path / "run"
    assert main(["compare", str(one), str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rooflens: {bad}: trace 2: invalid JSON")
    assert "Traceback" not in err and not out.exists()
    missing = tmp_path / "missing.json"
    assert main(["compare", str(one), str(missing), "--out", str(out)]) == 2
    assert "trace 2: file not found" in capsys.readouterr().err and not out.exists()


def test_trace_2_without_gpu_work_is_refused(tmp_path: Path, capsys) -> None:
    one, _, _ = planted_pair(tmp_path)

    def no_gpu(document: dict) -> None:
        document["traceEvents"] = [
            e for e in document["traceEvents"] if e.get("cat") not in ("kernel", "gpu_memcpy")
        ]

    two = write_variant(tmp_path / "cpu_only.json.gz", no_gpu)
    assert main(["compare", str(one), str(two), "--out", str(tmp_path / "run")]) == 2
    assert "trace 2 holds no GPU events" in capsys.readouterr().err


def test_bad_second_platform_and_capture_arguments(tmp_path: Path, capsys) -> None:
    one, two, _ = planted_pair(tmp_path)
    out = str(tmp_path / "run")
    assert main(["compare", str(one), str(two), "--platform2", "NOPE", "--out", out]) == 2
    assert "rooflens: trace 2's platform: unknown platform 'NOPE'" in capsys.readouterr().err
    argv = ["compare", str(one), str(two), "--no-captures", "--capture-folder2", str(tmp_path)]
    assert main([*argv, "--out", out]) == 2
    assert "--no-captures cannot be combined" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:  # argparse: one platform name or file, not both
        main(["compare", str(one), str(two), "--platform2", "H100", "--platform2-file", "x"])
    assert exited.value.code == 2
    assert not (tmp_path / "run").exists()


def test_standalone_run_json_has_no_comparison(tmp_path: Path) -> None:
    one, _, _ = planted_pair(tmp_path)
    out = tmp_path / "run"
    assert main(["report", str(one), "--platform", "MI300X", "--out", str(out)]) == 0
    assert "compare_with" not in read(out / "run.json")
    assert not (out / layout.TRACE1_CSVS).exists()


def test_trace_2_graph_captures_from_their_own_folder(tmp_path: Path) -> None:
    """Trace 2 is a graph replay whose capture traces are elsewhere: --capture-folder2 grafts
    their operators onto its replayed kernels, as --capture-folder does for trace 1."""
    for side in ("one", "two"):
        (tmp_path / side).mkdir()
    one = write_case(TraceBuilder(tmp_path / "one"), iterations=2)  # captures beside it
    two = write_case(TraceBuilder(tmp_path / "two"), iterations=2)
    captures2 = tmp_path / "captures2"
    (tmp_path / "two" / "capture_traces").rename(captures2)

    def operators(out: Path, folder: str) -> set[str]:
        with (out / folder / "unified_perf_summary.csv").open(newline="") as f:
            return {row["name"] for row in csv.DictReader(f)}

    base = ["compare", str(one), str(two), "--platform", "MI300X", "--platform2", "MI300X"]
    grafted, bare = tmp_path / "grafted", tmp_path / "bare"
    argv = [*base, "--capture-folder2", str(captures2), "--until", "prepared"]
    assert main([*argv, "--out", str(grafted)]) == 0
    assert {"aten::mm", "aten::gelu"} <= operators(grafted, layout.TRACE2_CSVS)
    assert {"aten::mm", "aten::gelu"} <= operators(grafted, layout.PERF_CSVS)
    assert read(grafted / "run.json")["compare_with"]["captures"] == str(captures2)
    assert main([*base, "--until", "prepared", "--out", str(bare)]) == 0
    assert "aten::mm" not in operators(bare, layout.TRACE2_CSVS)  # nothing beside trace 2
