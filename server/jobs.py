"""Jobs on the MCP server: the inputs checked against the allowed directories, the job run in
a new folder `<output dir>/<job id>`, its ranks' runs indexed as runs, the job indexed so its
files can be read back as resources. Plain functions: the tool calls them on a worker thread.
Design: docs/multirank.md#mcp-load_job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rooflens.analyzers.job.cluster import ClusterChoice, Progress
from rooflens.analyzers.job.inputs import job_inputs
from rooflens.analyzers.job.job_folder import JobRecord, new_job_id, read_job
from rooflens.analyzers.job.job_run import JobResult, analyze_job, write_job_folder
from rooflens.analyzers.job.rank_task import RankDone
from rooflens.analyzers.perf.platforms import get_platform

from .owners import Owner, split_handle, with_key
from .paths import PathRefused
from .runs import Run
from .state import AppState


class JobNotFound(LookupError):
    """No job of that id is visible to the caller; the message says how to start one."""


@dataclass(frozen=True)
class JobRequest:
    """What load_job was asked for (paths as the caller gave them)."""

    paths: Sequence[str]
    rank_regex: str | None = None
    platform: str | None = None
    output_dir: str | None = None
    until: str = "loaded"
    workers: int | None = None


@dataclass
class JobLoaded:
    job_id: str
    folder: Path
    record: JobRecord
    result: JobResult
    runs: dict[int, Run]  # rank -> its run, for the ranks that finished with one


def load_job(
    st: AppState, req: JobRequest, owner: Owner, progress: Progress | None = None
) -> JobLoaded:
    """Check the inputs, run every rank (on DASK_SCHEDULER_ADDRESS's cluster, else an
    embedded one), write the job folder, index the job and its ranks' runs. The job and
    its ranks' runs are `owner`'s and are named with its key (one for all of them)."""
    if req.platform:
        get_platform(req.platform)
    # each spec expanded once, every match checked inside (docs/multirank.md#job-inputs)
    inputs = job_inputs(req.paths, req.rank_regex, st.policy)
    parent = (
        st.policy.resolve(req.output_dir, must_exist=False, for_write=True)
        if req.output_dir
        else st.runs.workspace_dir()
    )
    job_id = _allocate(st, parent, owner)
    folder = parent / job_id
    folder.mkdir(parents=True)
    choice = ClusterChoice.from_args(None, req.workers).resolved([f.path for f in inputs.files])
    result = analyze_job(
        inputs,
        folder,
        choice,
        platform=req.platform,
        until=req.until,
        progress=progress,
        owner=owner.tag,
    )
    record = write_job_folder(folder, result, choice, req.platform, req.until, job_id)
    runs = {
        o.rank: st.runs.adopt(folder / rank.run_folder, owner, req.platform)
        for o, rank in zip(result.outcomes, record.ranks, strict=True)
        if isinstance(o, RankDone) and rank.run_folder
    }
    return JobLoaded(with_key(job_id, owner.key), folder, record, result, runs)


def _allocate(st: AppState, parent: Path, owner: Owner) -> str:
    """A new job id, claimed in the workspace index like a run's."""
    return st.runs.claim(new_job_id, lambda new: {"folder": str(parent / new), "owner": owner.tag})


def find_job(st: AppState, handle: str, owner: Owner) -> tuple[Path, JobRecord]:
    """The job's folder (checked again) and record, if `owner` may see the job `handle`
    names (its id, and the key of a stateless HTTP caller: then the record's rank run ids
    carry that key too, as the ranks' runs share it). An unseen job reads as unknown."""
    hint = "call load_job(paths) to analyse a job"
    parts = split_handle(handle, "job")
    if parts is None:
        raise JobNotFound(
            f"{handle!r} is not a job id (they look like job-3f9a1c2b7d4e, and "
            f"job-3f9a1c2b7d4e-<key> for a stateless HTTP client); {hint}"
        )
    job_id, key = parts
    entry = st.runs.entry(job_id)
    if entry is None or not owner.may_use(entry.get("owner"), key):
        raise JobNotFound(f"unknown job id {job_id!r}; {hint}")
    try:
        folder = st.policy.folder_without_links(Path(entry["folder"]))
    except (PathRefused, KeyError, TypeError):
        raise JobNotFound(f"the folder of job {job_id} is gone or outside; {hint}") from None
    record = read_job(folder)
    if record is None or record.job_id != job_id:
        raise JobNotFound(f"job {job_id} was not finished (no job.json); {hint}")
    if key is None or not owner.isolated:
        return folder, record
    ranks = [
        r.model_copy(update={"run_id": with_key(r.run_id, key) if r.run_id else None})
        for r in record.ranks
    ]
    return folder, record.model_copy(update={"ranks": ranks})
