"""CLI runs never mix: `--out` is checked before the trace is read, a run is built in a staging
folder and swapped into place, and `validate` refuses a folder holding two traces' artifacts.

Every run writes `--out run` relative to its own working folder, so two runs of the same trace
write the same manifest (it records the folder as given) and can be compared byte for byte.
"""

from __future__ import annotations

import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from rooflens.analyzers.pipeline.ledger import file_sha256
from rooflens.analyzers.synthetic.sample import write_sample_trace
from rooflens.cli.main import main

pytestmark = pytest.mark.slow  # whole analyses, in the tests or their module fixtures

OUT = "run"
KILLS = 10
STAGED_KILL = 5  # the kill sent once the staging folder exists
STAGING_LEFTOVERS = ".run.rooflens-"


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("traces")
    a = write_sample_trace(folder / "a.json.gz", seed=1)
    b = write_sample_trace(folder / "b.json.gz", seed=2)
    assert file_sha256(a) != file_sha256(b)
    return a, b


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (the workbook without its timestamped properties)."""
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if path.suffix == ".xlsx":
            with zipfile.ZipFile(path) as z:
                parts = [z.read(n) for n in sorted(z.namelist()) if n != "docProps/core.xml"]
            files[rel] = b"".join(parts)
        else:
            files[rel] = path.read_bytes()
    return files


def without_record(files: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in files.items() if k != "run.json"}


def analyze(cwd: Path, trace: Path, *extra: str) -> int:
    """`rooflens analyze TRACE --out run` from `cwd`, in this process."""
    here = Path.cwd()
    os.chdir(cwd)
    try:
        return main(["analyze", str(trace), "--out", OUT, *extra])
    finally:
        os.chdir(here)


@pytest.fixture(scope="module")
def finished(traces, tmp_path_factory) -> dict[str, Path]:
    """A finished run of each trace, each in its own working folder."""
    a, b = traces
    runs = {}
    for name, trace in (("A", a), ("B", b)):
        cwd = tmp_path_factory.mktemp(f"ref{name}")
        assert analyze(cwd, trace) == 0
        runs[name] = cwd / OUT
    return runs


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(STAGING_LEFTOVERS))


def test_a_second_trace_is_refused_and_the_first_run_is_untouched(
    traces, finished, tmp_path, capsys
) -> None:
    shutil.copytree(finished["A"], tmp_path / OUT)
    before = snapshot(tmp_path / OUT)
    capsys.readouterr()
    assert analyze(tmp_path, traces[1]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--force" in err and "a.json.gz" in err
    assert snapshot(tmp_path / OUT) == before
    assert leftovers(tmp_path) == []


def test_force_replaces_the_run_with_only_the_second_traces_artifacts(
    traces, finished, tmp_path, capsys
) -> None:
    shutil.copytree(finished["A"], tmp_path / OUT)
    a_record = json.loads((tmp_path / OUT / "run.json").read_text())
    capsys.readouterr()
    assert analyze(tmp_path, traces[1], "--force", "--json") == 0
    written = json.loads(capsys.readouterr().out)
    assert written["replaced_run"] == a_record["run_id"]

    run = tmp_path / OUT
    assert main(["validate", str(run)]) == 0
    record = json.loads((run / "run.json").read_text())
    assert record["run_id"] == written["run_id"] != a_record["run_id"]
    assert record["trace"]["sha256"] == file_sha256(traces[1])
    assert sorted(record["artifacts"]) == sorted(without_record(snapshot(run)))
    # every artifact is B's: the same bytes as B's own run
    assert without_record(snapshot(run)) == without_record(snapshot(finished["B"]))
    manifest = json.loads((run / "category_data/category_manifest.json").read_text())
    assert Path(manifest["trace_path"]).name == "b.json.gz"
    assert manifest["output_dir"] == OUT  # the folder asked for, not the staging folder
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("how", ["copied in", "overwritten"])
def test_validate_fails_naming_an_artifact_of_another_trace(finished, tmp_path, capsys, how):
    run = shutil.copytree(finished["A"], tmp_path / OUT)
    assert main(["validate", str(run)]) == 0
    foreign = finished["B"] / "category_data/gemm_ops.csv"
    target = "category_data/extra_ops.csv" if how == "copied in" else "category_data/gemm_ops.csv"
    assert foreign.read_bytes() != (run / "category_data/gemm_ops.csv").read_bytes()
    shutil.copy(foreign, run / target)
    capsys.readouterr()
    assert main(["validate", str(run), "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert any(p.startswith(f"{target}: ") for p in problems), problems


def _cli(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "rooflens", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _wait_for_staging(parent: Path, process: subprocess.Popen[bytes]) -> None:
    """Return once the run has made its staging folder beside `parent`'s run."""
    deadline = time.monotonic() + 120
    while not leftovers(parent):
        assert process.poll() is None, "the run ended before it made its staging folder"
        assert time.monotonic() < deadline, "the run never made its staging folder"
        time.sleep(0.01)


@pytest.mark.slow
def test_a_run_killed_at_any_point_never_leaves_a_valid_mixed_folder(
    traces, finished, tmp_path, capsys
) -> None:
    """SIGKILL `analyze B --force` into A's finished folder at seeded random points spread
    over its runtime, one before it starts and one inside its staging folder: the folder then
    fails validation, or is wholly A's or wholly B's."""
    a, b = snapshot(finished["A"]), snapshot(finished["B"])
    start = time.perf_counter()
    timing = _cli("analyze", str(traces[1]), "--out", OUT, cwd=finished["B"].parent)
    assert timing.wait(timeout=120) == 0
    runtime = time.perf_counter() - start
    rng = random.Random(20261201)
    outcomes, mid_run = [], 0
    for i in range(KILLS):
        run = tmp_path / OUT
        for name in [OUT, *leftovers(tmp_path)]:
            shutil.rmtree(tmp_path / name, ignore_errors=True)
        shutil.copytree(finished["A"], run)
        process = _cli("analyze", str(traces[1]), "--out", OUT, "--force", cwd=tmp_path)
        if i == STAGED_KILL:  # a kill certain to land inside the staging folder
            _wait_for_staging(tmp_path, process)
        elif i > 0:  # the first kill lands before the run has started
            time.sleep(runtime * (i + rng.random()) / KILLS)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        mid_run += bool(leftovers(tmp_path))
        capsys.readouterr()
        code = main(["validate", str(run)]) if run.exists() else 2
        capsys.readouterr()
        if code != 0:
            outcomes.append("refused")
            continue
        now = snapshot(run)
        record = json.loads((run / "run.json").read_text())
        if record["trace"]["sha256"] == file_sha256(traces[0]):
            assert now == a, f"kill {i}: A's folder changed"
            outcomes.append("A")
        else:
            assert record["trace"]["sha256"] == file_sha256(traces[1])
            assert without_record(now) == without_record(b), f"kill {i}: not B's run"
            outcomes.append("B")
    assert "A" in outcomes, outcomes  # early kills leave A whole
    assert mid_run, outcomes  # some kills hit a run inside its staging folder
    # a later run sweeps whatever killed runs left beside the folder
    (tmp_path / f"{STAGING_LEFTOVERS}staging-killed").mkdir(exist_ok=True)
    assert analyze(tmp_path, traces[1], "--force") == 0
    assert leftovers(tmp_path) == []
    assert main(["validate", str(tmp_path / OUT)]) == 0


# `analyze` held inside its prepare step: the step says so on the `ready` pipe, then blocks
# reading the `hold` pipe, which the test never writes: the signal lands exactly there
HELD_IN_PREPARE = """
import os, sys
import rooflens.cli.analyze as cli_report

real = cli_report.Pipeline.prepare
ready, hold = int(sys.argv[1]), int(sys.argv[2])

def held(self):
    data = real(self)
    os.write(ready, b"preparing\\n")
    os.read(hold, 1)
    return data

cli_report.Pipeline.prepare = held
from rooflens.cli.main import main
raise SystemExit(main(sys.argv[3:]))
"""


def _wait_for_line(fd: int, process: subprocess.Popen[bytes], timeout: float) -> bytes:
    """The first line the child writes on `fd` (b"" when it exits first)."""
    readable, _, _ = select.select([fd], [], [], timeout)
    if not readable:
        process.kill()
        pytest.fail(f"no word from the run in {timeout:.0f} s: {process.communicate()}")
    return os.read(fd, 64)


@pytest.mark.slow
def test_ctrl_c_exits_130_and_leaves_the_earlier_run_whole(traces, finished, tmp_path) -> None:
    """SIGINT while the category data is being prepared: sent once the run says it is there."""
    run = shutil.copytree(finished["A"], tmp_path / OUT)
    before = snapshot(run)
    ready_r, ready_w = os.pipe()
    hold_r, hold_w = os.pipe()
    argv = ["analyze", str(traces[1]), "--out", OUT, "--force"]
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", HELD_IN_PREPARE, str(ready_w), str(hold_r), *argv],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(ready_w, hold_r),
        )
        os.close(ready_w)
        os.close(hold_r)
        said = _wait_for_line(ready_r, process, timeout=120)
        assert said == b"preparing\n", (said, process.communicate())
        assert leftovers(tmp_path)  # the staging folder exists while the run is in it
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        for fd in (ready_r, hold_w):
            os.close(fd)
    assert process.returncode == 130, err.decode()
    assert err.decode() == "rooflens: interrupted\n"
    assert out == b""
    assert leftovers(tmp_path) == []
    assert snapshot(run) == before


@pytest.fixture(params=["read-only parent", "under a regular file"])
def unwritable(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """An --out that cannot be created: in a read-only folder (for root, which may write
    anywhere, a folder in /proc, where nobody may create one), or under a regular file."""
    if request.param == "read-only parent":
        parent = tmp_path / "locked"
        parent.mkdir()
        parent.chmod(0o500)
        request.addfinalizer(lambda: parent.chmod(0o700))
        if os.access(parent, os.W_OK):
            parent = Path("/proc")
        return parent / OUT
    regular = tmp_path / "a_file"
    regular.write_text("not a folder")
    return regular / OUT


def test_an_unwritable_out_is_one_line_and_exit_2(traces, unwritable, capsys) -> None:
    assert main(["report", str(traces[0]), "--out", str(unwritable)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rooflens: cannot write the run into {unwritable}: ")
    assert err.count("\n") == 1
    assert not unwritable.exists()
