"""What fusion_candidates.py looks up about kernels: data moved in and out, input shapes.

`KernelLookup` reads the unified perf summary (kernel name -> first input shape -> the op's
data in/out split and category); `KernelShapes` gives a GPU event's owning op's first input
shape. Both answer on demand, so only the kernels of candidates are ever looked up.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from ..report.unified import UnifiedOps
from ..trace.columns import MISSING
from ..trace.model import TraceModel


def json_cell(text: Any) -> Any:
    if isinstance(text, str):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return None if isinstance(text, float) and math.isnan(text) else text


def _shape_key(dims: Any) -> str | None:
    """The first input shape as compact JSON text (the lookup key), or None."""
    dims = json_cell(dims)
    if isinstance(dims, list | tuple) and dims:
        return json.dumps(dims[0], separators=(",", ":"))
    return None


def data_in_out(row: pd.Series) -> tuple[float | None, float | None]:
    """Split an op's `Data Moved (MB)` into what it reads and what it writes."""
    moved = row.get("Data Moved (MB)")
    if moved is None or not isinstance(moved, int | float) or math.isnan(moved):
        return None, None
    moved = float(moved)
    params = row.get("perf_params")
    params = params if isinstance(params, dict) else {}
    category = str(row.get("op category", ""))
    try:
        if category == "GEMM" and all(k in params for k in ("M", "N", "K")):
            m, n, k = (float(params[x]) for x in ("M", "N", "K"))
            inputs, output = m * k + k * n, m * n
            return moved * inputs / (inputs + output), moved * output / (inputs + output)
    except (TypeError, ValueError, ZeroDivisionError):
        return moved / 2, moved / 2
    if category == "reduce":
        return moved, 0.0
    if category == "elementwise" and "shape_in1" in params:
        return moved * 2 / 3, moved / 3
    return moved / 2, moved / 2


class KernelLookup:
    """kernel name -> {first input shape -> info}, with prefix and any-shape fallbacks."""

    def __init__(self, table: dict[str, dict[str | None, dict[str, Any]]]) -> None:
        self.table = table
        self._prefixed: dict[str, dict[str | None, dict[str, Any]] | None] = {}

    @classmethod
    def from_summary(cls, summary: pd.DataFrame) -> KernelLookup:
        table: dict[str, dict[str | None, dict[str, Any]]] = {}
        for _, row in summary.iterrows():
            details = row.get("kernel_details_summary")
            details = json_cell(details) if isinstance(details, str) else details
            if not isinstance(details, list):
                continue
            info = dict(zip(("data_in_mb", "data_out_mb"), data_in_out(row), strict=True))
            info["op_category"] = row.get("op category")
            shape = _shape_key(row.get("Input Dims"))
            for detail in details:
                name = detail.get("name") if isinstance(detail, dict) else None
                if name:
                    table.setdefault(str(name), {}).setdefault(shape, info)
        return cls(table)

    def get(self, name: str, shape: str | None) -> dict[str, Any] | None:
        shapes = self.table.get(name)
        if shapes is None:
            if name not in self._prefixed:
                self._prefixed[name] = self._by_prefix(name)
            shapes = self._prefixed[name]
        if not shapes:
            return None
        return shapes.get(shape) or next(iter(shapes.values()))

    def _by_prefix(self, name: str) -> dict[str | None, dict[str, Any]] | None:
        for known, value in self.table.items():
            if known.startswith(name) or name.startswith(known):
                return value
        return None


class KernelShapes:
    """GPU uid -> first input shape of the unified op that owns it, looked up on demand."""

    def __init__(self, model: TraceModel, unified: UnifiedOps) -> None:
        ops, owned = unified.ops, unified.kernels
        dims = model.events["input_dims"].array
        self._codes = dims.codes
        self._keys: list[str | bool | None] = [False] * (len(dims.categories) + 1)
        self._categories = dims.categories
        self._source = np.full(len(model.events), MISSING, dtype=np.int64)
        self._source[owned["gpu"].to_numpy()] = ops["source_uid"].to_numpy()[owned["op"]]

    def get(self, gpu_uid: int) -> str | None:
        source = self._source[gpu_uid]
        if source == MISSING:
            return None
        code = self._codes[source]
        key = self._keys[code]
        if key is False:
            text = None if code < 0 else self._categories[code]
            key = self._keys[code] = _shape_key(text)
        return key  # type: ignore[return-value]
