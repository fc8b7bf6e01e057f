"""Who can use a job's Dask cluster (docs/multirank.md#fan-out): the embedded cluster only with
the credentials rooflens made for it, so a second local process runs nothing on it; a running
scheduler over TLS with the files Dask's own configuration names; a scheduler off this
machine without TLS warned about. Every test leaves no process behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dask.config
import pytest
from distributed import Security

from rooflens.analyzers.job.cluster import (
    TLS_ENV,
    ClientTls,
    ClusterChoice,
    ClusterError,
    cluster_warnings,
    is_loopback,
    scheduler_problem,
    scheduler_warning,
)
from rooflens.analyzers.job.fanout import cluster_client
from rooflens.analyzers.synthetic.job import JobPlan, write_job
from tests.helpers import foreign_dask_client
from tests.helpers.cluster_processes import free_port, no_children_left
from tests.helpers.foreign_dask_client import plant

pytestmark = pytest.mark.slow  # Dask clusters

# what stops a client without the cluster's credentials: the handshake or the comm closing
REFUSED = {"CommClosedError", "FatalCommClosedError", "OSError", "TimeoutError", "SSLError"}
TLS_FILES = {"ca": "ca.pem", "cert": "client.pem", "key": "client.key"}
TLS_KEYS = {"ca-file": "ca", "client.cert": "cert", "client.key": "key"}  # Dask's config keys


def test_a_process_without_the_clusters_credentials_runs_nothing(tmp_path: Path) -> None:
    """A second process tries plain TCP, TLS with a certificate of its own and TLS with none:
    each is refused and its function never runs; rooflens's own client runs the same
    function. On a cluster without TLS the plain TCP attempt wrote the marker."""
    marker = tmp_path / "foreign-code-ran"
    choice = ClusterChoice(workers=1, memory_limit=1 << 30)
    with cluster_client(choice, []) as client:
        scheme, host_port = client.scheduler.address.split("://")
        foreign = subprocess.run(
            [sys.executable, foreign_dask_client.__file__, host_port, str(marker)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert foreign.returncode == 0, foreign.stderr
        outcomes = json.loads(foreign.stdout)
        assert not marker.exists(), outcomes
        assert scheme == "tls" and host_port.startswith("127.0.0.1:")
        assert set(outcomes) == {"tcp", "tls_own_certificate", "tls_no_certificate"}
        assert set(outcomes.values()) <= REFUSED, outcomes
        # the cluster still works for the one that holds its credentials
        assert client.submit(plant, str(marker), pure=False).result(timeout=30) == "ran"
    assert marker.read_text() == "foreign code ran"
    assert no_children_left() == []


@pytest.mark.parametrize(
    ("address", "warned"),
    [
        ("tcp://10.0.0.5:8786", True),
        ("10.0.0.5:8786", True),  # a bare host:port is Dask's default scheme, tcp
        ("tcp://scheduler.example.org:8786", True),  # names are not resolved
        ("tcp://[2001:db8::1]:8786", True),
        ("tcp://[::ffff:10.0.0.5]:8786", True),
        ("tcp://0.0.0.0:8786", True),
        ("tcp://127.0.0.1:8786", False),
        ("tcp://127.0.1.1:8786", False),
        ("tcp://localhost:8786", False),
        ("tcp://[::1]:8786", False),
        ("tcp://[::ffff:127.0.0.1]:8786", False),
        ("tls://10.0.0.5:8786", False),  # with a CA and a client certificate configured
    ],
)
def test_a_scheduler_off_this_machine_without_tls_is_warned_about(address, warned) -> None:
    tls = ClientTls(ca_file="/etc/dask/ca.pem", cert="/etc/dask/client.pem")
    plain = ClientTls()
    warning = scheduler_warning(address, tls if address.startswith("tls") else plain)
    assert (warning is not None) == warned
    if warned:
        assert warning.startswith(f"the Dask scheduler at {address} is not on this machine")
        assert "anyone who can reach that scheduler can run code on its workers" in warning
        assert all(name in warning for name in TLS_ENV)
    # certificates alone do not secure a tcp:// address
    assert (scheduler_warning(address, tls) is not None) == warned
    assert scheduler_problem(address, tls) is None


def test_loopback_is_decided_without_resolving_names() -> None:
    assert [is_loopback(h) for h in ("127.0.0.1", "::1", "localhost", "127.255.0.9")] == [True] * 4
    assert [is_loopback(h) for h in ("10.0.0.1", "example.org", "0.0.0.0", "", None)] == [False] * 5


def test_a_scheduler_dask_cannot_reach_as_configured_is_a_clear_error() -> None:
    """tls:// without certificates (Dask raises a TypeError about an ssl_context) and tcp://
    when encryption is required (a RuntimeError at connect): refused before connecting, with
    what to set."""
    no_cert = scheduler_problem("tls://10.0.0.5:8786", ClientTls(ca_file="/ca.pem"))
    assert no_cert is not None
    assert no_cert.startswith("the Dask scheduler address tls://10.0.0.5:8786 asks for TLS")
    assert all(name in no_cert for name in TLS_ENV)
    required = ClientTls("/ca.pem", "/client.pem", require_encryption=True)
    assert scheduler_problem("tls://10.0.0.5:8786", required) is None
    refused = scheduler_problem("tcp://127.0.0.1:8786", required)
    assert refused is not None and "give its tls:// address" in refused
    # a bare host:port takes Dask's default scheme
    assert scheduler_problem("127.0.0.1:8786", ClientTls(default_scheme="tls")) is not None


def test_tls_files_that_cannot_be_loaded_are_a_clear_error(tmp_path: Path) -> None:
    """Checked before connecting: a missing CA file, a certificate that is not PEM."""
    address = f"tls://127.0.0.1:{free_port()}"
    good = write_tls_files(tmp_path)
    (tmp_path / "bad.pem").write_text("not a certificate")
    for ca, cert in ((tmp_path / "missing.pem", good["cert"]), (good["ca"], tmp_path / "bad.pem")):
        tls = {
            "distributed.comm.tls.ca-file": str(ca),
            "distributed.comm.tls.client.cert": str(cert),
            "distributed.comm.tls.client.key": str(good["key"]),
        }
        choice = ClusterChoice(scheduler=address, timeout_s=2.0)
        with (
            dask.config.set(tls),
            pytest.raises(ClusterError) as refused,
            cluster_client(choice, []),
        ):
            pass
        message = str(refused.value)
        assert message.startswith(f"cannot use the TLS configuration Dask gives for {address} (")
        assert message.endswith(f"; check {', '.join(TLS_ENV)}")
    # the same files, whole, pass the check (and the connection is then what fails)
    tls = {f"distributed.comm.tls.{k}": str(good[v]) for k, v in TLS_KEYS.items()}
    choice = ClusterChoice(scheduler=address, timeout_s=1.0)
    unreachable = pytest.raises(ClusterError, match="cannot reach the Dask")
    with dask.config.set(tls), unreachable, cluster_client(choice, []):
        pass


def test_the_documented_variables_are_the_keys_dask_reads() -> None:
    """DASK_DISTRIBUTED__COMM__TLS__* are the names Dask maps to the keys Security() reads."""
    found = dask.config.collect_env(dict.fromkeys(TLS_ENV, "/x.pem"))
    keys = ["distributed.comm.tls.ca-file", "distributed.comm.tls.client.cert"]
    keys.append("distributed.comm.tls.client.key")
    assert [dask.config.get(k, config=found) for k in keys] == ["/x.pem"] * 3
    tls = {"distributed.comm.tls.ca-file": "/a.pem", "distributed.comm.tls.client.cert": "/c.pem"}
    with dask.config.set(tls):
        assert (Security().tls_ca_file, Security().tls_client_cert) == ("/a.pem", "/c.pem")
        assert ClientTls.from_dask_config() == ClientTls("/a.pem", "/c.pem")


def test_cluster_warnings_follow_dasks_configuration() -> None:
    assert cluster_warnings(ClusterChoice(workers=2)) == []  # the embedded cluster
    remote = ClusterChoice(scheduler="tls://10.0.0.5:8786")
    with dask.config.set({"distributed.comm.tls.ca-file": None}):
        (warning,) = cluster_warnings(remote)
        assert warning.startswith("the Dask scheduler at tls://10.0.0.5:8786")
    tls = {"distributed.comm.tls.ca-file": "/a.pem", "distributed.comm.tls.client.cert": "/c.pem"}
    with dask.config.set(tls):
        assert cluster_warnings(remote) == []


def write_tls_files(folder: Path) -> dict[str, Path]:
    """A CA, certificate and key (Dask's own temporary ones) as files only their owner reads."""
    made = Security.temporary()
    text = {"ca": made.tls_ca_file, "cert": made.tls_client_cert, "key": made.tls_client_key}
    files = {}
    for role, name in TLS_FILES.items():
        path = folder / name
        path.touch(mode=0o600)
        path.write_text(text[role])
        files[role] = path
    return files


@pytest.fixture()
def tls_scheduler(tmp_path: Path) -> Iterator[tuple[str, dict[str, Path]]]:
    """A `dask scheduler` and one `dask worker` speaking mutual TLS on 127.0.0.1, each its own
    subprocess, stopped and waited for afterwards."""
    files = write_tls_files(tmp_path)
    tls = ["--tls-ca-file", files["ca"], "--tls-cert", files["cert"], "--tls-key", files["key"]]
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    dask_cli = [sys.executable, "-m", "dask"]
    with open(tmp_path / "dask.log", "wb") as log:
        quiet = {"stdout": subprocess.DEVNULL, "stderr": log}
        scheduler = [*dask_cli, "scheduler", "--host", "127.0.0.1", "--port", str(port)]
        scheduler = subprocess.Popen(
            [*scheduler, "--protocol", "tls", "--no-dashboard", *tls], **quiet
        )
        worker = [*dask_cli, "worker", address, "--host", "127.0.0.1", "--nthreads", "1"]
        worker = subprocess.Popen([*worker, "--no-dashboard", *tls], **quiet)
        try:
            yield address, files
        finally:
            for proc in (worker, scheduler):
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    assert no_children_left() == []


def analyze_job(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "rooflens", "analyze-job", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def test_a_job_runs_on_a_tls_scheduler_with_the_files_dasks_configuration_names(
    tmp_path: Path, tls_scheduler: tuple[str, dict[str, Path]]
) -> None:
    """The CLI as documented: the scheduler's tls:// address, its CA and a client
    certificate and key in DASK_DISTRIBUTED__COMM__TLS__*; without them, a clear error."""
    address, files = tls_scheduler
    write_job(tmp_path / "in", JobPlan(ranks=2, steps=1, collectives=2, slow_rank=1))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    job = [str(tmp_path / "in"), "--scheduler", address, "--until", "none"]
    refused = analyze_job([*job, "--out", str(tmp_path / "refused")], clean)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert f"rooflens: the Dask scheduler address {address} asks for TLS" in refused.stderr
    assert not (tmp_path / "refused").exists()
    env = clean | dict(zip(TLS_ENV, map(str, files.values()), strict=True))
    done = analyze_job([*job, "--out", str(tmp_path / "out")], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Analysed 2 rank(s) of 2 on external Dask scheduler.\n")
    assert "warning" not in done.stderr
    record = json.loads((tmp_path / "out" / "job.json").read_text())
    assert record["cluster"] == "external Dask scheduler"
    assert [r["status"] for r in record["ranks"]] == ["done", "done"]
