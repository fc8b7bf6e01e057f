"""Log output of every command: `--verbose`/`-v` (INFO), `-vv` (DEBUG), `--log-level LEVEL`.

The default is WARNING, so a command prints its result and nothing of the libraries' chatter
(the MCP SDK's per-session lines, uvicorn's access lines). The handler is installed on the root
logger before anything else can: the SDK calls `logging.basicConfig(level=INFO)` when its
server is built, and `basicConfig` does nothing once the root logger has a handler.
`logging` itself is imported only when a command runs, never by `--help`.
"""

from __future__ import annotations

import sys
from typing import Any

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DEFAULT_LEVEL = "WARNING"
_BY_VERBOSITY = {0: DEFAULT_LEVEL, 1: "INFO"}  # two or more: DEBUG


class BadLevel(ValueError):
    """A level name that is not one of LEVELS; the message says which are."""


def parse_level(text: str) -> str:
    """`text` as a level name (any case), or BadLevel."""
    name = str(text).strip().upper()
    if name not in LEVELS:
        raise BadLevel(f"unknown log level {text!r}: use one of {', '.join(LEVELS)}")
    return name


def level_name(verbose: int, log_level: str | None) -> str:
    """The level in force: an explicit `--log-level` wins over `-v` counts."""
    if log_level:
        return parse_level(log_level)
    return _BY_VERBOSITY.get(verbose, "DEBUG")


def configure(level: str, *, stream: Any = None) -> None:
    """One root handler at `level` on stderr (rich's when stderr is a terminal); uvicorn and
    the MCP SDK log through it. Replaces any handler an earlier call installed."""
    import logging

    stream = stream or sys.stderr
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_rooflens", False)]:
        root.removeHandler(handler)
    handler: logging.Handler
    if level != DEFAULT_LEVEL and _is_terminal(stream):
        from rich.console import Console
        from rich.logging import RichHandler

        handler = RichHandler(console=Console(file=stream), show_path=False)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    else:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler._rooflens = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
