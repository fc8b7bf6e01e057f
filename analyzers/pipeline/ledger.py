"""A run folder: which trace it analyses, and which artifacts that run wrote.

`run.json` is the run's record: its id, the trace's identity (name, size, mtime and SHA-256),
the platform, the steps done, and the SHA-256 of every artifact the run wrote (its ledger).
Every step ends by sealing the folder (`seal`): the ledger is brought up to date with what
the step wrote. `verify` then finds any artifact the run did not write or that changed after
(left by another trace's run, copied in, or half-written by a killed step), so a folder that
mixes two runs never validates. The CLI builds a whole run in a staging folder beside its
destination and swaps it into place at the end (`staged_output`), so a killed run leaves the
previous folder whole, or none. See docs/run-folder.md.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..report.csv_cells import ESCAPED, CsvCells
from ..report.write_csv import atomic_write_bytes
from ..trace.input_file import InputFileError, open_regular

RUN_FILE = "run.json"
STAGING_MARK = ".rooflens-staging-"
OLD_MARK = ".rooflens-old-"
# Signs of a run folder written before run.json existed (replaceable with --force).
LEGACY_MARKERS = ("perf_report_csvs", "category_data", "analysis.md", "perf_report.xlsx")
_CHUNK = 1 << 20


class RunFolderError(Exception):
    """A run folder cannot be used as asked; the message says what to do instead."""


class TraceIdentity(BaseModel):
    """What makes two traces the same file: content hash, with size and mtime for speed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    size: int
    mtime_ns: int
    sha256: str

    @classmethod
    def of(cls, path: Path) -> TraceIdentity:
        stat = path.stat()
        return cls(
            name=path.name, size=stat.st_size, mtime_ns=stat.st_mtime_ns, sha256=file_sha256(path)
        )

    def same_content(self, other: TraceIdentity) -> bool:
        return self.size == other.size and self.sha256 == other.sha256


class ComparedTrace(BaseModel):
    """Trace 2 of a comparative run: what a restart needs to read it again."""

    model_config = ConfigDict(extra="forbid")

    trace: TraceIdentity
    trace_path: str = Field(description="absolute path of trace 2 when the run started")
    platform: str | None = None
    platform_file: str | None = None
    captures: str | None = "auto"


class RunRecord(BaseModel):
    """The content of `run.json`."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    trace: TraceIdentity
    trace_path: str = Field(description="absolute path of the trace when the run started")
    platform: str | None = None
    platform_file: str | None = None
    captures: str | None = "auto"
    compare_with: ComparedTrace | None = Field(
        default=None, description="trace 2, when the run compares two traces"
    )
    owner: str | None = Field(
        default=None,
        description="owner tag: SHA-256 of the HTTP session id or the stateless client's key; "
        "null for stdio, in-memory and CLI runs",
    )
    csv_cells: CsvCells = Field(
        default=ESCAPED,
        description="text cells of the run's CSVs: escaped against spreadsheet formulas, or raw",
    )
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    steps: list[str] = Field(default_factory=list)
    artifacts: dict[str, str] = Field(default_factory=dict, description="path -> SHA-256")


def record_fields_of(record: RunRecord) -> dict[str, Any]:
    """`record_fields` of a run already recorded."""
    return record_fields(
        Path(record.trace_path),
        record.trace,
        record.platform,
        Path(record.platform_file) if record.platform_file else None,
        record.captures,
        record.compare_with,
    )


def record_fields(
    trace: Path,
    identity: TraceIdentity,
    platform: str | None,
    platform_file: Path | None,
    captures: str | None,
    compare_with: ComparedTrace | None = None,
) -> dict[str, Any]:
    """The parts of a run record that say what was analysed (and make two loads the same);
    `compare_with` is trace 2 of a comparative run."""
    return {
        "trace": identity,
        "trace_path": str(trace),
        "platform": platform,
        "platform_file": None if platform_file is None else str(platform_file),
        "captures": captures,
        "compare_with": compare_with,
    }


def new_run_id() -> str:
    """48 random bits: unguessable, and unique across processes and restarts in practice;
    callers still allocate it with an exclusive create."""
    return f"run-{secrets.token_hex(6)}"


NOT_A_FILE = "not a regular file"  # what a FIFO, device or socket in a run folder hashes to


def file_sha256(path: Path) -> str:
    """The file's SHA-256; NOT_A_FILE for anything but a regular file, which is never opened
    for reading (a FIFO would block), so it can match no ledger entry."""
    digest = hashlib.sha256()
    try:
        f = open_regular(path, "artifact")
    except InputFileError:
        return NOT_A_FILE
    with f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def read_record(folder: Path) -> RunRecord | None:
    """The folder's record; None when it has none. A damaged record is a RunFolderError."""
    path = folder / RUN_FILE
    if not path.is_file():
        return None
    try:
        with open_regular(path, "run record") as f:
            return RunRecord.model_validate_json(f.read())
    except (ValidationError, ValueError) as exc:
        raise RunFolderError(
            f"{path} is damaged ({type(exc).__name__}); analyse the trace again into a new folder"
        ) from None


def write_record(folder: Path, record: RunRecord) -> None:
    standalone = {"compare_with"} if record.compare_with is None else None
    text = record.model_dump_json(indent=2, exclude=standalone) + "\n"
    atomic_write_bytes(folder / RUN_FILE, text.encode("utf-8"))


def artifacts(folder: Path, record_file: str = RUN_FILE) -> Iterator[Path]:
    """Every artifact file: all regular files but the folder's record (run.json, or a job's
    job.json) and hidden (temporary) ones."""
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and not (root == str(folder) and name == record_file):
                yield Path(root) / name


@lru_cache(maxsize=4096)
def _hash_of_version(path: str, inode: int, size: int, mtime_ns: int) -> str:
    """One version of a file (atomic writes give every version a new inode and mtime): a run
    seals after each of its ~20 steps, and this keeps it from re-reading what it sealed."""
    return file_sha256(Path(path))


def _sealed_hash(path: Path) -> str:
    st = path.stat()
    return _hash_of_version(str(path), st.st_ino, st.st_size, st.st_mtime_ns)


def hashes(folder: Path, record_file: str = RUN_FILE) -> dict[str, str]:
    """The ledger as it stands now: every artifact's path (relative) and SHA-256."""
    return {
        p.relative_to(folder).as_posix(): _sealed_hash(p) for p in artifacts(folder, record_file)
    }


def seal(folder: Path, record: RunRecord, step: str | None = None) -> RunRecord:
    """Record `step` as done and every artifact's hash in the ledger; write run.json.
    (`verify` always reads every file again.)"""
    ledger = hashes(folder)
    steps = record.steps if step is None or step in record.steps else [*record.steps, step]
    sealed = record.model_copy(update={"artifacts": ledger, "steps": steps})
    write_record(folder, sealed)
    return sealed


def verify(folder: Path) -> list[str]:
    """Problems that show the folder is not one run's complete, unmodified output."""
    try:
        record = read_record(folder)
    except RunFolderError as exc:
        return [str(exc)]
    if record is None:
        return [
            f"{RUN_FILE}: missing; this folder was not written by rooflens (or by an older "
            "version): analyse the trace again"
        ]
    return ledger_problems(
        folder, record.artifacts, f"run {record.run_id}", f" of {record.trace.name}"
    )


def ledger_problems(
    folder: Path, ledger: dict[str, str], writer: str, of: str = "", record_file: str = RUN_FILE
) -> list[str]:
    """Files the ledger does not list, changed since, or gone (`writer`: "run run-…")."""
    problems = []
    seen = set()
    for path in artifacts(folder, record_file):
        rel = path.relative_to(folder).as_posix()
        seen.add(rel)
        expected = ledger.get(rel)
        if expected is None:
            problems.append(f"{rel}: not written by {writer}{of}")
        elif file_sha256(path) != expected:
            problems.append(f"{rel}: changed after {writer} wrote it")
    for rel in sorted(set(ledger) - seen):
        problems.append(f"{rel}: written by {writer} but now missing")
    return problems


@dataclass(frozen=True)
class Occupant:
    """What an output folder holds now."""

    record: RunRecord | None
    legacy: bool  # a run folder without run.json
    empty: bool


def occupant(folder: Path) -> Occupant:
    if not folder.exists():
        return Occupant(None, legacy=False, empty=True)
    if not folder.is_dir():
        raise RunFolderError(f"{folder} is a file, not a folder; choose a folder for the run")
    record = read_record(folder)
    names = {p.name for p in folder.iterdir()}
    legacy = record is None and bool(names & set(LEGACY_MARKERS))
    return Occupant(record, legacy=legacy, empty=not names)


def check_destination(folder: Path, trace: TraceIdentity, *, force: bool) -> None:
    """Refuse to put a run where it would mix with, or silently destroy, something else.

    An empty or missing folder, or a run of the same trace, may be replaced; another
    trace's run only with `force`; a folder holding anything else never.
    """
    found = occupant(folder)
    if found.empty:
        return
    if found.record is not None and found.record.trace.same_content(trace):
        return
    if found.record is None and not found.legacy:
        raise RunFolderError(
            f"{folder} already holds files that are not a rooflens run; choose an empty or new "
            "folder for --out"
        )
    if not force:
        other = found.record.trace.name if found.record else "another trace (older version)"
        raise RunFolderError(
            f"{folder} already holds the run of {other}; choose another --out folder, or pass "
            "--force to replace that run"
        )


@contextmanager
def staged_output(folder: Path) -> Iterator[Path]:
    """A fresh staging folder beside `folder`; on success it replaces `folder` in one rename
    (two when an earlier run is there). On failure the staging folder is removed."""
    folder = folder.absolute()
    parent = folder.parent
    parent.mkdir(parents=True, exist_ok=True)
    _sweep(parent, folder.name)
    staging = parent / f".{folder.name}{STAGING_MARK}{os.getpid()}-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if folder.exists():
        old = parent / f".{folder.name}{OLD_MARK}{secrets.token_hex(4)}"
        folder.rename(old)
        staging.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
    else:
        staging.rename(folder)


def _sweep(parent: Path, name: str) -> None:
    """Remove what killed runs for the same destination left beside it. A run killed between
    its two renames left no folder and the earlier run set aside: that run is put back. The
    staging folder of a live run (another process writing the same destination) is kept."""
    olds = sorted(parent.glob(f".{name}{OLD_MARK}*"))
    if len(olds) == 1 and not (parent / name).exists():
        olds.pop().rename(parent / name)
    for leftover in olds:
        shutil.rmtree(leftover, ignore_errors=True)
    for leftover in parent.glob(f".{name}{STAGING_MARK}*"):
        if not _alive(leftover.name.removeprefix(f".{name}{STAGING_MARK}").partition("-")[0]):
            shutil.rmtree(leftover, ignore_errors=True)


def _alive(pid: str) -> bool:
    """Whether the process that named a staging folder still runs (not this one: its own
    staging folders are leftovers of an earlier, failed attempt)."""
    if os.name != "posix" or not pid.isdigit() or int(pid) == os.getpid():
        return False  # (on Windows, os.kill(pid, 0) would send Ctrl-C rather than probe)
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True
