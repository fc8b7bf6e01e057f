"""Draw the plot in a helper process that a command-line run starts first.

matplotlib takes longer to import than most stages of a run take to compute
(docs/architecture.md#start-up). A one-shot `rooflens analyze` starts this process before it
reads the trace, so the import happens on another core meanwhile and the plot step costs only
the drawing. The MCP server draws in its own process: it pays the import once in its life.

The helper is `python -P -m` this module: it never re-runs the caller's main script (as
multiprocessing's spawn would). It reads one pickled job on stdin and writes the PNG's length
and bytes on stdout. Anything that goes wrong in it (it cannot start, it dies, drawing
raises) only makes the run draw in its own process, as it would without the helper.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from contextlib import suppress
from types import TracebackType

from .plot import Savings, Segment, draw_png

_WAIT_SECONDS = 2.0
_HEADER = 8  # bytes of the PNG's length, big-endian, before the PNG
_NO_SAVINGS = Savings([], 0, 0.0, 0.0)


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
                size = int.from_bytes(proc.stdout.read(_HEADER) or b"\0", "big")
                png = proc.stdout.read(size) if size else None
                if png is not None and len(png) == size:
                    return png
            except OSError:
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
    """The helper's life: import matplotlib and draw a throw-away plot (fonts loaded, caches
    filled) while the run reads its trace, then draw the one plot it is sent, answer with its
    length and bytes, and leave without tearing the interpreter down."""
    draw_png("warm-up", 1.0, [Segment("warm-up", "warm-up", 1.0, "#000000")], _NO_SAVINGS)
    job = sys.stdin.buffer.read()
    png = b""
    if job:  # empty: the run ended without asking for a plot
        try:
            png = draw_png(*pickle.loads(job))
        except Exception:  # answer "none": the run draws in its own process and sees why
            png = b""
    sys.stdout.buffer.write(len(png).to_bytes(_HEADER, "big") + png)
    sys.stdout.buffer.flush()
    os._exit(0)


if __name__ == "__main__":
    _serve()
