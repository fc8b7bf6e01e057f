"""Progress of the long CLI steps on stderr: a spinner per step, then a tick with its time.

Shown only when stderr is a terminal, so pipes, logs and `--json` consumers get nothing but
the result. `rich` is imported on the first step shown, never by `--help`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO


class Progress:
    """`with progress.step("reading the trace"): ...` around each long step."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None) -> None:
        self._stream = stream or sys.stderr
        self.enabled = self._stream.isatty() if enabled is None else enabled
        self._console: Any = None

    def _rich(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self._stream, force_terminal=True, highlight=False)
        return self._console

    @contextmanager
    def step(self, text: str) -> Iterator[None]:
        """A spinner while the step runs; a tick with its duration when it succeeds."""
        if not self.enabled:
            yield
            return
        console = self._rich()
        start = time.perf_counter()
        with console.status(text):
            yield
        console.print(f"[green]✓[/] {text} [dim]({time.perf_counter() - start:.1f} s)[/]")

    def line(self, text: str, *, ok: bool = True) -> None:
        """One finished item of a step (a rank of a job): a tick or a cross, then `text`."""
        if self.enabled:
            from rich.markup import escape

            mark = "[green]✓[/]" if ok else "[red]✗[/]"
            self._rich().print(f"  {mark} {escape(text)}")
