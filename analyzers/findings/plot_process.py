"""Draw the plot in a helper process that a command-line run starts first.

matplotlib takes longer to import than most stages of a run take to compute
(docs/architecture.md#start-up). A one-shot `rooflens analyze` starts this process before it
reads the trace, so the import happens on another core meanwhile and the plot step costs only
the drawing. The MCP server draws in its own process: it pays the import once in its life.

Anything that goes wrong in the helper (it cannot start, it dies, drawing raises) only makes
the run draw in its own process, as it would without the helper.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import TracebackType

from rooflens.analyzers.findings.plot import Savings, Segment, draw_png

_JOIN_SECONDS = 2.0


def _serve(conn: Connection) -> None:
    """The helper's life: import matplotlib, then draw the one plot it is sent, if any."""
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401

    try:
        job = conn.recv()
    except (EOFError, OSError):  # the run ended without asking for a plot
        return
    try:
        conn.send(("png", draw_png(*job)))
    except Exception as exc:  # the run draws in its own process instead
        conn.send(("error", f"{type(exc).__name__}: {exc}"))


class PlotProcess:
    """A started helper; `draw` has `draw_png`'s signature. Use it as a context manager so the
    helper never outlives the run (commands leave through `os._exit`, which skips atexit)."""

    def __init__(self) -> None:
        self._conn: Connection | None = None
        self._proc: BaseProcess | None = None
        try:
            ctx = multiprocessing.get_context("spawn")  # no fork of a process with threads
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(child,), name="rooflens-plot", daemon=True)
            proc.start()
        except OSError:
            return
        child.close()
        self._conn, self._proc = parent, proc

    @property
    def alive(self) -> bool:
        """Started and not yet used, stopped or dead."""
        return self._proc is not None and self._proc.is_alive()

    def draw(self, title: str, total: float, segments: list[Segment], savings: Savings) -> bytes:
        """The PNG, drawn by the helper when it is alive, else here."""
        conn = self._conn
        if conn is not None:
            try:
                conn.send((title, total, segments, savings))
                kind, value = conn.recv()
                if kind == "png" and isinstance(value, bytes):
                    return value
            except (EOFError, OSError):
                pass
            finally:
                self.close()
        return draw_png(title, total, segments, savings)

    def close(self) -> None:
        """Stop the helper if it is still waiting or importing."""
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if conn is not None:
            conn.close()
        if proc is not None:
            if proc.is_alive():
                proc.terminate()
            proc.join(_JOIN_SECONDS)

    def __enter__(self) -> PlotProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
