"""The per-rank summary on a generated job whose every time is planted (no jitter), so the
timeline, top operations and data loading can be worked out by hand (docs/multirank.md)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from rooflens.analyzers.job.collectives import NoRank, collectives_of_file
from rooflens.analyzers.job.summary import RankSummary, summarise_rank
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.synthetic.host import write_host_bound_trace
from rooflens.analyzers.synthetic.job import JobPlan, write_job
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model

# per step: 3 x (compute, then an all-reduce that ends 40 µs after rank 2's 350 µs compute)
PLAN = JobPlan(ranks=4, steps=2, collectives=3, slow_rank=2, slow_us=50.0, jitter_us=0.0)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_job(tmp_path_factory.mktemp("job"), PLAN)


def test_a_fast_rank_s_timeline_is_the_planted_one(files: list[Path]) -> None:
    s = summarise_rank(files[0])
    assert (s.rank, s.world_size, s.steps, s.name) == (0, 4, 2, "rank0.pt.trace.json.gz")
    assert s.device == "NVIDIA H100 80GB HBM3" and s.platform.name == "H100_SXM"
    t = s.timeline
    assert t.compute_us == pytest.approx(6 * 300.0)
    assert t.exposed_comm_us == pytest.approx(6 * (50.0 + 40.0))  # waits 50, then 40 transfer
    assert t.idle_us == pytest.approx(100.0)  # step 1's data loading (step 0's is before)
    assert t.total_us == pytest.approx(2 * 3 * 390.0 + 100.0)
    assert t.exposed_copy_us == 0.0
    assert s.data_loading_us == pytest.approx(2 * 80.0)  # each DataLoader span is 80 µs
    mm = s.top_ops[0]
    assert (mm.name, mm.count, mm.gpu_us, mm.category) == ("aten::mm", 6, 1800.0, "GEMM")
    assert dict(s.categories)["GEMM"] == pytest.approx(1800.0)
    assert s.collectives.table.equals(collectives_of_file(files[0]).table)


def test_the_slow_rank_computes_more_and_waits_for_nobody(files: list[Path]) -> None:
    s = summarise_rank(files[2], platform="MI300X")
    assert s.timeline.compute_us == pytest.approx(6 * 350.0)
    assert s.timeline.exposed_comm_us == pytest.approx(6 * 40.0)
    assert s.platform == get_platform("MI300X")


def test_a_model_and_a_rank_can_be_given_and_the_summary_pickles(files: list[Path]) -> None:
    model = build_model(load_trace(files[1]))
    s = summarise_rank(model, rank=9)
    assert s.rank == 9 and s.collectives.rank == 9
    back = pickle.loads(pickle.dumps(s))
    assert isinstance(back, RankSummary) and back.timeline == s.timeline
    assert back.collectives.table.equals(s.collectives.table)
    assert len(pickle.dumps(s)) < 20_000


def test_a_trace_without_a_rank_needs_one(tmp_path: Path) -> None:
    path = write_host_bound_trace(tmp_path / "one.json")  # no distributedInfo
    with pytest.raises(NoRank, match="pass the rank"):
        summarise_rank(path)
    assert summarise_rank(path, rank=0).world_size is None
