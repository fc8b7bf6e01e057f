"""rooflens: where GPU time goes in a PyTorch profiler trace, and what to fix first.

    import rooflens
    run = rooflens.analyze("trace.json.gz")
    run.priorities.priorities[0].title

`analyze`, `inspect`, `Run`, `analyze_job`, `Job` and `__version__` are looked up on first use
(the API lives in analyzers/api.py and analyzers/api_job.py), so `python -m rooflens` and the
server start without paying for the engine or the package metadata (docs/python-api.md).
"""

from __future__ import annotations

from importlib import import_module

__all__ = ["Job", "Run", "__version__", "analyze", "analyze_job", "inspect"]
_API = ("Run", "analyze", "inspect")
_JOB_API = ("Job", "analyze_job")


def __getattr__(name: str) -> object:  # no typing import: it costs 10 ms at start-up
    if name in _API:
        return getattr(import_module("rooflens.analyzers.api"), name)
    if name in _JOB_API:
        return getattr(import_module("rooflens.analyzers.api_job"), name)
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("rooflens")
        except PackageNotFoundError:  # run from a checkout without an install
            return "0+unknown"
    raise AttributeError(f"module 'rooflens' has no attribute {name!r}")
