"""Reading a perf-report cell back as a value: the one place that knows what a blank, NaN or
structured cell looks like, in memory (Python objects) or in a CSV (JSON text).

The writers (write_csv.cell_text) turn structured values into JSON text; `structured` reads
either form back, so every later stage parses cells alike (docs/report-tables.md).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


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
        return json_values(value)
    if not isinstance(value, str) or not value:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def json_values(value: Any) -> Any:
    """What the CSV's JSON text of `value` reads back as (write_csv.cell_text), without the
    text: tuples and sets as lists, numpy scalars as Python numbers, keys as JSON keys,
    anything else as its `str`."""
    if isinstance(value, dict):
        return {_json_key(k): json_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_values(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool):
        return value
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return str(value)


def _json_key(key: Any) -> str:
    """A dict key as JSON writes it (`json.dumps`: str, int, float, bool or None only)."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
