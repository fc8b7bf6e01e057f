"""Every perf model by exact op name: one registry built from the family modules."""

from __future__ import annotations

from types import MappingProxyType

from rooflens.analyzers.perf import conv, gemm, sdpa
from rooflens.analyzers.perf.base import PerfModel

MODELS: MappingProxyType[str, PerfModel] = MappingProxyType(
    {**gemm.MODELS, **conv.MODELS, **sdpa.MODELS}
)


def has_model(name: str) -> bool:
    return name in MODELS
