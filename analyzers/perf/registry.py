"""Every perf model by op name: one registry built from the family modules.

`has_model` decides which ops the unified table takes whole
(docs/report-tables.md#rule-b-unified-ops);
`model_for` scores whatever op a row ends up with.
Besides ops with a formula, that includes Inductor Triton kernels and the inference ops that
TraceLens models through extensions (attention over paged KV caches, fused MoE): they are
kept as one row each so their kernels stay together, even where we have no formula yet and
their FLOPs are reported as unknown.
"""

from __future__ import annotations

from types import MappingProxyType

from . import (
    aten_misc,
    conv,
    elementwise,
    fused,
    gemm,
    inference_attention,
    moe_ogs,
    moe_routing,
    moe_trtllm,
    norm,
    reduce,
    sage,
    sdpa,
    triton,
)
from .base import PerfModel
from .categories import default_table

MODELS: MappingProxyType[str, PerfModel] = MappingProxyType(
    {
        **gemm.MODELS,
        **conv.MODELS,
        **sdpa.MODELS,
        **elementwise.MODELS,
        **reduce.MODELS,
        **norm.MODELS,
        **fused.MODELS,
        **inference_attention.MODELS,
        **moe_ogs.MODELS,
        **moe_routing.MODELS,
        **aten_misc.MODELS,
        **moe_trtllm.MODELS,
    }
)
WHOLE_OP_CATEGORIES = ("InferenceAttention", "MoE_fused", "MoE_unfused")

# Ops TraceLens models: the unified table takes these whole, so its rows keep TraceLens's
# shape. Our further models (softmax, cat, gelu, rotary embedding, ...) score the rows that
# attribution produces anyway; modelling a composite op (aten::softmax over aten::_softmax,
# aten::relu_ over aten::clamp_min_) must not change which op owns the kernels.
TRACELENS_MODELLED: frozenset[str] = (
    (
        (frozenset(gemm.MODELS) | frozenset(conv.MODELS) | frozenset(sdpa.MODELS))
        - {"aten::_convolution"}
    )
    | elementwise.TRACELENS_MODELLED
    | reduce.TRACELENS_MODELLED
    | norm.TRACELENS_MODELLED
    | (fused.TRACELENS_MODELLED)
)


def _whole_ops() -> frozenset[str]:
    table = default_table()
    return frozenset(n for n, c in table.by_name.items() if c in WHOLE_OP_CATEGORIES)


WHOLE_OPS = _whole_ops()


def model_for(name: str) -> PerfModel | None:
    """The perf model of an op name, or None."""
    found = MODELS.get(name)
    if found is None and triton.is_triton_kernel_op(name):
        return triton.TRITON_MODEL
    return found if found is not None else sage.sage_model(name)


def has_model(name: str) -> bool:
    """Whether the unified table takes this op whole (TraceLens's rule 2 set)."""
    return name in TRACELENS_MODELLED or name in WHOLE_OPS or triton.is_triton_kernel_op(name)


def has_backward(name: str) -> bool:
    """Whether the op's model defines its backward pass (the sole-backward rule)."""
    model = model_for(name)
    return model is not None and model.backward is not None and model.bwd_category is not None
