"""Named baselines: a trace kept under a name, so a CI job can gate every new trace against the
last accepted one without carrying its path around (docs/compare.md#named-baselines).

A baseline is a folder `DIR/NAME/` holding a copy of the trace (its own file name) and
`baseline.json` (where it came from, its SHA-256, when it was saved, the platform its run was
scored against). Saving stages the folder as a run folder is staged (`ledger.staged_output`)
and renames it into place, so a reader sees the old baseline or the new one, never half of
one. The copy is checked against the recorded hash whenever the baseline is used: a baseline
edited in place is refused, not silently compared.

`DIR` is `--baselines DIR`, else `$ROOFLENS_BASELINES`, else `$XDG_CACHE_HOME/rooflens/baselines`
(`~/.cache/rooflens/baselines`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from ..report.write_csv import atomic_write_bytes
from ..trace.input_file import InputFileError, open_regular, require_regular_file
from .ledger import (
    RUN_FILE,
    RunFolderError,
    TraceIdentity,
    file_sha256,
    read_record,
    staged_output,
)

RECORD = "baseline.json"
ENV = "ROOFLENS_BASELINES"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_CHUNK = 1 << 20


class BaselineError(Exception):
    """A baseline cannot be saved, found or used; the message says what to do instead."""


class Baseline(BaseModel):
    """The content of `baseline.json`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    trace_file: str  # the copy's file name inside the baseline's folder
    sha256: str
    size: int
    source: str  # the trace (or run folder) it was saved from, absolute
    run_id: str | None = None  # the run it was saved from, if a run folder
    platform: str | None = None  # the platform that run was scored against
    saved: str


def default_folder() -> Path:
    """Where baselines live when `--baselines` is not given."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "rooflens" / "baselines"


def check_name(name: str) -> str:
    """A baseline name is one path component a shell and a CI file can carry unquoted."""
    if not NAME.match(name) or name in (".", ".."):
        raise BaselineError(
            f"bad baseline name {name[:80]!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


@dataclass(frozen=True)
class BaselineStore:
    """The baselines in `root` (created on the first save)."""

    root: Path

    def save(self, name: str, source: Path, *, replace: bool = False) -> Baseline:
        """Keep the trace `source` (a trace file, or a run folder whose trace is taken) as
        baseline `name`. An existing baseline of that name is replaced only when asked."""
        check_name(name)
        trace, run_id, platform = _trace_of(source)
        final = self.root / name
        if final.exists() and not replace:
            raise BaselineError(
                f"baseline {name!r} exists in {self.root}; pass --force to replace it"
            )
        with staged_output(final) as staging:  # a run folder's swap: old or new, never half
            size, digest = _copy(trace, staging / trace.name)
            record = Baseline(
                name=name,
                trace_file=trace.name,
                sha256=digest,
                size=size,
                source=str(source.absolute()),
                run_id=run_id,
                platform=platform,
                saved=datetime.now(UTC).isoformat(timespec="seconds"),
            )
            atomic_write_bytes(staging / RECORD, (record.model_dump_json(indent=2) + "\n").encode())
        return record

    def get(self, name: str) -> tuple[Baseline, Path]:
        """The baseline's record and its trace, checked against the recorded hash."""
        record = self._record(check_name(name))
        trace = self.root / name / record.trace_file
        try:
            require_regular_file(trace, "baseline trace")
        except InputFileError as exc:
            raise BaselineError(f"baseline {name!r} has lost its trace: {exc}") from None
        if file_sha256(trace) != record.sha256:
            raise BaselineError(
                f"baseline {name!r} was changed since it was saved (SHA-256 differs); save it again"
            )
        return record, trace

    def names(self) -> list[Baseline]:
        """Every readable baseline, by name (damaged ones are left out: `get` names them)."""
        if not self.root.is_dir():
            return []
        found = []
        for folder in sorted(self.root.iterdir()):
            if folder.name.startswith(".") or not (folder / RECORD).is_file():
                continue
            try:
                found.append(self._record(folder.name))
            except BaselineError:
                continue
        return found

    def remove(self, name: str) -> None:
        self._record(check_name(name))
        shutil.rmtree(self.root / name)

    def _record(self, name: str) -> Baseline:
        path = self.root / name / RECORD
        if not path.is_file():
            known = ", ".join(b.name for b in self.names())
            raise BaselineError(
                f"no baseline {name!r} in {self.root}"
                + (f" (there are: {known})" if known else "")
                + "; save one with `rooflens baseline save NAME TRACE`"
            )
        try:
            with open_regular(path, "baseline record") as f:
                record = Baseline.model_validate_json(f.read())
        except (ValidationError, ValueError) as exc:
            raise BaselineError(
                f"{path} is damaged ({type(exc).__name__}); save it again"
            ) from None
        if record.name != name or Path(record.trace_file).name != record.trace_file:
            raise BaselineError(f"{path} does not describe baseline {name!r}; save it again")
        return record


def _trace_of(source: Path) -> tuple[Path, str | None, str | None]:
    """(trace, run id, platform) of a trace file or a run folder."""
    if source.is_dir():
        try:
            record = read_record(source)
        except RunFolderError as exc:
            raise BaselineError(str(exc)) from None
        if record is None:
            raise BaselineError(
                f"{source} is a folder with no {RUN_FILE}: pass a trace or a run folder"
            )
        trace = Path(record.trace_path)
        try:
            require_regular_file(trace, "the run's trace")
        except InputFileError as exc:
            raise BaselineError(f"the run in {source} names a trace that is gone: {exc}") from None
        if not TraceIdentity.of(trace).same_content(record.trace):
            raise BaselineError(
                f"the run in {source} was made from another version of {trace} (SHA-256 "
                "differs): analyse the trace again, or save the trace itself"
            )
        return trace, record.run_id, record.platform
    try:
        require_regular_file(source, "trace")
    except InputFileError as exc:
        raise BaselineError(str(exc)) from None
    return source, None, None


def _copy(trace: Path, target: Path) -> tuple[int, str]:
    """Copy `trace` to `target`, returning its size and SHA-256 (of the bytes copied)."""
    digest, size = hashlib.sha256(), 0
    with open_regular(trace, "trace") as src, open(target, "xb") as dst:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            dst.write(chunk)
            size += len(chunk)
    return size, digest.hexdigest()
