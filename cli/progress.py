"""Progress of the long CLI steps on stderr: a spinner per step, then a tick with its time.

Shown only when stderr is a terminal, so pipes, logs and `--json` consumers get nothing but
the result. `rich` is imported on the first step shown, never by `--help`. A step that runs
longer than `DETAIL_AFTER_S` shows how long it has run and, when the caller can tell, how far
it is ("read 230 of 575 MB"), refreshed every `REFRESH_S`.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

DETAIL_AFTER_S = 2.0
REFRESH_S = 0.5


def status_text(text: str, elapsed_s: float, detail: str | None) -> str:
    """What the spinner says `elapsed_s` into a step (the step's own text until
    DETAIL_AFTER_S)."""
    if elapsed_s < DETAIL_AFTER_S:
        return text
    return f"{text} ({detail}, {elapsed_s:.0f} s)" if detail else f"{text} ({elapsed_s:.0f} s)"


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
    def step(self, text: str, detail: Callable[[], str | None] | None = None) -> Iterator[None]:
        """A spinner while the step runs (with its time and `detail()` once it runs long);
        a tick with its duration when it succeeds."""
        if not self.enabled:
            yield
            return
        console = self._rich()
        start = time.perf_counter()
        done = threading.Event()
        with console.status(text) as status:

            def refresh() -> None:
                while not done.wait(REFRESH_S):
                    elapsed = time.perf_counter() - start
                    status.update(status_text(text, elapsed, detail() if detail else None))

            ticker = threading.Thread(target=refresh, daemon=True, name="rooflens-progress")
            ticker.start()
            try:
                yield
            finally:
                done.set()
                ticker.join()
        console.print(f"[green]✓[/] {text} [dim]({time.perf_counter() - start:.1f} s)[/]")

    def line(self, text: str, *, ok: bool = True) -> None:
        """One finished item of a step (a rank of a job): a tick or a cross, then `text`."""
        if self.enabled:
            from rich.markup import escape

            mark = "[green]✓[/]" if ok else "[red]✗[/]"
            self._rich().print(f"  {mark} {escape(text)}")
