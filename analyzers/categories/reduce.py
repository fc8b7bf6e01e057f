"""Reduce: reductions and softmax scored against HBM bandwidth; counts softmax rows."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..prepare.manifest import CategoryMetadata


def specific(ops: pd.DataFrame, metadata: CategoryMetadata) -> dict[str, Any]:
    """`softmax_count`; reads `name`."""
    names = ops["name"].astype(str) if "name" in ops else pd.Series(dtype=str)
    return {
        "softmax_count": int(names.str.contains("softmax", regex=False).sum()),
        "peak_hbm_bw_tbs": metadata.peak_hbm_bw_tbs,
    }
