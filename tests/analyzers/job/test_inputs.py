"""A job's inputs: globs, folders and files; the rank from distributedInfo or the file name;
duplicate, missing and mixed ranks (docs/multirank.md#job-inputs), on generated jobs."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from rooflens.analyzers.job.inputs import (
    JobInputError,
    compile_rank_regex,
    header_info,
    job_inputs,
    name_rank,
)
from rooflens.analyzers.synthetic.job import JobPlan, write_job


@pytest.fixture(scope="module")
def job4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("job4")
    write_job(folder, JobPlan(ranks=4, steps=1, collectives=2))
    return folder


def without_rank(src: Path, dst: Path) -> Path:
    """A copy of a rank's trace whose distributedInfo records no rank (as some exports do)."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["distributedInfo"].pop("rank")
    dst.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return dst


def test_a_folder_a_glob_and_a_list_name_the_same_job(job4: Path) -> None:
    files = sorted(str(p) for p in job4.iterdir())
    for specs in ([str(job4)], [str(job4 / "*.json.gz")], files, [files[0], str(job4)]):
        inputs = job_inputs(specs)
        assert inputs.ranks == [0, 1, 2, 3]
        assert inputs.world_size == 4 and inputs.missing == () and inputs.warnings == ()
        assert {f.rank_source for f in inputs.files} == {"distributedInfo"}
        names = [f.path.name for f in inputs.files]
        assert names == [f"rank{r}.pt.trace.json.gz" for r in range(4)]


def test_the_header_is_read_without_the_events(job4: Path) -> None:
    info = header_info(job4 / "rank2.pt.trace.json.gz")
    assert (info.rank, info.world_size, info.backend) == (2, 4, "nccl")
    assert info.pg_config[0].ranks == [0, 1, 2, 3]


def test_the_file_name_gives_the_rank_when_distributed_info_does_not(job4, tmp_path) -> None:
    for r in range(3):
        without_rank(job4 / f"rank{r}.pt.trace.json.gz", tmp_path / f"worker{r}_step_12.json.gz")
    inputs = job_inputs([str(tmp_path)])
    assert inputs.ranks == [0, 1, 2]
    assert {f.rank_source for f in inputs.files} == {"file name"}
    assert inputs.missing == (3,)


def test_a_rank_regex_reads_other_names() -> None:
    pattern = compile_rank_regex(r"gpu(?P<rank>\d+)of")
    assert name_rank(Path("trace_gpu12of64.json"), pattern) == 12
    assert name_rank(Path("trace.json"), pattern) is None
    assert name_rank(Path("worker7_step_12.1694.pt.trace.json.gz"), compile_rank_regex(None)) == 7
    with pytest.raises(JobInputError, match="has no group"):
        compile_rank_regex(r"rank\d+")
    with pytest.raises(JobInputError, match="not a regular expression"):
        compile_rank_regex(r"rank(\d+")


def test_no_rank_anywhere_is_an_error_naming_the_file(job4, tmp_path) -> None:
    without_rank(job4 / "rank0.pt.trace.json.gz", tmp_path / "trace_a.json.gz")
    with pytest.raises(JobInputError, match=r"trace_a.json.gz: no rank .* --rank-regex"):
        job_inputs([str(tmp_path)])


def test_duplicate_ranks_are_refused_with_both_files(job4, tmp_path) -> None:
    for name in ("rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"):
        shutil.copy(job4 / name, tmp_path / name)
    shutil.copy(job4 / "rank1.pt.trace.json.gz", tmp_path / "copy_of_rank1.json.gz")
    with pytest.raises(JobInputError) as caught:
        job_inputs([str(tmp_path)])
    message = str(caught.value)
    assert "1 rank(s) given more than once" in message
    assert "rank 1: copy_of_rank1.json.gz, rank1.pt.trace.json.gz" in message


def test_missing_ranks_are_a_warning_with_their_ranges(tmp_path) -> None:
    write_job(tmp_path, JobPlan(ranks=12, steps=1, collectives=1))
    for r in (3, 4, 5, 9):
        (tmp_path / f"rank{r}.pt.trace.json.gz").unlink()
    inputs = job_inputs([str(tmp_path)])
    assert inputs.missing == (3, 4, 5, 9)
    assert inputs.warnings == (
        "4 of 12 ranks have no trace (3-5, 9); waits are measured among the ranks given, so "
        "a missing straggler goes unseen",
    )


def test_files_of_two_jobs_are_refused(tmp_path) -> None:
    write_job(tmp_path / "a", JobPlan(ranks=4, steps=1, collectives=1))
    write_job(tmp_path / "b", JobPlan(ranks=8, steps=1, collectives=1))
    (tmp_path / "b" / "rank0.pt.trace.json.gz").unlink()
    with pytest.raises(JobInputError, match=r"different jobs \(different world sizes: 4: "):
        job_inputs([str(tmp_path / "a"), str(tmp_path / "b" / "rank[4-7]*")])


def test_a_rank_beyond_the_world_size_is_refused(job4, tmp_path) -> None:
    doc = json.loads(gzip.decompress((job4 / "rank0.pt.trace.json.gz").read_bytes()))
    doc["distributedInfo"]["rank"] = 9
    (tmp_path / "odd.json").write_text(json.dumps(doc))
    with pytest.raises(JobInputError, match=r"rank beyond the world size 4: odd.json \(rank 9\)"):
        job_inputs([str(tmp_path / "odd.json")])


def test_specs_that_name_nothing_are_refused(tmp_path) -> None:
    with pytest.raises(JobInputError, match="no such file or folder"):
        job_inputs([str(tmp_path / "absent")])
    with pytest.raises(JobInputError, match="matches no trace file"):
        job_inputs([str(tmp_path / "*.json.gz")])
    with pytest.raises(JobInputError, match="matches no trace file"):
        job_inputs([str(tmp_path)])
