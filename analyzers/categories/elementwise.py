"""Elementwise: memory-bound vector ops scored against HBM bandwidth."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..prepare.manifest import CategoryMetadata

FIELDS = ("Input Dims", "Input type", "FLOPS/Byte")


def specific(ops: pd.DataFrame, metadata: CategoryMetadata) -> dict[str, Any]:
    """The only specific is the HBM roof."""
    return {"peak_hbm_bw_tbs": metadata.peak_hbm_bw_tbs}
