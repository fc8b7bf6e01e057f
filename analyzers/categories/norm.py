"""Norm (norm_fwd, norm_bwd, rmsnorm): normalisation layers scored against HBM bandwidth.
They report what elementwise reports: the HBM roof."""

from __future__ import annotations

from .elementwise import specific

__all__ = ["specific"]
