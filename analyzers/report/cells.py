"""Reading a perf-report cell back as a value: the one place that knows what a blank, NaN or
structured cell looks like, in memory (Python objects) or in a CSV (JSON text).

The writers (write_csv.cell_text) turn structured values into JSON text; `structured` reads
either form back, so every later stage parses cells alike (docs/report-tables.md).
"""

from __future__ import annotations

import json
import math
from typing import Any

from rooflens.analyzers.report.write_csv import cell_text


def finite_number(value: Any) -> float | None:
    """A finite float, or None for blanks, NaN, infinities, booleans and text."""
    if value is None or isinstance(value, bool | str):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def structured(value: Any) -> Any:
    """A structured cell as plain JSON values (lists, dicts, numbers, text): the report's
    Python objects or the JSON text of a CSV read back alike; None when blank or not JSON."""
    if isinstance(value, list | dict | tuple):
        value = cell_text(value)  # tuples and numpy scalars become what the CSV holds
    if not isinstance(value, str) or not value:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None
