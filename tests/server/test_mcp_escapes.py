"""Every route out of the allowed directory that a client once found, shut.

Each test keeps a sibling folder `outside/` (with a trace, a findings-looking file and a
secret) next to the allowed one, snapshots it before and after, and asserts that nothing
in it was written, and nothing of it came back in a result. Refusals must not say whether
a path outside exists or where a link points.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from mcp import Client

from rooflens.analyzers.synthetic.sample import write_sample_trace
from rooflens.server.app import ServerConfig, build_server
from tests.helpers.mcp_client import call, error_of

SECRET = "TOKEN=hunter2-do-not-echo"


@pytest.fixture
def outside(allowed: Path) -> Path:
    folder = allowed.parent / "outside"
    folder.mkdir()
    write_sample_trace(folder / "theirs.json.gz", seed=7)
    (folder / "secret.txt").write_text(SECRET)
    (folder / "gemm_findings.md").write_text("# not yours\n")
    return folder


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every entry below `folder`: content hash and mtime (links as their target text)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            out[rel] = (os.readlink(path), 0)
        elif path.is_file():
            out[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
        else:
            out[rel] = ("dir", 0)
    return out


@pytest.fixture
def guarded(outside: Path):
    """Yields; then checks `outside/` is exactly as it was."""
    before = snapshot(outside)
    yield outside
    assert snapshot(outside) == before


async def prepared_run(client: Client, sample: Path) -> str:
    run_id = (await call(client, "load_trace", {"path": str(sample)}))["run_id"]
    await call(client, "prepare_category_data", {"run_id": run_id})
    await call(client, "run_category_analysis", {"run_id": run_id, "category": "gemm"})
    return run_id


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["draft_findings", "submit_findings", "validate_findings"])
@pytest.mark.parametrize("category", ["../../../outside/gemm", "{outside}/gemm", "gemm/../../x"])
async def test_a_category_never_becomes_a_path(
    connect, sample, guarded: Path, tool: str, category: str
) -> None:
    """A category is matched against the run's manifest before any path is built."""
    async with connect() as client:
        run_id = await prepared_run(client, sample)
        given = category.format(outside=guarded)
        message = await error_of(client, tool, {"run_id": run_id, "category": given})
    assert "is not a category of this run" in message and "gemm" in message


@pytest.mark.anyio
@pytest.mark.parametrize(
    "run_id", ["../outside", "run-1/../../outside", "/etc", "run-0123456789ab/..", "RUN-0"]
)
async def test_a_run_id_is_a_name_not_a_path(connect, guarded: Path, run_id: str) -> None:
    async with connect() as client:
        message = await error_of(client, "prepare_category_data", {"run_id": run_id})
    assert "is not a run id" in message


@pytest.mark.anyio
async def test_a_run_json_pointing_outside_is_refused_when_the_run_is_restored(
    allowed: Path, sample: Path, guarded: Path
) -> None:
    """A stored path is checked again when a run is restored (a new server)."""
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        loaded = await call(client, "load_trace", {"path": str(sample)})
    record_file = Path(loaded["output_dir"]) / "run.json"
    record = json.loads(record_file.read_text())
    record["trace_path"] = str(guarded / "theirs.json.gz")
    record_file.write_text(json.dumps(record))
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        args = {"run_id": loaded["run_id"]}
        message = await error_of(client, "query_operations", args)
    assert "no longer lies inside the allowed directories" in message
    assert str(guarded) not in message


@pytest.mark.anyio
async def test_an_index_entry_pointing_outside_is_refused(
    allowed: Path, sample: Path, guarded: Path
) -> None:
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        run_id = (await call(client, "load_trace", {"path": str(sample)}))["run_id"]
    entry = allowed / "rooflens_runs" / ".index" / f"{run_id}.json"
    entry.write_text(json.dumps({"folder": str(guarded), "owner": None}))
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        message = await error_of(client, "query_operations", {"run_id": run_id})
    assert "no longer lies inside" in message


@pytest.mark.anyio
@pytest.mark.parametrize("link", ["rooflens_runs", "reports"])
async def test_a_linked_output_folder_is_not_written_through(
    connect, allowed: Path, sample: Path, guarded: Path, link: str
) -> None:
    """The workspace, or an output_dir, that is a link to outside is refused before writing."""
    (allowed / link).symlink_to(guarded, target_is_directory=True)
    args = {"path": str(sample)}
    if link == "reports":
        args["output_dir"] = str(allowed / link)
    async with connect() as client:
        message = await error_of(client, "load_trace", args)
    assert "outside the allowed directories" in message
    assert str(guarded) not in message


@pytest.mark.anyio
async def test_a_link_planted_in_a_run_folder_stops_every_later_write(
    connect, sample: Path, guarded: Path
) -> None:
    async with connect() as client:
        loaded = await call(client, "load_trace", {"path": str(sample)})
        folder = Path(loaded["output_dir"])
        (folder / "category_data").symlink_to(guarded, target_is_directory=True)
        message = await error_of(client, "prepare_category_data", {"run_id": loaded["run_id"]})
        with pytest.raises(Exception, match="symbolic link"):
            await client.read_resource(f"rooflens://runs/{loaded['run_id']}/tables")
    assert "symbolic link" in message


@pytest.mark.anyio
async def test_a_linked_capture_sidecar_is_not_read(
    connect, allowed: Path, sample: Path, guarded: Path
) -> None:
    captures = allowed / "capture_traces"
    captures.mkdir()
    write_sample_trace(captures / "capture.json.gz", seed=3)
    (captures / "execution_details.json").symlink_to(guarded / "secret.txt")
    args = {"path": str(sample), "capture_folder": str(captures)}
    async with connect() as client:
        inspected = await error_of(client, "inspect_trace", args)
        loaded = await error_of(client, "load_trace", args)
    for message in (inspected, loaded):
        assert "outside the allowed directories" in message
        assert SECRET not in message and str(guarded) not in message


@pytest.mark.anyio
async def test_refusals_do_not_reveal_what_exists_outside(
    connect, allowed: Path, guarded: Path
) -> None:
    """An existing and a missing outside path get the same refusal; a link's target is not
    named."""
    (allowed / "innocent.json").symlink_to(guarded / "secret.txt")
    async with connect() as client:
        present = await error_of(client, "inspect_trace", {"path": str(guarded / "secret.txt")})
        absent = await error_of(client, "inspect_trace", {"path": str(guarded / "nope.txt")})
        linked = await error_of(client, "inspect_trace", {"path": str(allowed / "innocent.json")})
    assert present.replace("secret.txt", "X") == absent.replace("nope.txt", "X")
    assert str(allowed.resolve()) in present  # names the allowed directory
    assert "secret" not in linked and str(guarded) not in linked
    assert SECRET not in present + absent + linked
