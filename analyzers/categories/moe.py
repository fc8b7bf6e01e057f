"""MoE (moe_fused, moe_unfused): expert layers; NO_DATA when the run has no such category."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..prepare.manifest import CategoryMetadata
from .scoring import peaks

NO_DATA_MESSAGE = "No MoE operations found in this trace"


def specific(ops: pd.DataFrame, metadata: CategoryMetadata) -> dict[str, Any]:
    """The specifics are the roofs."""
    return peaks(metadata)
