"""The Dask fan-out on real clusters: an embedded LocalCluster of worker processes, and a
`dask scheduler` + `dask worker` started apart and reached over TCP on 127.0.0.1
(docs/multirank.md#fan-out). Every test leaves no process behind."""

from __future__ import annotations

import gzip
import logging
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.job.cluster import (
    ClusterChoice,
    ClusterError,
    json_bytes,
    local_workers,
    rank_memory_bytes,
)
from rooflens.analyzers.job.fanout import cluster_client, fan_out
from rooflens.analyzers.job.inputs import job_inputs
from rooflens.analyzers.job.job_folder import read_job, verify_job
from rooflens.analyzers.job.job_run import analyze_job, write_job_folder
from rooflens.analyzers.job.rank_task import (
    BAD_TRACE,
    WORKER_LOST,
    RankDone,
    RankFailed,
    RankTask,
    run_rank,
)
from rooflens.analyzers.pipeline.ledger import read_record, verify
from rooflens.analyzers.synthetic.job import JobPlan, write_job
from tests.helpers.cluster_processes import free_port, no_children_left
from tests.helpers.dying_rank import DOOMED_RANK, run_or_die

pytestmark = pytest.mark.slow  # Dask clusters

PLAN = JobPlan(ranks=4, steps=2, collectives=3, slow_rank=2, slow_us=150.0)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("job")
    write_job(folder, PLAN)
    return folder


def test_a_task_runs_in_process_and_returns_a_small_summary(job: Path, tmp_path: Path) -> None:
    task = RankTask(str(job / "rank1.pt.trace.json.gz"), 1, run_folder=str(tmp_path / "r1"))
    done = run_rank(task)
    assert isinstance(done, RankDone) and done.rank == 1 and done.pid == os.getpid()
    assert len(done.summary.collectives) == PLAN.steps * PLAN.collectives
    assert read_record(tmp_path / "r1").run_id == done.run_id  # the rank's own run (loaded)
    assert verify(tmp_path / "r1") == []
    assert done.identity.name == "rank1.pt.trace.json.gz" and len(done.identity.sha256) == 64


def test_a_corrupt_rank_is_a_typed_failure_not_an_exception(tmp_path: Path) -> None:
    bad = tmp_path / "rank3.json.gz"
    bad.write_bytes(gzip.compress(b'{"traceEvents": [')[:-6])
    failed = run_rank(RankTask(str(bad), 3))
    assert isinstance(failed, RankFailed) and failed.kind == BAD_TRACE and failed.rank == 3
    assert failed.reason.startswith(f"{bad}:")


def test_the_embedded_cluster_runs_every_rank_in_worker_processes(job, tmp_path) -> None:
    """Two worker processes, the planted straggler found, a corrupt rank reported while the
    others finish, progress once per rank, each rank's run written by its worker."""
    (tmp_path / "in").mkdir()
    for path in job.iterdir():
        (tmp_path / "in" / path.name).write_bytes(path.read_bytes())
    (tmp_path / "in" / "rank3.pt.trace.json.gz").write_bytes(b"\x1f\x8b not really gzip")
    inputs = job_inputs([str(tmp_path / "in" / "rank*")])
    choice = ClusterChoice(workers=2).resolved([f.path for f in inputs.files])
    seen: list[tuple[int, int, int]] = []
    out = tmp_path / "out"
    result = analyze_job(
        inputs,
        out,
        choice,
        until="loaded",
        progress=lambda o, n, total: seen.append((o.rank, n, total)),
    )
    assert sorted(r for r, _, _ in seen) == [0, 1, 2, 3]
    assert [n for _, n, _ in seen] == [1, 2, 3, 4] and {t for _, _, t in seen} == {4}
    assert [o.rank for o in result.done] == [0, 1, 2]
    (failed,) = result.failed
    assert failed.rank == 3 and failed.kind == BAD_TRACE
    assert "rank3.pt.trace.json.gz: corrupt gzip data" in failed.reason
    pids = {o.pid for o in result.done}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    assert all(o.peak_rss_mb > 50 for o in result.done)
    # ranks 0, 1 (and the missing 3) wait the planted 150 µs at each of the 6 collectives
    waits = {w.rank: w for w in result.waits}
    assert waits[2].times_last == 6 and waits[2].total_wait_us < 6 * PLAN.jitter_us
    assert waits[0].total_wait_us == pytest.approx(6 * 150.0, rel=0.1)
    record = write_job_folder(out, result, choice, None, "loaded")
    assert record.cluster == "embedded LocalCluster (2 worker processes)"
    assert [(r.rank, r.status) for r in read_job(out).ranks] == [
        (0, "done"),
        (1, "done"),
        (2, "done"),
        (3, "failed"),
    ]
    for rank in (0, 1, 2):
        assert verify(out / layout.rank_run(rank)) == []
    assert not (out / layout.rank_run(3)).exists()
    assert verify_job(out) == []
    assert no_children_left() == []


def test_the_embedded_cluster_listens_on_loopback_only_and_logs_only_problems(
    job: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Scheduler, nanny, worker and status sockets: nothing of the embedded cluster is
    reachable from another machine; the first three speak TLS only (test_cluster_security.py
    has a local process try), and the status servers answer /health and no page about the
    cluster. And its in-process scheduler's INFO chatter never reaches the host program's log
    handlers (the MCP server's stderr)."""
    caplog.set_level(logging.INFO)
    paths = sorted(job.iterdir())
    with cluster_client(ClusterChoice(workers=1).resolved(paths), paths) as client:
        assert client.run(os.getpid)  # the worker is up
        info = client.scheduler_info()
        nannies = [w["nanny"] for w in info["workers"].values()]
        comms = [client.scheduler.address, *info["workers"], *nannies]
        assert len(comms) == 3 and all(a.startswith("tls://127.0.0.1:") for a in comms), comms
        status = [info["services"]["dashboard"]]
        status += [w["services"]["dashboard"] for w in info["workers"].values()]
        for port in status:
            assert http_status(port, "/health") == 200
            for page in ("/info/main/workers.html", "/json/identity.json", "/metrics"):
                assert http_status(port, page) == 404, (port, page)
        me = psutil.Process()
        listening = [
            c.laddr
            for proc in [me, *me.children(recursive=True)]
            for c in proc.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        ]
    # scheduler, nanny and worker over TLS, scheduler's and worker's status: all on loopback
    ports = {int(address.rsplit(":", 1)[1]) for address in comms} | set(status)
    assert len(ports) == 5 and ports <= {addr.port for addr in listening}, (ports, listening)
    assert {addr.ip for addr in listening} == {"127.0.0.1"}, listening
    chatter = [r for r in caplog.records if r.name.startswith("distributed")]
    assert [r for r in chatter if r.levelno < logging.WARNING] == []
    assert no_children_left() == []


def http_status(port: int, route: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{route}", timeout=10) as reply:
            return reply.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_rank_whose_worker_dies_is_reported_and_the_others_finish(job: Path) -> None:
    paths = sorted(job.iterdir())
    tasks = [RankTask(str(p), r) for r, p in enumerate(paths)]
    with cluster_client(ClusterChoice(workers=2).resolved(paths), paths) as client:
        outcomes = fan_out(tasks, client, run=run_or_die)
    kinds = [type(o).__name__ for o in outcomes]
    assert kinds == ["RankDone", "RankFailed", "RankDone", "RankDone"]
    lost = outcomes[DOOMED_RANK]
    assert lost.kind == WORKER_LOST and lost.reason.startswith("KilledWorker")
    assert "the worker died while analysing this rank" in lost.reason
    assert no_children_left() == []


@pytest.fixture()
def tcp_scheduler(tmp_path: Path) -> Iterator[str]:
    """A `dask scheduler` and one `dask worker` (one process, one thread), each its own
    subprocess on 127.0.0.1, stopped and waited for afterwards."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "dask"]
    with open(tmp_path / "dask.log", "wb") as log:
        quiet = {"stdout": subprocess.DEVNULL, "stderr": log}
        scheduler = subprocess.Popen(
            [*dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            **quiet,
        )
        worker = [*dask, "worker", address, "--host", "127.0.0.1"]
        worker = subprocess.Popen([*worker, "--nthreads", "1", "--no-dashboard"], **quiet)
        try:
            yield address
        finally:
            for proc in (worker, scheduler):
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    assert no_children_left() == []


def test_a_job_runs_on_a_scheduler_and_worker_started_apart(job, tmp_path, tcp_scheduler):
    inputs = job_inputs([str(job)])
    choice = ClusterChoice.from_args(tcp_scheduler, None).resolved([f.path for f in inputs.files])
    result = analyze_job(inputs, tmp_path / "out", choice, until="loaded")
    assert [o.rank for o in result.done] == [0, 1, 2, 3] and result.failed == []
    (pid,) = {o.pid for o in result.done}  # the one worker process did every rank
    assert pid != os.getpid()
    assert max(result.waits, key=lambda w: w.times_last).rank == 2
    for rank in range(4):
        assert verify(tmp_path / "out" / layout.rank_run(rank)) == []


def test_the_scheduler_address_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:1")
    assert ClusterChoice.from_args(None, None).scheduler == "tcp://127.0.0.1:1"
    assert ClusterChoice.from_args("tcp://127.0.0.1:2", None).scheduler == "tcp://127.0.0.1:2"


def test_an_unreachable_scheduler_is_a_clear_error(job, tmp_path) -> None:
    inputs = job_inputs([str(job)])
    choice = ClusterChoice(scheduler=f"tcp://127.0.0.1:{free_port()}", timeout_s=2.0)
    with pytest.raises(ClusterError, match=r"cannot reach the Dask scheduler at tcp://127\.0"):
        analyze_job(inputs, tmp_path, choice, until="none")


def test_workers_are_sized_to_cores_ranks_and_memory(job) -> None:
    paths = sorted(job.iterdir())
    text = len(gzip.decompress(paths[0].read_bytes()))
    assert json_bytes(paths[0]) == text
    per_rank = rank_memory_bytes(paths)
    assert local_workers(paths, 3) == 3
    assert local_workers(paths[:1], None) == 1
    assert local_workers(paths, None, budget=per_rank * 1.5) == 1  # bounded by memory
    assert local_workers(paths, None, budget=per_rank * 100) == min(os.cpu_count() or 1, 4)
    with pytest.raises(ClusterError, match="at least 1 worker"):
        local_workers(paths, 0)


def test_a_rank_placed_by_its_name_against_its_own_record_is_refused(job, tmp_path) -> None:
    """The header read placed the file (its distributedInfo came after the events, say), the
    whole trace says otherwise: that rank fails with both numbers, nothing is mixed up."""
    failed = run_rank(RankTask(str(job / "rank2.pt.trace.json.gz"), 5))
    assert isinstance(failed, RankFailed) and failed.kind == "rank mismatch"
    assert failed.reason == (
        "rank2.pt.trace.json.gz records rank 2 in its distributedInfo, but its file name "
        "placed it as rank 5; fix --rank-regex or the file name"
    )
