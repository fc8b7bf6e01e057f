"""Which files make a job, and which rank each one is: resolved and checked before any rank is
analysed, so a mixed-up job is refused in a second rather than after an hour of fan-out.

A job is given as globs, folders or files. Each file's rank comes from the `distributedInfo`
in its header (Kineto writes it before `traceEvents`, so reading the first few kilobytes is
enough), else from its file name. Errors stop the job; warnings go into its report.
Decisions and messages: docs/multirank.md#job-inputs.
"""

from __future__ import annotations

import glob
import os
import re
import stat
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import msgspec

from ..trace.errors import TraceError
from ..trace.input_file import InputFileError, open_regular
from ..trace.read import GZIP_MAGIC, SUFFIXES, require_regular_file
from ..trace.schema import DistributedInfo

# a rank written in a file name: rank3, rank_3, rank-3, worker3 (the DLRM files), proc3
DEFAULT_RANK_REGEX = r"(?i)(?:rank|worker|proc)[-_]?(\d+)"
HEADER_BYTES = 1 << 20  # at most this much JSON text is read to find distributedInfo
_EVENTS_KEY = b'"traceEvents"'
_GLOB_CHARS = re.compile(r"[*?\[]")


class JobInputError(ValueError):
    """The job cannot be assembled from these files; the message says what to do."""


@dataclass(frozen=True, slots=True)
class JobFile:
    """One rank's trace: where its rank came from and what its header says about the job."""

    path: Path
    rank: int
    rank_source: str  # "distributedInfo" or "file name"
    world_size: int | None
    backend: str | None
    groups: str  # the process-group configuration as compact text ("" when not recorded)


@dataclass(frozen=True)
class JobInputs:
    """The ranks of one job, ordered by rank, with what was noticed about them."""

    files: tuple[JobFile, ...]
    world_size: int | None
    missing: tuple[int, ...]  # ranks in 0..world_size-1 with no file
    warnings: tuple[str, ...] = field(default=())

    @property
    def ranks(self) -> list[int]:
        return [f.rank for f in self.files]


@dataclass(frozen=True, slots=True)
class TraceFile:
    """A trace found for a job: its real path (links resolved when it was found), a regular
    file inside the scope that found it; `name` is the file name it was found under (a link's
    own name), for the rank a name gives. Held as a path: never read again as a pattern."""

    path: Path
    name: str


class Scope(Protocol):
    """Where a job's files may come from: a server's path policy, or anywhere (the CLI)."""

    inside: str  # how a refusal says where files must be ("" when anywhere will do)

    def anchor(self, text: str) -> Path:
        """The absolute path `text` names, links not resolved (a pattern stays a pattern)."""
        ...

    def resolve(self, path: str | Path, *, must_exist: bool) -> Path:
        """The real path of `path` if it may be used; a ValueError saying why otherwise."""
        ...

    def contains(self, path: Path) -> bool:
        """Whether the real path of `path` may be used."""
        ...


class Anywhere:
    """The command line's scope: any file the user names (the shell expands most globs)."""

    inside = ""

    def anchor(self, text: str) -> Path:
        return Path(text).expanduser().absolute()

    def resolve(self, path: str | Path, *, must_exist: bool) -> Path:
        real = Path(os.path.realpath(self.anchor(str(path))))
        if must_exist and not real.exists():
            raise JobInputError(
                f"{path}: no such file or folder; pass trace files, a folder or a glob"
            )
        return real

    def contains(self, path: Path) -> bool:
        return True


def expand(specs: Sequence[str | Path], scope: Scope | None = None) -> list[TraceFile]:
    """The trace files named by globs, folders (their .json/.json.gz files) or files, each
    once, in name order; a spec that names nothing is an error.

    Each glob is expanded once, and every match and folder entry is resolved (links
    followed) and checked against `scope` before it is named or opened: one outside is not
    a match, so a refusal reads the same whether or not anything outside exists. `..` after
    a wildcard is refused. Design: docs/multirank.md#job-inputs.
    """
    if not specs:
        raise JobInputError("no traces given; pass the ranks' traces, a folder or a glob")
    scope = scope or Anywhere()
    found: dict[Path, TraceFile] = {}
    for spec in specs:
        text = str(spec)
        if "\0" in text:
            raise JobInputError("a path contains a NUL byte; pass plain file paths or globs")
        try:
            matches = _glob(text, scope) if _GLOB_CHARS.search(text) else _named(text, scope)
        except OSError as exc:
            raise JobInputError(
                f"{text}: the file system could not be read while looking for traces "
                f"({(exc.strerror or str(exc)).lower()}); pass the files or their folder"
            ) from None
        if not matches:
            raise JobInputError(
                f"{text}: matches no trace file (.json or .json.gz){scope.inside}; check the "
                "pattern or folder"
            )
        for match in matches:
            found.setdefault(match.path, match)
    return list(found.values())


def _glob(text: str, scope: Scope) -> list[TraceFile]:
    """A glob's matches that pass `scope`; its fixed folders are checked before the search."""
    pattern = scope.anchor(text)
    parts = pattern.parts
    first = next(i for i, part in enumerate(parts) if _GLOB_CHARS.search(part))
    if ".." in parts[first:]:
        raise JobInputError(
            f"{text}: '..' after a wildcard is refused (it would climb out of the folders the "
            "pattern searches); name the folder without '..', or pass the files"
        )
    scope.resolve(Path(*parts[:first]), must_exist=True)
    return [m for p in sorted(glob.glob(str(pattern))) if (m := _found(Path(p), scope))]


def _named(text: str, scope: Scope) -> list[TraceFile]:
    """A file, or a folder's trace files (each entry checked like a glob's match)."""
    real = scope.resolve(text, must_exist=True)
    if real.is_dir():
        entries = sorted(p for p in real.iterdir() if p.name.endswith(SUFFIXES))
        return [m for p in entries if (m := _found(p, scope))]
    try:
        require_regular_file(real)
    except TraceError as exc:
        raise JobInputError(str(exc)) from None
    return [TraceFile(real, scope.anchor(text).name)]


def _found(listed: Path, scope: Scope) -> TraceFile | None:
    """`listed` as a job's file: its real path if that lies inside `scope` and is a regular
    file; None otherwise, saying nothing of what lies outside."""
    try:
        real = Path(os.path.realpath(listed))
        if not scope.contains(real):
            return None
    except OSError:  # a link that cannot be followed: where it leads is unknown
        return None
    try:
        mode = real.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None  # gone, or a dangling link
    return TraceFile(real, listed.name) if stat.S_ISREG(mode) else None


def header_info(path: Path) -> DistributedInfo | None:
    """The `distributedInfo` of a trace's header, read from its first bytes; None when the
    header is not there (events first, or a file too odd to peek at: the full read decides)."""
    try:
        head = _head(path)
    except (OSError, zlib.error, InputFileError):
        return None
    end = head.find(_EVENTS_KEY)
    if end < 0:
        return None
    prefix = head[:end].rstrip().rstrip(b",")
    try:
        top = msgspec.json.decode(prefix + b"}" if prefix.rstrip() != b"{" else b"{}")
        return msgspec.convert(top.get("distributedInfo"), DistributedInfo)
    except (msgspec.DecodeError, msgspec.ValidationError, AttributeError, TypeError):
        return None


def _head(path: Path) -> bytes:
    with open_regular(path, "trace file") as f:
        raw = f.read(HEADER_BYTES)
        if raw[:2] != GZIP_MAGIC:
            return raw
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        text = inflate.decompress(raw, HEADER_BYTES)
        while len(text) < HEADER_BYTES and _EVENTS_KEY not in text and not inflate.eof:
            more = f.read(HEADER_BYTES)
            if not more and not inflate.unconsumed_tail:
                break
            text += inflate.decompress(inflate.unconsumed_tail + more, HEADER_BYTES - len(text))
        return text


def name_rank(path: Path, pattern: re.Pattern[str]) -> int | None:
    """The rank the file name gives: the regex's group `rank`, else its first group."""
    match = pattern.search(path.name)
    if match is None:
        return None
    value = match.groupdict().get("rank") or (match.group(1) if match.groups() else None)
    return int(value) if value is not None and value.isdigit() else None


def compile_rank_regex(text: str | None) -> re.Pattern[str]:
    try:
        pattern = re.compile(text or DEFAULT_RANK_REGEX)
    except re.error as exc:
        raise JobInputError(f"--rank-regex {text!r} is not a regular expression ({exc})") from None
    if not pattern.groups:
        raise JobInputError(
            f"--rank-regex {text!r} has no group; put the rank's digits in one, e.g. 'rank(\\d+)'"
        )
    return pattern


def job_file(found: TraceFile, pattern: re.Pattern[str]) -> JobFile:
    """One file's rank and job facts; JobInputError when neither header nor name gives a rank."""
    path = found.path
    info = header_info(path)
    groups = ""
    if info is not None and info.pg_config:
        groups = msgspec.json.encode(sorted(msgspec.to_builtins(info.pg_config), key=str)).decode()
    from_name = name_rank(Path(found.name), pattern)
    if info is not None and info.rank is not None:
        rank, source = int(info.rank), "distributedInfo"
    elif from_name is not None:
        rank, source = from_name, "file name"
    else:
        raise JobInputError(
            f"{found.name}: no rank in its distributedInfo nor in its name; pass --rank-regex "
            f"with the rank's digits in a group (default {DEFAULT_RANK_REGEX!r})"
        )
    return JobFile(
        path=path,
        rank=rank,
        rank_source=source,
        world_size=info.world_size if info is not None else None,
        backend=info.backend if info is not None else None,
        groups=groups,
    )


def job_inputs(
    specs: Sequence[str | Path], rank_regex: str | None = None, scope: Scope | None = None
) -> JobInputs:
    """Find a job's files inside `scope` (anywhere by default), each spec expanded once, and
    check them together (errors raise JobInputError; see the module doc)."""
    pattern = compile_rank_regex(rank_regex)
    files = [job_file(found, pattern) for found in expand(specs, scope)]
    _refuse_duplicates(files)
    world = _one_value(files, "world_size", "world sizes")
    _one_value(files, "backend", "backends")
    warnings = []
    if len({f.groups for f in files if f.groups}) > 1:
        warnings.append(
            "the ranks record different process-group configurations; collectives are matched "
            "within each group as recorded"
        )
    if world is not None and (beyond := [f for f in files if f.rank >= world]):
        names = ", ".join(f"{f.path.name} (rank {f.rank})" for f in beyond)
        raise JobInputError(f"rank beyond the world size {world}: {names}")
    missing = tuple(sorted(set(range(world)) - {f.rank for f in files})) if world else ()
    if missing:
        warnings.append(
            f"{len(missing)} of {world} ranks have no trace ({rank_ranges(missing)}); waits are "
            "measured among the ranks given, so a missing straggler goes unseen"
        )
    if world is None:
        warnings.append("no trace records the world size; missing ranks cannot be detected")
    return JobInputs(tuple(sorted(files, key=lambda f: f.rank)), world, missing, tuple(warnings))


def _refuse_duplicates(files: list[JobFile]) -> None:
    by_rank: dict[int, list[JobFile]] = {}
    for f in files:
        by_rank.setdefault(f.rank, []).append(f)
    twice = {r: fs for r, fs in sorted(by_rank.items()) if len(fs) > 1}
    if twice:
        detail = "; ".join(
            f"rank {r}: {', '.join(f.path.name for f in fs)}" for r, fs in list(twice.items())[:5]
        )
        raise JobInputError(
            f"{len(twice)} rank(s) given more than once ({detail}); pass one trace per rank "
            "(files of two runs of the job, or a copied file?)"
        )


def _one_value(files: list[JobFile], attr: str, what: str) -> int | str | None:
    """The value every file that records `attr` agrees on; two values make a mixed job."""
    values: dict[object, list[str]] = {}
    for f in files:
        if (value := getattr(f, attr)) is not None:
            values.setdefault(value, []).append(f.path.name)
    if len(values) > 1:
        detail = "; ".join(f"{v}: {', '.join(names[:3])}" for v, names in values.items())
        raise JobInputError(
            f"the files come from different jobs (different {what}: {detail}); "
            "analyse each job on its own"
        )
    return next(iter(values), None)


def rank_ranges(ranks: list[int] | tuple[int, ...]) -> str:
    """3, 5-9, 12: a compact list of ranks."""
    out: list[list[int]] = []
    for r in sorted(ranks):
        if out and r == out[-1][1] + 1:
            out[-1][1] = r
        else:
            out.append([r, r])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in out)
