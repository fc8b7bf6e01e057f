"""A compute category scored against trace 2 (docs/compare.md#comparative-category-metrics).

In a comparative run an operation's efficiency is how close trace 1 comes to trace 2's time
for the same work: 100 × the row's `speedup (trace2/trace1)`, trace 2's time under the row's
lowest common ancestors over trace 1's time under the same ancestors — the one comparison
ratio (docs/compare.md#one-ratio). Below 100, trace 2 is faster and the gap is a measured
opportunity. It is never set below trace 1's own roofline efficiency: trace 2 cannot show more
headroom than trace 1's hardware has.

The ratio of the ancestors, not of the row: where several rows share one ancestor (four
unfused MoE operators under the `moe_layer` that trace 2 runs as one fused kernel) the row's
own time against the ancestor's whole trace-2 time would call trace 2 slower on every row
while the layer is faster.
"""

from __future__ import annotations

from typing import Any

from .models import Efficiency
from .op_row import OpRow

ROOFLINE_CAP = "[ROOFLINE CAP]"


def comparative_efficiency(row: OpRow, standalone: Efficiency) -> Efficiency:
    """The row's efficiency against trace 2 (None when the row has no comparison columns:
    none of its kernels differs from trace 2's, so the trace gives no time to set against)."""
    speedup = row.speedup
    pct = 100 * speedup if speedup is not None and speedup >= 0 else None
    roof = row.pct_roofline_mean
    warning = None
    if pct is not None and roof is not None and pct < roof:
        pct = roof
        warning = (
            f"{ROOFLINE_CAP} trace 2's time would put trace 1 at {roof:.1f}% of its own "
            "roofline or beyond, so the efficiency is held at the roofline's"
        )
    return standalone.model_copy(
        update={
            "efficiency_percent": None if pct is None else round(pct, 2),
            "warning": warning,
            "is_anomaly": False,
        }
    )


def trace2_fields(row: OpRow) -> dict[str, Any]:
    """Trace 2's time for the row's own work, its operator count under the row's common
    ancestors, and the difference, in ms (None where the row has no comparison columns).

    Trace 2's time is the row's share of its ancestors' trace-2 time: the row's own time times
    the one ratio (`speedup`), so a row's figures agree with its efficiency and rows sharing
    one ancestor add up to that ancestor's trace-2 time instead of each claiming all of it.
    `lca_trace2_time_ms` keeps the ancestors' whole trace-2 time."""
    t1, speedup, count = row.kernel_time_us, row.speedup, row.count_trace2
    t2 = t1 * speedup if t1 is not None and speedup is not None and speedup >= 0 else None
    whole = row.trace2_kernel_time_us
    return {
        "t2_time_ms": None if t2 is None else round(t2 / 1000, 3),
        "count_trace2": None if count is None else int(count),
        "difference_ms": None if t2 is None or t1 is None else round((t2 - t1) / 1000, 3),
        "lca_trace2_time_ms": None if whole is None else round(whole / 1000, 3),
    }
