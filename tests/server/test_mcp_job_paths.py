"""MCP `load_job` and the file system: a glob expanded once, its matches checked inside the
allowed directories before they are named or opened, and refusals that reveal nothing of what
lies outside (docs/security.md)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.synthetic.job import JobPlan, write_job
from tests.helpers.mcp_client import call, error_of

CRASH = "Error executing tool load_job"  # all a model sees of an unhandled exception


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])  # one protocol era: the call starts a cluster
@pytest.mark.slow
async def test_a_bracketed_folder_is_analysed_not_the_link_its_pattern_also_names(
    connect, allowed: Path, tmp_path: Path
) -> None:
    """`[[]l]ink/...` names the folder `[l]ink`; the link `link` beside it leads to another
    job outside, which a second expansion of the matched path would pick up."""
    write_job(allowed / "[l]ink", JobPlan(ranks=2, steps=1, collectives=1))
    write_job(tmp_path / "elsewhere", JobPlan(ranks=4, steps=1, collectives=1))
    (allowed / "link").symlink_to(tmp_path / "elsewhere")
    paths = [f"{allowed}/[[]l]ink/rank{r}.pt.trace.json.gz" for r in (0, 1)]
    with anyio.fail_after(180):
        async with connect() as client:
            job = await call(client, "load_job", {"paths": paths, "workers": 1, "until": "none"})
    record = json.loads((Path(job["output_dir"]) / layout.JOB_FILE).read_text())
    traces = [rank["trace_path"] for rank in record["ranks"]]
    assert traces == [f"{allowed}/[l]ink/rank{r}.pt.trace.json.gz" for r in (0, 1)]
    assert job["overview"]["world_size"] == 2 and job["warnings"] == []


@pytest.mark.anyio
async def test_globs_do_not_tell_what_exists_outside(connect, allowed, tmp_path) -> None:
    """The same refusal for a name that exists outside and one that does not, naming
    neither: by `..` after a wildcard, or through a link that leads the search outside."""
    (allowed / "sub").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.json").write_text("{}")
    (allowed / "l").symlink_to(tmp_path / "elsewhere")
    up = "*/" + "../" * len(allowed.parts)
    specs = {
        "climb": (f"{up}etc/pass*", f"{up}etc/no_such_name*"),
        "link": ("*/secret.json", "*/no_such_name.json"),
    }
    async with connect() as client:
        said = {
            route: [
                (await error_of(client, "load_job", {"paths": [s]})).replace(s, "<spec>")
                for s in pair
            ]
            for route, pair in specs.items()
        }
    for route, (exists, absent) in said.items():
        assert exists == absent, route
        assert "passwd" not in exists and "secret" not in exists and "elsewhere" not in exists
    assert said["climb"][0] == (
        f"{CRASH}: <spec>: '..' after a wildcard is refused (it would climb out of the folders "
        "the pattern searches); name the folder without '..', or pass the files"
    )
    assert said["link"][0] == (
        f"{CRASH}: <spec>: matches no trace file (.json or .json.gz) inside the allowed "
        "directories; check the pattern or folder"
    )


@pytest.mark.anyio
@pytest.mark.skipif(not Path("/proc/1").is_dir(), reason="no /proc")
async def test_a_glob_into_proc_is_a_clean_refusal(connect, allowed: Path) -> None:
    (allowed / "sub").mkdir()
    (allowed / "p").symlink_to("/proc")
    climb = f"*/{'../' * len(allowed.parts)}proc/1/*"
    async with connect() as client:
        up = await error_of(client, "load_job", {"paths": [climb]})
        linked = await error_of(client, "load_job", {"paths": ["*/1/*"]})
    assert up.startswith(f"{CRASH}: {climb}: '..' after a wildcard is refused")
    assert linked.startswith(f"{CRASH}: */1/*: matches no trace file (.json or .json.gz) inside")
