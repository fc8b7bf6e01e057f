"""A generated trace pair with one planted difference, for the comparison tests that run
without ../shared: the sample trace, and a copy whose forward GELU kernels run on another
kernel (`FAST_GELU`) in half the time; everything else is the same run."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from rooflens.analyzers.trace.synthetic import GELU, write_document, write_sample_trace

FAST_GELU = "gelu_fast_kernel"


def planted_pair(folder: Path) -> tuple[Path, Path, list[float]]:
    """Trace 1 and trace 2 under `folder`, and trace 1's GELU kernel durations (µs)."""
    one = write_sample_trace(folder / "trace1.json.gz", seed=0)
    document = json.loads(gzip.decompress(one.read_bytes()))
    durations = []
    for event in document["traceEvents"]:
        if event.get("cat") == "kernel" and event["name"] == GELU:
            durations.append(event["dur"])
            event["name"], event["dur"] = FAST_GELU, event["dur"] / 2
    two = write_document(folder / "trace2.json.gz", document)
    return one, two, durations
