"""Which files make a job, and which rank each one is: resolved and checked before any rank is
analysed, so a mixed-up job is refused in a second rather than after an hour of fan-out.

A job is given as globs, folders or files. Each file's rank comes from the `distributedInfo`
in its header (Kineto writes it before `traceEvents`, so reading the first few kilobytes is
enough), else from its file name. Errors stop the job; warnings go into its report.
Decisions and messages: docs/multirank.md#job-inputs.
"""

from __future__ import annotations

import glob
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from rooflens.analyzers.trace.read import GZIP_MAGIC, SUFFIXES
from rooflens.analyzers.trace.schema import DistributedInfo

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


def expand(specs: Sequence[str | Path]) -> list[Path]:
    """The trace files named by globs, folders (their .json/.json.gz files) or files,
    each once, in name order. A spec that names nothing is an error."""
    found: dict[Path, None] = {}
    for spec in specs:
        text = str(spec)
        if _GLOB_CHARS.search(text):
            matches = [Path(p) for p in sorted(glob.glob(text)) if Path(p).is_file()]
        elif Path(text).is_dir():
            matches = sorted(
                p for p in Path(text).iterdir() if p.is_file() and p.name.endswith(SUFFIXES)
            )
        elif Path(text).is_file():
            matches = [Path(text)]
        else:
            raise JobInputError(
                f"{text}: no such file or folder; pass trace files, a folder or a glob"
            )
        if not matches:
            raise JobInputError(
                f"{text}: matches no trace file (.json or .json.gz); check the pattern or folder"
            )
        for path in matches:
            found.setdefault(path.absolute(), None)
    return list(found)


def header_info(path: Path) -> DistributedInfo | None:
    """The `distributedInfo` of a trace's header, read from its first bytes; None when the
    header is not there (events first, or a file too odd to peek at: the full read decides)."""
    try:
        head = _head(path)
    except (OSError, zlib.error):
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
    with path.open("rb") as f:
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


def job_file(path: Path, pattern: re.Pattern[str]) -> JobFile:
    """One file's rank and job facts; JobInputError when neither header nor name gives a rank."""
    info = header_info(path)
    groups = ""
    if info is not None and info.pg_config:
        groups = msgspec.json.encode(sorted(msgspec.to_builtins(info.pg_config), key=str)).decode()
    from_name = name_rank(path, pattern)
    if info is not None and info.rank is not None:
        rank, source = int(info.rank), "distributedInfo"
    elif from_name is not None:
        rank, source = from_name, "file name"
    else:
        raise JobInputError(
            f"{path.name}: no rank in its distributedInfo nor in its name; pass --rank-regex "
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


def job_inputs(specs: Sequence[str | Path], rank_regex: str | None = None) -> JobInputs:
    """Resolve and check a job's files (errors raise JobInputError; see the module doc)."""
    pattern = compile_rank_regex(rank_regex)
    files = [job_file(p, pattern) for p in expand(specs)]
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
            f"{len(missing)} of {world} ranks have no trace ({_ranges(missing)}); waits are "
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


def _ranges(ranks: Iterable[int]) -> str:
    """3, 5-9, 12: a compact list of ranks."""
    out: list[list[int]] = []
    for r in ranks:
        if out and r == out[-1][1] + 1:
            out[-1][1] = r
        else:
            out.append([r, r])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in out)
