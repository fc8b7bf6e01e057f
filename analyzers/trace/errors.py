"""Errors a user can act on: each names the file, what is wrong and what to do."""

from __future__ import annotations

from pathlib import Path


class TraceError(Exception):
    """A trace cannot be analysed; the message is meant for the person who gave the file."""

    def __init__(self, path: Path | str, problem: str, hint: str = "") -> None:
        self.path = Path(path)
        self.problem = problem
        self.hint = hint
        text = f"{self.path}: {problem}"
        super().__init__(f"{text}. {hint}" if hint else text)
