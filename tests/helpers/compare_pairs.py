"""Generated trace pairs with planted differences, for the comparison tests that run without
../shared: the sample trace and a copy whose forward GELU kernels run on another kernel
(`FAST_GELU`) in half the time, everything else the same run; and a host-bound training loop
against one with less host time between steps (`host_bound_pair`)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from rooflens.analyzers.synthetic.host import HostBoundPlan, write_host_bound_trace
from rooflens.analyzers.synthetic.sample import GELU, write_document, write_sample_trace

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


# Trace 2 of the host-bound pair: the data loader holds the host 4 ms of a 5 ms step instead
# of 9 of 10, and the pinned input copy takes 10 µs instead of 30 (docs/compare.md#system-
# analyses-of-both-traces); the GPU work of a step is otherwise the same.
LESS_HOST_BOUND = HostBoundPlan(period_us=5_000.0, load_us=4_000.0, copy_us=10.0)


def host_bound_pair(folder: Path) -> tuple[Path, Path]:
    """Trace 1, the host-bound training loop (HOST_BOUND), and trace 2, the same loop with less
    host time between its steps and a faster input copy (LESS_HOST_BOUND)."""
    one = write_host_bound_trace(folder / "host1.json.gz")
    return one, write_host_bound_trace(folder / "host2.json.gz", plan=LESS_HOST_BOUND)
