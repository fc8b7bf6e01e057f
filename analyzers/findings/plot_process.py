"""Draw the plot in a helper process that a command-line run starts first.

matplotlib takes longer to import than most stages of a run take to compute
(docs/architecture.md#start-up). A one-shot `rooflens analyze` starts this process before it
reads the trace, so the import happens on another core meanwhile and the plot step costs only
the drawing. The MCP server draws in its own process: it pays the import once in its life.

The helper is `python -m` this module: it never re-runs the caller's main script (as
multiprocessing's spawn would). It reads one pickled job on stdin and writes the pickled PNG
on stdout. Anything that goes wrong in it (it cannot start, it dies, drawing raises) only makes
the run draw in its own process, as it would without the helper.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from contextlib import suppress
from types import TracebackType

from rooflens.analyzers.findings.plot import Savings, Segment, draw_png

_WAIT_SECONDS = 2.0


class PlotProcess:
    """A started helper; `draw` has `draw_png`'s signature. Use it as a context manager so the
    helper never outlives the run (commands leave through `os._exit`, which skips atexit)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        with suppress(OSError):
            self._proc = subprocess.Popen(
                [sys.executable, "-P", "-m", __name__],  # -P: no cwd on sys.path
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )

    @property
    def alive(self) -> bool:
        """Started and not yet used, stopped or dead."""
        return self._proc is not None and self._proc.poll() is None

    def draw(self, title: str, total: float, segments: list[Segment], savings: Savings) -> bytes:
        """The PNG, drawn by the helper when it is alive, else here."""
        proc = self._proc
        if proc is not None and proc.stdin is not None and proc.stdout is not None:
            try:
                proc.stdin.write(pickle.dumps((title, total, segments, savings)))
                proc.stdin.close()
                answer = proc.stdout.read()
                png = pickle.loads(answer) if answer else None
                if isinstance(png, bytes):
                    return png
            except (OSError, pickle.UnpicklingError, EOFError):
                pass
            finally:
                self.close()
        return draw_png(title, total, segments, savings)

    def close(self) -> None:
        """Stop the helper if it is still importing or waiting."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()
        proc.wait(_WAIT_SECONDS)

    def __enter__(self) -> PlotProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _serve() -> None:
    """The helper's life: import matplotlib, then draw the one plot it is sent, if any."""
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401

    job = sys.stdin.buffer.read()
    if not job:  # the run ended without asking for a plot
        return
    try:
        png: bytes | None = draw_png(*pickle.loads(job))
    except Exception:  # the run draws in its own process instead, and sees why
        png = None
    sys.stdout.buffer.write(pickle.dumps(png))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    _serve()
