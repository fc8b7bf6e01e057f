"""A job's inputs found inside a scope (a server's path policy): each glob expanded once, every
match resolved and checked before it is named or opened, refusals that say nothing of what
lies outside (docs/multirank.md#job-inputs, docs/security.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rooflens.analyzers.job.inputs import JobInputError, expand, job_inputs
from rooflens.analyzers.synthetic.job import JobPlan, write_job
from rooflens.server.paths import PathPolicy


@pytest.fixture
def allowed(tmp_path: Path) -> Path:
    folder = tmp_path / "allowed"
    (folder / "sub").mkdir(parents=True)
    return folder


def refusal(spec: str, policy: PathPolicy) -> str:
    """The refusal of `spec`, with the spec itself taken out (it is the caller's own text)."""
    with pytest.raises(ValueError) as caught:  # JobInputError, or PathRefused for the folder
        expand([spec], policy)
    return str(caught.value).replace(spec, "<spec>")


def test_a_matched_path_is_never_read_again_as_a_pattern(allowed: Path, tmp_path: Path) -> None:
    """`[[]l]ink` matches the folder `[l]ink`; read again as a pattern, `[l]ink` would be
    `link`, a link to a job outside."""
    write_job(allowed / "[l]ink", JobPlan(ranks=2, steps=1, collectives=1))
    write_job(tmp_path / "outside", JobPlan(ranks=4, steps=1, collectives=1))
    (allowed / "link").symlink_to(tmp_path / "outside")
    specs = [str(allowed / "[[]l]ink" / f"rank{r}.pt.trace.json.gz") for r in (0, 1)]
    inputs = job_inputs(specs, scope=PathPolicy([allowed]))
    assert [f.path for f in inputs.files] == [
        allowed / "[l]ink" / f"rank{r}.pt.trace.json.gz" for r in (0, 1)
    ]
    assert inputs.world_size == 2  # the outside job has 4 ranks


def test_dot_dot_after_a_wildcard_is_refused_alike_for_what_exists_and_what_does_not(
    allowed: Path,
) -> None:
    policy = PathPolicy([allowed])
    up = "../" * len(allowed.parts)  # from allowed/sub past the root
    found = refusal(f"*/{up}etc/pass*", policy)
    absent = refusal(f"*/{up}etc/no_such_name_here*", policy)
    assert found == absent
    assert found == (
        "<spec>: '..' after a wildcard is refused (it would climb out of the folders the "
        "pattern searches); name the folder without '..', or pass the files"
    )
    assert "passwd" not in found


def test_a_match_outside_is_no_match_and_the_refusal_says_nothing_of_it(
    allowed: Path, tmp_path: Path
) -> None:
    """A link in an allowed folder leads the search outside: what it finds there is dropped,
    so a name that exists outside reads exactly like one that does not."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text("{}")
    (allowed / "l").symlink_to(outside)
    policy = PathPolicy([allowed])
    found, absent = refusal("*/secret.json", policy), refusal("*/absent.json", policy)
    assert (
        found
        == absent
        == (
            "<spec>: matches no trace file (.json or .json.gz) inside the allowed directories; "
            "check the pattern or folder"
        )
    )
    linked = refusal("l/*", policy)  # the folder searched is itself outside
    assert linked.startswith(f"{allowed / 'l'} is outside the allowed directories")
    assert str(outside) not in linked


def test_a_folder_entry_linked_outside_is_no_file_of_the_job(allowed: Path, tmp_path) -> None:
    write_job(tmp_path / "outside", JobPlan(ranks=2, steps=1, collectives=1))
    write_job(allowed / "job", JobPlan(ranks=2, steps=1, collectives=1))
    (allowed / "job" / "rank1.pt.trace.json.gz").unlink()
    (allowed / "job" / "rank1.pt.trace.json.gz").symlink_to(
        tmp_path / "outside" / "rank1.pt.trace.json.gz"
    )
    found = expand([str(allowed / "job")], PathPolicy([allowed]))
    assert [f.path for f in found] == [allowed / "job" / "rank0.pt.trace.json.gz"]


@pytest.mark.skipif(not Path("/proc/1").is_dir(), reason="no /proc")
def test_an_unreadable_place_found_by_a_glob_is_a_clean_refusal(allowed: Path) -> None:
    """/proc/1/cwd cannot be followed without ptrace rights: the pattern that climbs there is
    refused, and one that reaches it through a link finds nothing (where it leads is
    unknown), instead of a PermissionError escaping."""
    policy = PathPolicy([allowed])
    up = "../" * len(allowed.parts)
    assert refusal(f"*/{up}proc/1/*", policy).startswith("<spec>: '..' after a wildcard")
    (allowed / "p").symlink_to("/proc")
    assert "matches no trace file" in refusal("*/1/*", policy)
    assert "matches no trace file" in refusal("*/self/fd/*", policy)


def test_a_special_file_named_outright_is_refused_by_kind(allowed: Path) -> None:
    os.mkfifo(allowed / "rank0.json")
    with pytest.raises(JobInputError, match=r"rank0.json: is a FIFO \(named pipe\), not a reg"):
        expand([str(allowed / "rank0.json")], PathPolicy([allowed]))
    assert refusal("*.json", PathPolicy([allowed])).startswith("<spec>: matches no trace file")
