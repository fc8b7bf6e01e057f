"""How resources see runs: an interface the server provides, so resources never import it.

A request handler passes what it was given (its lifespan state and request headers); the
server's implementation decides whose runs those are and finds them, restored or live.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class Caller:
    """Who asks: the lifespan state and headers of the request, opaque to resources."""

    state: Any
    headers: Mapping[str, str] | None


@dataclass(frozen=True)
class RunInfo:
    """What resources may know of one run. `categories` ((key, display name), empty before
    the category data is prepared) is filled for a run looked up by id only."""

    id: str
    folder: Path  # checked: inside the allowed directories, no links planted in it
    trace_name: str
    platform: str | None
    created: str
    steps: tuple[str, ...]
    categories: tuple[tuple[str, str], ...] = ()
    compared_with: str | None = None  # trace 2's file name in a comparative run
    csv_escaped: bool = True  # its CSVs' text cells escaped against formulas (csv_cells.py)

    def done(self, step: str) -> bool:
        return step in self.steps


@dataclass(frozen=True)
class JobInfo:
    """What resources may know of one job of many ranks."""

    id: str
    folder: Path  # checked: inside the allowed directories, no links planted in it
    csv_escaped: bool = True  # its tables' text cells escaped against formulas


class RunNotVisible(LookupError):
    """No such run for this caller; the message says how to start one."""


class RunAccess(Protocol):
    def run(self, caller: Caller, run_id: str) -> RunInfo:
        """The run, or RunNotVisible."""
        ...

    def runs(self, caller: Caller) -> list[RunInfo]:
        """The caller's runs, oldest first."""
        ...

    def job(self, caller: Caller, job_id: str) -> JobInfo:
        """The job (load_job), or RunNotVisible."""
        ...

    def step_names(self) -> tuple[str, ...]:
        """The pipeline's steps, in order (for `?step=` filters and completions)."""
        ...

    def page_bytes(self, caller: Caller) -> int:
        """How large one page of a table resource may be (the server's result limit)."""
        ...
