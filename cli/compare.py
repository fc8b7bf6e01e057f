"""`rooflens compare TRACE1 TRACE2`: `analyze` of trace 1 with trace 2 set against it.

The run is `analyze`'s (analyze.py: destination check, staging folder, ledger, the same
pipeline to `--until`); this module starts it with the second trace (`trace2.py`: checked
before either trace is parsed, read on threads like trace 1, refused before anything is written
when it cannot be compared, and set against trace 1 once trace 1's perf report exists;
docs/compare.md#a-comparative-run).
"""

from __future__ import annotations

import argparse

from .analyze import run_report
from .trace2 import SecondTrace
from .trace_read import TraceRead


def run_compare(args: argparse.Namespace, *, prefetched: TraceRead, prefetched2: TraceRead) -> int:
    """The comparative run into `--out` (exit codes as `analyze`'s)."""
    return run_report(
        args, until=args.until, prefetched=prefetched, second=SecondTrace(args, prefetched2)
    )
