"""Every perf model by op name: one registry built from the family modules.

`has_model` decides which ops the unified table takes whole (perf_report.md §4.2 rule 2).
Besides ops with a formula, that includes Inductor Triton kernels and the inference ops that
TraceLens models through extensions (attention over paged KV caches, fused MoE): they are
kept as one row each so their kernels stay together, even where we have no formula yet and
their FLOPs are reported as unknown.
"""

from __future__ import annotations

from types import MappingProxyType

from rooflens.analyzers.perf import conv, gemm, sdpa, triton
from rooflens.analyzers.perf.base import PerfModel
from rooflens.analyzers.perf.categories import default_table

MODELS: MappingProxyType[str, PerfModel] = MappingProxyType(
    {**gemm.MODELS, **conv.MODELS, **sdpa.MODELS}
)
WHOLE_OP_CATEGORIES = ("InferenceAttention", "MoE_fused", "MoE_unfused")


def _whole_ops() -> frozenset[str]:
    table = default_table()
    return frozenset(n for n, c in table.by_name.items() if c in WHOLE_OP_CATEGORIES)


WHOLE_OPS = _whole_ops()


def model_for(name: str) -> PerfModel | None:
    """The perf model of an op name, or None."""
    found = MODELS.get(name)
    if found is None and triton.is_triton_kernel_op(name):
        return triton.TRITON_MODEL
    return found


def has_model(name: str) -> bool:
    """Whether the unified table takes this op whole (a model, or a known opaque op)."""
    return name in MODELS or name in WHOLE_OPS or triton.is_triton_kernel_op(name)
