"""rooflens: where GPU time goes in a PyTorch profiler trace, and what to fix first.

    import rooflens
    run = rooflens.analyze("trace.json.gz")
    run.priorities.priorities[0].title

`analyze`, `inspect` and `Run` are imported on first use (analyzers/api.py), so
`python -m rooflens` and the server start without the engine (docs/python-api.md).
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rooflens.analyzers.api import Run, analyze, inspect

try:
    __version__ = version("rooflens")
except PackageNotFoundError:  # run from a checkout without an install
    __version__ = "0+unknown"

__all__ = ["Run", "__version__", "analyze", "inspect"]
_API = ("Run", "analyze", "inspect")


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(import_module("rooflens.analyzers.api"), name)
    raise AttributeError(f"module 'rooflens' has no attribute {name!r}")
