"""Category keys, skills, time breakdown, GPU utilisation and category export on small tables."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from rooflens.analyzers.perf.platforms import Platform
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.prepare.categories import (
    GENERIC_SKILL,
    SKILLS,
    gpu_utilization,
    normalise_category,
    skill_for,
    time_breakdown,
)
from rooflens.analyzers.prepare.category_data import prepare
from rooflens.analyzers.prepare.manifest import CategoryTables, Manifest, categorise
from rooflens.analyzers.report.build import PerfReport
from rooflens.analyzers.trace.timeline import GpuTimeline, Timeline
from tests.helpers.pipeline_runs import sample_results

KT = "Kernel Time (µs)_sum"
DUR = "total_duration_us"


# --- normalisation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("GEMM", ("gemm", "GEMM")),
        ("SDPA_fwd", ("sdpa_fwd", "SDPA_fwd")),
        ("InferenceAttention", ("inferenceattention", "InferenceAttention")),
        ("MoE comm/fwd", ("moe_comm_fwd", "MoE comm/fwd")),
        ("a b/c d", ("a_b_c_d", "a b/c d")),
        ("other", ("other", "other")),
        (float("nan"), ("other", "Other")),
        (None, ("other", "Other")),
        (pd.NA, ("other", "Other")),
        ("", ("other", "Other")),
    ],
)
def test_normalise_category(value, expected) -> None:
    assert normalise_category(value) == expected


# --- skills --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "skill"),
    [
        ("gemm", "gemm-analyzer"),
        ("groupedgemm_bwd", "gemm-analyzer"),
        ("inferenceattention", "sdpa-analyzer"),
        ("sdpa_bwd", "sdpa-analyzer"),
        ("rmsnorm", "norm-analyzer"),
        ("norm", "norm-analyzer"),
        ("conv_bwd", "convolution-analyzer"),
        ("convolution", "convolution-analyzer"),
        ("moe_unfused", "moe-analyzer"),
        ("triton", "triton-analyzer"),
        ("reduce", "reduce-analyzer"),
        ("elementwise", "elementwise-analyzer"),
        ("cpu_idle", "cpu-idle-analyzer"),
        ("multi_kernel", "multi-kernel-analyzer"),
        ("kernel_fusion", "kernel-fusion-analyzer"),
    ],
)
def test_skill_map(key: str, skill: str) -> None:
    assert SKILLS[key] == skill
    assert skill_for(key) == skill


@pytest.mark.parametrize(
    "key", ["other", "multi_tensor_apply", "record_param_comms", "moe_aux", "rope_fwd", "x"]
)
def test_uncatalogued_keys_get_the_generic_skill(key: str) -> None:
    assert skill_for(key) == GENERIC_SKILL == "generic-op-analyzer"


# --- time breakdown ------------------------------------------------------------------------


def rows(kernel_us: list[float], duration_us: list[float] | None = None) -> pd.DataFrame:
    data = {KT: kernel_us}
    if duration_us is not None:
        data[DUR] = duration_us
    return pd.DataFrame(data)


def test_sync_needs_duration_strictly_above_five_times_kernel() -> None:
    exactly = time_breakdown(rows([100.0], [500.0]))
    assert (exactly.sync_ops_count, exactly.sync_time_ms) == (0, 0)
    above = time_breakdown(rows([100.0], [501.0]))
    assert above.sync_ops_count == 1
    assert above.sync_time_ms == 0.401


def test_rows_without_kernel_time_are_never_sync() -> None:
    b = time_breakdown(rows([0.0, float("nan")], [900.0, 900.0]))
    assert (b.sync_ops_count, b.sync_time_ms, b.gpu_kernel_time_ms) == (0, 0, 0.0)
    assert b.cpu_duration_ms == 1.8


def test_synthetic_rows_that_copy_their_op_s_cpu_time_are_not_sync_evidence() -> None:
    names = [
        "vllm::moe_forward->void routingKernel<128> (Synthetic Op)",  # moe_forward's CPU time
        "cuLaunchKernelEx->_copy_page_indices_kernel (Synthetic Op)",  # its own launch time
        "aten::gather",
    ]
    frame = rows([2.0, 2.0, 2.0], [500.0, 36.0, 50.0]).assign(name=names)
    b = time_breakdown(frame)
    assert b.sync_ops_count == 2  # the launch row and aten::gather, each > 5 x 2 µs
    assert b.sync_time_ms == 0.082  # (36 - 2) + (50 - 2) µs
    assert b.cpu_duration_ms == 0.586  # CPU time is still summed over every row


def test_sums_and_rounding() -> None:
    b = time_breakdown(rows([1234.5678, 10.0], [1300.0, 2000.0]))
    assert b.gpu_kernel_time_ms == 1.245  # 1244.5678 µs
    assert b.cpu_duration_ms == 3.3
    assert b.sync_time_ms == 1.99  # only the second row: 2000 - 10
    assert b.sync_ops_count == 1
    # 1.99 > 1 ms and > 10 % of 1.245 ms
    assert b.has_sync_bottleneck is True


def test_no_sync_gives_an_integer_zero_like_tracelens() -> None:
    b = time_breakdown(rows([10.0], [20.0]))
    assert b.sync_time_ms == 0 and isinstance(b.sync_time_ms, int)
    assert json.loads(b.model_dump_json())["sync_time_ms"] == 0


@pytest.mark.parametrize(
    ("kernel_us", "duration_us", "bottleneck"),
    [
        # sync 0.99 ms: above 10 % of kernel time but not above 1 ms
        ([10.0], [1000.0], False),
        # sync 1.0 ms exactly: not above 1 ms
        ([10.0, 100.0], [1010.0, 100.0], False),
        # sync 1.49 ms: > 1 ms and > 1.001 ms (10 % of 10.01 ms) -> flagged
        ([10.0, 10000.0], [1500.0, 10000.0], True),
        # sync 1.49 ms but kernel time 20 ms: 10 % is 2 ms -> not flagged
        ([10.0, 20000.0], [1500.0, 20000.0], False),
    ],
)
def test_bottleneck_thresholds(kernel_us, duration_us, bottleneck) -> None:
    assert time_breakdown(rows(kernel_us, duration_us)).has_sync_bottleneck is bottleneck


def test_duration_falls_back_to_duration_sum_then_to_kernel_time() -> None:
    other = pd.DataFrame({KT: [100.0], "Duration (µs)_sum": [1000.0]})
    assert time_breakdown(other).cpu_duration_ms == 1.0
    assert time_breakdown(other).sync_time_ms == 0.9
    none = time_breakdown(rows([100.0]))
    assert (none.cpu_duration_ms, none.sync_ops_count) == (0.1, 0)


def test_kernel_time_falls_back_to_direct_kernel_ms() -> None:
    b = time_breakdown(pd.DataFrame({"total_direct_kernel_time_ms": [0.5], DUR: [600.0]}))
    assert (b.gpu_kernel_time_ms, b.cpu_duration_ms, b.sync_ops_count) == (0.5, 0.6, 0)


def test_empty_rows() -> None:
    b = time_breakdown(rows([], []))
    assert (b.gpu_kernel_time_ms, b.cpu_duration_ms, b.sync_time_ms) == (0.0, 0.0, 0)
    assert b.has_sync_bottleneck is False


# --- GPU utilisation -----------------------------------------------------------------------


TIMELINE = Timeline(
    computation_time=600.0,
    exposed_comm_time=100.0,
    exposed_memcpy_time=50.0,
    busy_time=750.0,
    idle_time=250.0,
    total_time=1000.0,
    total_comm_time=120.0,
    total_memcpy_time=60.0,
)


def timeline_sheet() -> pd.DataFrame:
    return pd.DataFrame(TIMELINE.rows())


def test_gpu_utilization_from_the_timeline_sheet() -> None:
    assert gpu_utilization(timeline_sheet()) == {
        "total_time_ms": 1.0,
        "computation_time_percent": 60.0,
        "exposed_comm_time_percent": 10.0,
        "exposed_memcpy_time_percent": 5.0,
        "idle_time_percent": 25.0,
    }


def test_gpu_utilization_missing_rows_are_zero() -> None:
    sheet = pd.DataFrame({"type": ["total_time"], "time ms": [2.5], "percent": [100.0]})
    out = gpu_utilization(sheet)
    assert out["total_time_ms"] == 2.5
    assert all(v == 0.0 for k, v in out.items() if k != "total_time_ms")
    assert set(gpu_utilization(None).values()) == {0.0}
    assert set(gpu_utilization(pd.DataFrame()).values()) == {0.0}


# --- export --------------------------------------------------------------------------------


PLATFORM = Platform(
    name="TESTGPU",
    mem_bw_gbps=5300.0,
    memory_gb=192.0,
    peak_tflops={"matrix_bf16": 1000.0, "vector_fp32": 80.0},
    max_achievable_tflops={"matrix_bf16": 700.0},
)


def unified() -> pd.DataFrame:
    # sorted by kernel time, as the report sorts it; keys appear as gemm, other, sdpa_fwd
    return pd.DataFrame(
        {
            "name": ["aten::mm", "custom::op", "aten::addmm", "aten::sdpa", "unknown"],
            "op category": ["GEMM", "other", "GEMM", "SDPA_fwd", None],
            "Input Dims": [[[2, 3], [3, 4]], [], [[4], [2, 3], [3, 4]], [[1, 2]], []],
            KT: [500.0, 300.0, 200.0, 100.0, 50.0],
            DUR: [600.0, 2000.0, 250.0, 150.0, 60.0],
            "kernel_details_summary": [[{"name": "k", "dur": 1.0}], [], [], [], []],
        }
    )


def report(with_unified: bool = True) -> PerfReport:
    sheets = {"gpu_timeline": timeline_sheet()}
    if with_unified:
        sheets["unified_perf_summary"] = unified()
        sheets["ops_summary"] = pd.DataFrame(
            {
                "name": [f"op{i}" for i in range(12)],
                "total_direct_kernel_time_ms": [float(i) for i in range(12)],
                "Categories": [["GEMM"]] * 11 + [["GEMM", "other"]],
            }
        )
    timeline = GpuTimeline(
        pooled=TIMELINE, per_device={0: TIMELINE}, events_used=3, unlinked_excluded=0
    )
    return PerfReport(sheets=sheets, timeline=timeline, unified=None, platform=None)


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def tables(
    output_dir: Path, *, has_multi_kernel: bool = False, fusion_count: int = 0, **kw
) -> CategoryTables:
    return categorise(
        report(**kw),
        PLATFORM,
        "traces/t.json.gz",
        str(output_dir),
        has_multi_kernel=has_multi_kernel,
        fusion_count=fusion_count,
    )


def export(tmp_path: Path, **kw) -> Manifest:
    """Categorise the small report and write the result where the run folder keeps it."""
    found = tables(tmp_path, **kw)
    RunFolder(tmp_path).write_category_tables(found)
    return found.manifest


def test_category_order_and_relative_paths(tmp_path: Path) -> None:
    manifest = export(tmp_path, has_multi_kernel=True, fusion_count=4)
    names = [c.name for c in manifest.categories]
    assert names == ["cpu_idle", "gemm", "other", "sdpa_fwd", "multi_kernel", "kernel_fusion"]
    for entry in manifest.categories:
        for path in (entry.csv_file, entry.metadata_file, entry.data_file):
            if path is not None:
                assert not Path(path).is_absolute()
                assert not path.startswith(str(tmp_path))
    gemm = manifest.categories[1]
    assert gemm.csv_file == "category_data/gemm_ops.csv"
    assert gemm.metadata_file == "metadata/gemm_metadata.json"
    for entry in manifest.categories:
        for path in (entry.csv_file, entry.metadata_file):
            if path is not None:
                assert (tmp_path / path).is_file(), path
    on_disk = read(tmp_path / "category_data/category_manifest.json")
    assert on_disk == manifest.model_dump(mode="json")
    assert list(on_disk) == [
        "platform",
        "trace_path",
        "output_dir",
        "comparison_scope",
        "gpu_utilization",
        "categories",
        "time_metric_note",
        "top_operations",
    ]
    assert on_disk["trace_path"] == "traces/t.json.gz"
    assert on_disk["comparison_scope"] == "standalone"


def test_compute_entries_and_ops_csvs(tmp_path: Path) -> None:
    manifest = export(tmp_path)
    entries = {c.name: c.model_dump(mode="json") for c in manifest.categories}
    assert entries["gemm"] == {
        "name": "gemm",
        "display_name": "GEMM",
        "skill": "gemm-analyzer",
        "tier": "compute_kernel",
        "ops_count": 2,
        "csv_file": "category_data/gemm_ops.csv",
        "metadata_file": "metadata/gemm_metadata.json",
        "tree_data_file": "category_data/gemm_tree_data.json",
        "gpu_kernel_time_ms": 0.7,
        "cpu_duration_ms": 0.85,
        "sync_time_ms": 0,
        "sync_ops_count": 0,
        "has_sync_bottleneck": False,
    }
    # the None category joins `other`; the custom op (2000 > 5 x 300) is sync-bound
    assert entries["other"]["ops_count"] == 2
    assert entries["other"]["display_name"] == "other"
    assert entries["other"]["sync_time_ms"] == 1.7
    assert entries["other"]["has_sync_bottleneck"] is True
    gemm = pd.read_csv(tmp_path / "category_data/gemm_ops.csv")
    assert list(gemm.columns) == [*unified().columns, "enhanced_category", "display_name"]
    assert gemm["name"].tolist() == ["aten::mm", "aten::addmm"]
    assert set(gemm["enhanced_category"]) == {"gemm"}
    assert set(gemm["display_name"]) == {"GEMM"}
    assert json.loads(gemm.loc[0, "Input Dims"]) == [[2, 3], [3, 4]]  # structured cells -> JSON
    other = pd.read_csv(tmp_path / "category_data/other_ops.csv", keep_default_na=False)
    assert other["display_name"].tolist() == ["other", "Other"]
    assert set(other["enhanced_category"]) == {"other"}


def test_system_categories(tmp_path: Path) -> None:
    manifest = export(tmp_path, has_multi_kernel=True, fusion_count=4)
    entries = {c.name: c.model_dump(mode="json") for c in manifest.categories}
    assert entries["cpu_idle"] == {
        "name": "cpu_idle",
        "display_name": "CPU/Idle Analysis",
        "skill": "cpu-idle-analyzer",
        "tier": "system",
        "ops_count": 0,
        "csv_file": "category_data/cpu_idle_ops.csv",
        "metadata_file": "metadata/cpu_idle_metadata.json",
        "priority": 0,
    }
    assert (tmp_path / "category_data/cpu_idle_ops.csv").read_bytes() == b"\n"
    assert entries["multi_kernel"] == {
        "name": "multi_kernel",
        "display_name": "Multi-Kernel Issues",
        "skill": "multi-kernel-analyzer",
        "tier": "system",
        "ops_count": 0,
        "csv_file": None,
        "metadata_file": "metadata/multi_kernel_metadata.json",
        "data_file": "category_data/multi_kernel_data.json",
    }
    assert entries["kernel_fusion"] == {
        "name": "kernel_fusion",
        "display_name": "Kernel Fusion Opportunities",
        "skill": "kernel-fusion-analyzer",
        "tier": "system",
        "ops_count": 4,
        "csv_file": None,
        "metadata_file": None,
        "data_file": "category_data/fusion_candidates.json",
        "gpu_kernel_time_ms": 0.0,
        "cpu_duration_ms": 0.0,
        "sync_time_ms": 0,
        "sync_ops_count": 0,
        "has_sync_bottleneck": False,
    }
    assert read(tmp_path / "metadata/multi_kernel_metadata.json")["tier"] == "system"


def test_system_categories_only_when_asked(tmp_path: Path) -> None:
    manifest = export(tmp_path)
    assert manifest.categories[0].name == "cpu_idle"
    assert {"multi_kernel", "kernel_fusion"}.isdisjoint(c.name for c in manifest.categories)
    assert not (tmp_path / "metadata/multi_kernel_metadata.json").exists()


def test_categorising_writes_nothing(tmp_path: Path) -> None:
    found = tables(tmp_path / "run", has_multi_kernel=True, fusion_count=2)
    assert list(tmp_path.iterdir()) == []
    assert set(found.ops) == {"cpu_idle", "gemm", "other", "sdpa_fwd"}
    assert set(found.metadata) == {"cpu_idle", "gemm", "other", "sdpa_fwd", "multi_kernel"}
    assert set(found.tree_data) == {"gemm", "other", "sdpa_fwd"}
    assert found.ops["gemm"]["Input Dims"].tolist() == [[[2, 3], [3, 4]], [[4], [2, 3], [3, 4]]]
    assert found.manifest.output_dir == str(tmp_path / "run")


def test_prepare_counts_the_fusion_candidates_it_found(tmp_path: Path) -> None:
    """The generated step has an HtoD copy and an all-reduce, and fusion candidates."""
    run = sample_results(tmp_path)
    assert run.platform is not None
    data = prepare(run.model, run.report, run.platform, run.trace_path, run.output_dir)
    entries = {c.name: c for c in data.manifest.categories}
    assert data.fusion_candidates
    assert entries["kernel_fusion"].ops_count == len(data.fusion_candidates)
    assert data.multi_kernel.memcpy_summary.total_count > 0
    assert data.multi_kernel.nccl_summary.total_count > 0
    assert "multi_kernel" in entries
    assert [c.name for c in data.manifest.categories][-2:] == ["multi_kernel", "kernel_fusion"]


def test_metadata_files(tmp_path: Path) -> None:
    export(tmp_path, has_multi_kernel=True)
    gemm = read(tmp_path / "metadata/gemm_metadata.json")
    assert list(gemm) == [
        "platform",
        "peak_hbm_bw_tbs",
        "max_achievable_tflops",
        "memory_gb",
        "trace_path",
        "output_dir",
        "category",
        "category_name",
        "gpu_utilization",
        "trace_loading_policy",
        "time_breakdown",
    ]
    assert gemm["platform"] == "TESTGPU"
    assert gemm["peak_hbm_bw_tbs"] == 5.3
    # the roofline's table: measured where known, else the peak
    assert gemm["max_achievable_tflops"] == {"matrix_bf16": 700.0, "vector_fp32": 80.0}
    assert gemm["memory_gb"] == 192.0
    assert (gemm["category"], gemm["category_name"]) == ("GEMM", "gemm")
    assert gemm["trace_loading_policy"] == "DO_NOT_LOAD_TRACE_use_precomputed_tree_data"
    assert gemm["time_breakdown"]["gpu_kernel_time_ms"] == 0.7
    assert gemm["time_breakdown"]["note"].startswith("Use gpu_kernel_time_ms")
    assert gemm["gpu_utilization"]["idle_time_percent"] == 25.0
    idle = read(tmp_path / "metadata/cpu_idle_metadata.json")
    assert list(idle) == list(gemm)[:9]
    assert (idle["category"], idle["category_name"]) == ("CPU/Idle Analysis", "cpu_idle")
    multi = read(tmp_path / "metadata/multi_kernel_metadata.json")
    assert list(multi) == [*list(gemm)[:9], "tier"]
    assert multi["category"] == "Multi-Kernel Issues"
    text = (tmp_path / "metadata/gemm_metadata.json").read_text()
    assert text.startswith('{\n  "platform"')  # indent=2, field order kept


def test_top_operations(tmp_path: Path) -> None:
    top = tables(tmp_path).manifest.top_operations
    assert [t.name for t in top] == [f"op{i}" for i in range(11, 1, -1)]
    assert top[0].category == "GEMM, other"
    assert top[0].total_direct_kernel_time_ms == 11.0


def test_report_without_operator_tables(tmp_path: Path) -> None:
    manifest = categorise(
        report(with_unified=False),
        PLATFORM,
        "t.json",
        str(tmp_path),
        has_multi_kernel=True,
        fusion_count=0,
        scope="comparative",
    ).manifest
    assert [c.name for c in manifest.categories] == ["cpu_idle", "multi_kernel"]
    assert manifest.top_operations == []
    assert manifest.comparison_scope == "comparative"
    assert math.isclose(manifest.gpu_utilization.total_time_ms, 1.0)


def test_a_gpu_only_trace_gets_the_system_categories_and_a_note(tmp_path):
    """TraceLens's preparation fails on GPU-only traces; ours writes a manifest that says why."""
    from rooflens.analyzers.perf.platforms import get_platform
    from rooflens.analyzers.report.build import build_report
    from tests.helpers.trace_builder import TraceBuilder

    events = [*TraceBuilder.launch(1, ts=0, kernel_ts=10, kernel_dur=5)]
    model = TraceBuilder(tmp_path).model(events)
    platform = get_platform("MI300X")
    found = categorise(
        build_report(model, platform),
        platform,
        "t.json",
        str(tmp_path / "run"),
        has_multi_kernel=False,
        fusion_count=0,
    )
    RunFolder(tmp_path / "run").write_category_tables(found)
    manifest = found.manifest
    assert [c.name for c in manifest.categories] == ["cpu_idle"]
    assert manifest.notes and "no operator events" in manifest.notes[0]
    written = (tmp_path / "run/category_data/category_manifest.json").read_text()
    assert "no operator events" in written


def test_tree_data_lists_the_significant_ops_of_a_category(tmp_path: Path) -> None:
    """Ours: TraceLens documents `<key>_tree_data.json` but never writes it (§2.5, §8.1)."""
    export(tmp_path)
    tree = json.loads((tmp_path / "category_data/gemm_tree_data.json").read_text())
    assert tree["category"] == "gemm"
    by_name = {op["name"]: op for op in tree["operations"]}
    assert set(by_name) == {"aten::mm", "aten::addmm"}  # both over 10 % of the category
    assert sum(op["percent_of_category"] for op in tree["operations"]) == pytest.approx(100)
