"""The job folder: `job.json` (the job's record and ledger), the job-level tables and report,
and one ordinary run folder per rank under `ranks/`.

Every write is atomic; `seal_job` hashes every file below the folder into `job.json`'s ledger
(the ranks' run folders included), so `verify_job` finds any file the job did not write or
that changed after. Layout: docs/multirank.md#the-job-folder.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import layout
from ..pipeline.ledger import (
    RunFolderError,
    TraceIdentity,
    hashes,
    ledger_problems,
    occupant,
)
from ..report.csv_cells import ESCAPED, CsvCells
from ..report.write_csv import atomic_write_bytes, table_csv


class JobRank(BaseModel):
    """One rank of the job as recorded: its trace, its run, or why it failed."""

    model_config = ConfigDict(extra="forbid")

    rank: int
    trace_path: str
    rank_source: str = Field(description="where the rank came from: distributedInfo or file name")
    status: str = Field(description="done or failed")
    trace: TraceIdentity | None = None
    run_id: str | None = None
    run_folder: str | None = Field(default=None, description="relative to the job folder")
    run_note: str | None = None
    failure: str | None = Field(default=None, description="kind of failure, when failed")
    reason: str | None = None
    seconds: float | None = None


class JobRecord(BaseModel):
    """The content of `job.json`."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    world_size: int | None
    platform: str | None
    until: str = Field(description="the last pipeline step of each rank's run, or none")
    cluster: str = Field(description="embedded (N workers) or external scheduler")
    ranks: list[JobRank]
    missing: list[int] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    csv_cells: CsvCells = Field(
        default=ESCAPED, description="text cells of the job tables: escaped (formulas) or raw"
    )
    artifacts: dict[str, str] = Field(default_factory=dict, description="path -> SHA-256")

    def same_inputs(self, paths: list[str]) -> bool:
        return sorted(r.trace_path for r in self.ranks) == sorted(paths)


def new_job_id() -> str:
    return f"job-{secrets.token_hex(6)}"


def read_job(folder: Path) -> JobRecord | None:
    """The folder's job record; None when it has none; RunFolderError when damaged."""
    path = folder / layout.JOB_FILE
    if not path.is_file():
        return None
    try:
        return JobRecord.model_validate_json(path.read_bytes())
    except (ValidationError, ValueError) as exc:
        raise RunFolderError(
            f"{path} is damaged ({type(exc).__name__}); analyse the job again into a new folder"
        ) from None


def write_text(folder: Path, rel: str, text: str) -> Path:
    atomic_write_bytes(folder / rel, text.encode("utf-8"))
    return folder / rel


def write_table(folder: Path, rel: str, table: pd.DataFrame, cells: CsvCells = ESCAPED) -> Path:
    return write_text(folder, rel, table_csv(table, cells))


def seal_job(folder: Path, record: JobRecord) -> JobRecord:
    """Hash every file of the job into its ledger and write job.json."""
    sealed = record.model_copy(update={"artifacts": hashes(folder, layout.JOB_FILE)})
    write_text(folder, layout.JOB_FILE, sealed.model_dump_json(indent=2) + "\n")
    return sealed


def verify_job(folder: Path) -> list[str]:
    """Problems that show the folder is not one job's complete, unmodified output."""
    try:
        record = read_job(folder)
    except RunFolderError as exc:
        return [str(exc)]
    if record is None:
        return [f"{layout.JOB_FILE}: missing; this folder was not written by analyze-job"]
    return ledger_problems(
        folder, record.artifacts, f"job {record.job_id}", record_file=layout.JOB_FILE
    )


def check_job_destination(folder: Path, paths: list[str], *, force: bool) -> None:
    """An empty or missing folder, or a job of the same traces, may be replaced; another
    job's folder only with `force`; a folder holding anything else never."""
    found = occupant(folder)
    if found.empty:
        return
    job = read_job(folder)
    if job is None:
        raise RunFolderError(
            f"{folder} already holds files that are not a rooflens job; choose an empty or new "
            "folder for --out"
        )
    if not force and not job.same_inputs(paths):
        raise RunFolderError(
            f"{folder} already holds job {job.job_id} of other traces; choose another --out "
            "folder, or pass --force to replace it"
        )
