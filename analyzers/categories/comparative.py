"""A compute category scored against trace 2 (docs/compare.md#comparative-category-metrics).

In a comparative run an operation's efficiency is how close trace 1 comes to trace 2's time
for the same work: 100 × (t1 + delta) / t1, with t1 the row's kernel time and delta the
comparison column `delta_us (trace2 - trace1)`. Below 100, trace 2 is faster and the gap is a
measured opportunity. It is never set below trace 1's own roofline efficiency: trace 2 cannot
show more headroom than trace 1's hardware has.
"""

from __future__ import annotations

from typing import Any

from .models import Efficiency
from .op_row import OpRow

ROOFLINE_CAP = "[ROOFLINE CAP]"


def comparative_efficiency(row: OpRow, standalone: Efficiency) -> Efficiency:
    """The row's efficiency against trace 2 (None when the row has no comparison columns:
    none of its kernels differs from trace 2's, so the trace gives no time to set against)."""
    t1, delta, speedup = row.kernel_time_us, row.delta_us, row.speedup
    pct = None
    if delta is not None and t1:
        pct = 100 * (t1 + delta) / t1
    elif speedup is not None and speedup >= 0:
        pct = 100 * speedup
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
    """Trace 2's time and instance count under the row's common ancestors, and the
    difference, in ms (None where the row has no comparison columns)."""
    t2, count, delta = row.trace2_kernel_time_us, row.count_trace2, row.delta_us
    return {
        "t2_time_ms": None if t2 is None else round(t2 / 1000, 3),
        "count_trace2": None if count is None else int(count),
        "difference_ms": None if delta is None else round(delta / 1000, 3),
    }
