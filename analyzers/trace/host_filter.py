"""A host side filtered or sampled by the tool that wrote the trace
(docs/trace.md#filtered-host-side).

Some exporters keep only the runtime events that launched a GPU event, and drop the rest of
the runtime (`cudaEventRecord`, `cudaStreamWaitEvent`, synchronisations, `cudaMalloc`/
`cudaFree`) together with `deviceProperties`. The GPU timeline is intact, but whatever held
the host between launches is gone, so an idle cause named from such a trace is a lower
bound: the time can only be placed in the operator in flight.

The rule, on columns: at least `MIN_CALLS` runtime calls, every one of them tied (by flow
or correlation id) to a GPU event it launched, and no `deviceProperties`. A trace as
torch.profiler writes it records device properties and at least a few runtime calls
without GPU work (a synchronise, an event record, an allocation), so it never matches (none
of the shared traces does); a trace of fewer launches is too small to tell.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from .model import TraceModel
from .schema import LAUNCH_CATEGORIES

MIN_CALLS = 10
# what the idle card says of a filtered host side (findings/drafting/system_drafts.py)
PARTIAL_HOST = (
    "The host side of this trace was filtered to its launch calls (no event record or stream "
    "wait, no synchronise, allocation or free, no deviceProperties): the named cause is a "
    "lower bound, and idle that such a call caused is filed under the operator in flight."
)


class FilteredHost(BaseModel):
    """The evidence that the host side was filtered."""

    model_config = ConfigDict(frozen=True)

    runtime_calls: int  # every one of them launched a GPU event
    device_properties: bool  # False: the trace has no deviceProperties either

    def describe(self) -> str:
        return (
            f"every one of the {self.runtime_calls:,} runtime calls in the trace launched a "
            "GPU event: no event record or stream wait, no synchronise, no allocation or free "
            "call is left, and the trace has no deviceProperties, as when an exporter filters "
            "or samples the host side"
        )


def filtered_host(model: TraceModel) -> FilteredHost | None:
    """The evidence when `model`'s host side looks filtered to its launches, else None."""
    if model.trace.meta.devices:
        return None
    runtime = np.flatnonzero(model.events["cat"].isin(LAUNCH_CATEGORIES).to_numpy())
    calls = len(runtime)
    if calls < MIN_CALLS or not np.isin(runtime, model.gpu["launch"].to_numpy()).all():
        return None
    return FilteredHost(runtime_calls=calls, device_properties=False)
