"""The run store: runs by id, their folders, and the engine data of the recent ones.

A run id is allocated with an exclusive create in the workspace's index (`.index/<id>.json`,
which also names the run's folder), so ids never repeat across processes or restarts, and a
lookup reads one small file instead of walking the allowed tree. Each run lives in its own
new folder, `<output dir>/<run id>`; its `run.json` (analyzers/pipeline/ledger.py) records the
trace and the artifacts. Under HTTP without a shared workspace, a run belongs to the session
or the stateless caller's key that made it, and is handed to a keyed caller as a handle
(server/owners.py). See docs/run-folder.md.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rooflens.analyzers.pipeline.ledger import (
    ComparedTrace,
    RunFolderError,
    RunRecord,
    new_run_id,
    read_record,
    record_fields_of,
    seal,
)
from rooflens.analyzers.pipeline.steps import LOADED, RunResults

from .owners import Owner, split_handle, with_key
from .paths import PathPolicy, PathRefused

MAX_IN_MEMORY = 4
INDEX = ".index"
ALLOCATE_TRIES = 8


class RunNotFound(LookupError):
    """No run of that id is visible to the caller; the message says how to start one."""


@dataclass
class _Ledger:
    """What every view of one run shares: its record, and the lock that serialises seals."""

    record: RunRecord
    sealing: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class Run:
    """One analysis: its folder and record (steps, artifacts) and the categories analysed,
    as one caller names it: `key` is the capability a stateless HTTP caller holds for it.

    Steps of one run may run at once (analysts in parallel); sealing is serialised, and
    each seal hashes the whole folder, so the last one records every finished write."""

    folder: Path
    _ledger: _Ledger
    key: str | None = field(default=None, repr=False)

    @classmethod
    def of(cls, folder: Path, record: RunRecord) -> Run:
        return cls(folder, _Ledger(record))

    def keyed(self, key: str | None) -> Run:
        """This run as named to the holder of `key` (the same ledger)."""
        return self if key == self.key else replace(self, key=key)

    @property
    def record(self) -> RunRecord:
        return self._ledger.record

    @property
    def run_id(self) -> str:
        """The run's id: its folder's and index entry's name."""
        return self.record.run_id

    @property
    def id(self) -> str:
        """How the caller names the run (results echo it): the run id, with the key for a
        stateless HTTP caller."""
        return with_key(self.run_id, self.key)

    @property
    def trace_path(self) -> Path:
        return Path(self.record.trace_path)

    @property
    def platform(self) -> str | None:
        return self.record.platform

    @property
    def steps(self) -> list[str]:
        return self.record.steps

    def done(self, step: str) -> bool:
        return step in self.record.steps

    def mark(self, *steps: str) -> None:
        """Seal the folder: record `steps` and the hash of every artifact now in it."""
        with self._ledger.sealing:
            record = self.record.model_copy(
                update={"steps": [*self.record.steps, *(s for s in steps if not self.done(s))]}
            )
            self._ledger.record = seal(self.folder, record)


@dataclass
class RunStore:
    """Runs by id, found through the workspace index; the in-memory results of the
    `MAX_IN_MEMORY` most recently used runs."""

    policy: PathPolicy
    workspace: Path
    runs: dict[str, Run] = field(default_factory=dict)
    results: OrderedDict[str, RunResults] = field(default_factory=OrderedDict)
    # run id -> what a load must match to reuse the run held in memory without hashing
    _held: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def workspace_dir(self) -> Path:
        """The workspace, checked inside the allowed directories and created when missing."""
        real = self.policy.resolve(self.workspace, must_exist=False, for_write=True)
        real.mkdir(parents=True, exist_ok=True)
        return real

    def _index(self) -> Path:
        index = self.workspace_dir() / INDEX
        index.mkdir(exist_ok=True)
        if index.is_symlink() or not self.policy.contains(index):
            raise PathRefused(f"the workspace index {index} is a link; remove it")
        return index

    def claim(self, new_id: Callable[[], str], entry: Callable[[str], dict[str, Any]]) -> str:
        """A fresh id (`new_id()`: a run's or a job's), claimed by exclusively creating its
        workspace index entry `entry(id)`; two servers sharing a workspace never share one."""
        index = self._index()
        for _ in range(ALLOCATE_TRIES):
            claimed = new_id()
            if _write_new(index / f"{claimed}.json", entry(claimed)):
                return claimed
        raise RuntimeError("could not allocate an id")  # pragma: no cover - 48 random bits

    def create(
        self,
        out_parent: Path,
        record_fields: dict[str, Any],
        owner: Owner,
        requested: str | None,
    ) -> Run:
        """A new run of `owner` in a new folder `<out_parent>/<id>`, named with the owner's
        key; the id is claimed exclusively. `requested` is the platform asked for (None: the
        trace's own), which is what makes a later load of the same trace the same run."""
        match = _match_key({**record_fields, "platform": requested})
        run_id = self.claim(
            new_run_id,
            lambda new: {"folder": str(out_parent / new), "owner": owner.tag, **match},
        )
        folder = out_parent / run_id
        folder.mkdir(parents=True)
        run = Run.of(folder, RunRecord(run_id=run_id, owner=owner.tag, **record_fields))
        run.mark()
        self.runs[run_id] = run
        return run.keyed(owner.key)

    def adopt(self, folder: Path, owner: Owner, requested: str | None) -> Run:
        """Index a run folder written elsewhere (a job's rank, by a Dask worker) under the id
        its run.json holds, so every run tool and resource finds it like a run it started."""
        record = read_record(folder)
        if record is None:
            raise RunFolderError(f"{folder} holds no run.json; the rank's run was not written")
        match = _match_key({**record_fields_of(record), "platform": requested})
        entry = {"folder": str(folder), "owner": owner.tag, **match}
        if not _write_new(self._index() / f"{record.run_id}.json", entry):
            raise RunFolderError(f"{record.run_id} (in {folder}) is already indexed")
        with self._lock:
            run = self.runs.setdefault(record.run_id, Run.of(folder, record))
        return run.keyed(owner.key)

    def find_same(self, record_fields: dict[str, Any], owner: Owner) -> Run | None:
        """The caller's earlier run of the same trace, requested platform and captures that
        finished loading (`record_fields["platform"]` is the platform asked for). A
        stateless HTTP caller's owner is new with each call, so it never finds one."""
        match = _match_key(record_fields)
        for entry_path in sorted(self._index().glob("run-*.json")):
            entry = _read_entry(entry_path)
            if entry is None or entry.get("owner") != owner.tag:
                continue
            if {k: entry.get(k) for k in match} != match:
                continue
            try:
                run = self.get(entry_path.stem, owner)
            except (RunNotFound, PathRefused, RunFolderError):
                continue
            if run.done(LOADED):
                return run
        return None

    def get(self, handle: str, owner: Owner) -> Run:
        """The run `handle` names (its id, and the key a stateless HTTP caller was given) if
        `owner` may use it; its stored paths are checked again. A run the caller may not
        use reads exactly like one that does not exist."""
        parts = split_handle(handle, "run")
        if parts is None:
            raise RunNotFound(
                f"{handle!r} is not a run id (they look like run-3f9a1c2b7d4e, and "
                "run-3f9a1c2b7d4e-<key> for a stateless HTTP client); use the run_id that "
                "load_trace returned, or call load_trace(path) to start a run"
            )
        run_id, key = parts
        run = self.runs.get(run_id)
        if run is None:
            entry = self.entry(run_id)
            # the index says whose it is before anything of the run is read or checked, so
            # nothing of a run the caller may not use shows through an error
            if entry is not None and owner.may_use(entry.get("owner"), key):
                run = self._restore(run_id, entry)
        if run is None or not owner.may_use(run.record.owner, key):
            raise RunNotFound(
                f"unknown run id {run_id!r}; call load_trace(path) to start a run (the runs "
                "resource rooflens://runs lists a session's runs; a stateless HTTP client "
                "passes the whole run_id load_trace returned to it, key included)"
            )
        with self._lock:  # one ledger per id, so every view shares its seal lock
            run = self.runs.setdefault(run_id, run)
        return run.keyed(key if owner.isolated else None)

    def entry(self, claimed: str) -> dict[str, Any] | None:
        """The workspace index entry of a run or job id (its folder, owner), None if none."""
        index = self.workspace_dir() / INDEX / f"{claimed}.json"
        return _read_entry(index) if index.is_file() else None

    def _restore(self, run_id: str, entry: dict[str, Any]) -> Run | None:
        if not isinstance(entry.get("folder"), str):
            return None
        folder = self.policy.recheck(Path(entry["folder"]), "folder")
        record = read_record(folder)
        if record is None or record.run_id != run_id:
            return None
        self.policy.recheck(Path(record.trace_path), "trace")
        if record.platform_file:
            self.policy.recheck(Path(record.platform_file), "platform file")
        if record.captures not in (None, "auto"):
            self.policy.recheck(Path(record.captures), "capture folder")
        return Run.of(folder, record)

    def visible(self, owner: Owner) -> list[Run]:
        """The runs listed to the caller, oldest first: every indexed run when not isolated,
        a session's own runs, none for a stateless HTTP caller (`Owner.lists`)."""
        found = []
        try:
            entries = sorted(self._index().glob("run-*.json"))
        except (PathRefused, OSError):
            return []
        for entry_path in entries:
            entry = _read_entry(entry_path)
            if entry is None or not owner.lists(entry.get("owner")):
                continue
            try:
                found.append(self.get(entry_path.stem, owner))
            except (RunNotFound, PathRefused, RunFolderError, OSError):
                continue
        return sorted(found, key=lambda r: r.record.created)

    def keep(self, run_id: str, results: RunResults, options: dict[str, Any] | None = None) -> None:
        """Hold a run's results (by `Run.run_id`, not the caller's handle); with `options`
        (what the load asked for), a later load of the same unchanged file with the same
        options finds it through `held`."""
        with self._lock:
            self.results[run_id] = results
            self.results.move_to_end(run_id)
            if options is not None:
                run = self.runs[run_id]
                self._held[run_id] = _held_key(Path(run.record.trace_path), run.record, options)
            while len(self.results) > MAX_IN_MEMORY:
                gone, _ = self.results.popitem(last=False)
                self._held.pop(gone, None)

    def held(
        self, trace: Path, options: dict[str, Any], owner: Owner
    ) -> tuple[Run, RunResults] | None:
        """The caller's run of this file held in memory, if the file's size and mtime have not
        changed since and it was loaded with the same options."""
        stat = trace.stat()
        with self._lock:
            for run_id, key in reversed(self._held.items()):
                run = self.runs.get(run_id)
                results = self.results.get(run_id)
                if run is None or results is None or run.record.owner != owner.tag:
                    continue
                if key == (str(trace), stat.st_size, stat.st_mtime_ns, *sorted(options.items())):
                    self.results.move_to_end(run_id)
                    return run, results
        return None


def _held_key(trace: Path, record: RunRecord, options: dict[str, Any]) -> tuple[Any, ...]:
    return (str(trace), record.trace.size, record.trace.mtime_ns, *sorted(options.items()))


def _match_key(fields: dict[str, Any]) -> dict[str, Any]:
    trace = fields["trace"]
    return {
        "trace_sha256": trace.sha256,
        "trace_size": trace.size,
        "platform": fields.get("platform"),
        "platform_file": fields.get("platform_file"),
        "captures": fields.get("captures"),
        "compare_with": _compared_key(fields.get("compare_with")),
    }


def _compared_key(compared: ComparedTrace | None) -> dict[str, Any] | None:
    """What makes trace 2 of a comparative run the same trace 2 (None: standalone)."""
    if compared is None:
        return None
    return {
        "trace_sha256": compared.trace.sha256,
        "trace_size": compared.trace.size,
        "platform": compared.platform,
        "captures": compared.captures,
    }


def _read_entry(path: Path) -> dict[str, Any] | None:
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) else None


def _write_new(path: Path, entry: dict[str, Any]) -> bool:
    """Create the index entry `path`; False when it exists already."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(entry, f)
    return True
