"""Kernel-name classifier: (kernel_type, perf_category, priority) from a GPU kernel name.

The shape follows TraceLens (regex rules with priorities, the best match wins, ties go to the
earlier rule, below MIN_CONFIDENCE the answer is Unknown; docs/analysis.md#kernel-types). The
rule table below is ours: a small declarative list of common kernel families. It
deliberately uses only the coarse types of the perf-category map (no fine-grained
"RMSNorm" / "Attention (flash)" duplicates), so every type has a perf category.
"""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

MIN_CONFIDENCE = 5
UNKNOWN = ("Unknown", "Others", 0)


class Rule(NamedTuple):
    pattern: str  # regex, searched case-insensitively
    kernel_type: str
    priority: int


# Ours (not TraceLens's table). Priority bands: MemCpy 30, MoE GEMM
# 22-25, norm/attention/MoE routing 18-20, activations and elementwise families 15-20,
# vendor GEMM names 12, conv 10, generic gemm/matmul/bmm 5, catch-alls below the threshold.
KERNEL_TYPE_RULES: tuple[Rule, ...] = (
    Rule(r"memcpy|memset|copybuffer|fillbuffer", "MemCpy", 30),
    Rule(r"fused_moe|moe_gemm|grouped_gemm|swiglu.*bmm|bmm.*swiglu", "MoE GEMM", 24),
    Rule(r"moe_align|topk_softmax|moe_sum|moe::dev::routing|routingindices", "MoE Routing", 20),
    Rule(r"moe::dev::finalize|finalizekernel", "MoE Finalize", 20),
    Rule(r"rotary|rope_|_rope", "Rotary Embedding", 20),
    Rule(r"reshape_and_cache|cache_store|kv_cache|concat_and_cache", "KV Cache Store", 20),
    Rule(r"quantize|quant_|_quant|fp8_cast|scaled_fp8", "Quantization", 19),
    Rule(r"flash|fmha|attn_fwd|attn_bwd|attention|paged_attn|mha_fwd|mha_bwd", "Attention", 18),
    Rule(r"layer_?norm|rms_?norm|batch_?norm|group_?norm|instance_?norm", "Normalization", 18),
    Rule(r"^triton_.*rsqrt", "Normalization", 18),
    Rule(r"softmax", "Softmax", 18),
    Rule(r"cublas|splitkreduce", "GEMM", 17),
    # PyTorch's TensorIterator wrappers outrank the functor they carry (a wrapped
    # direct_copy or CUDAFunctor_add is "Elementwise", as in the TraceLens reference outputs,
    # so GEMM + bias-add + copy modules stay fusion candidates); bare copy/add kernels below.
    Rule(r"elementwise_kernel|elementwise_grid_stride", "Elementwise", 17),
    Rule(r"elementwise_add|residual_add|fused_add_kernel|^add_kernel", "Elementwise Add", 16),
    Rule(r"direct_copy|copy_kernel|cast_kernel", "Copy/Cast", 15),
    Rule(r"reduce_kernel|reduce_1block|reduction", "Reduce", 15),
    Rule(r"elementwise|catarray|gather_kernel", "Elementwise", 14),
    Rule(
        r"cijk_|wvsplitk|nvjet_tst|kernel_gemm_xdl_cshuffle|_gemm_a16_w16|"
        r"cutlass.*gemm|sm\d+_xmma_gemm|gemv",
        "GEMM",
        12,
    ),
    Rule(r"igemm|implicit_gemm|conv(?!ert)|winograd", "Conv", 10),
    Rule(r"gemm|matmul|bmm", "GEMM", 5),
    Rule(r"norm", "Normalization", 3),
    Rule(r"^triton_", "Unknown", 2),
    Rule(r"rocprim", "Unknown", 1),
)

KERNEL_TYPE_TO_PERF_CATEGORY: dict[str, str] = {
    "Normalization": "Normalization",
    "Attention": "SDPA",
    "Linear Attention": "SDPA",
    "GDN Gating": "SDPA-GDN",
    "KV Cache Store": "Elementwise",
    "Rotary Embedding": "Elementwise",
    "Elementwise": "Elementwise",
    "MoE GEMM": "GEMM-MoE",
    "MoE Routing": "Elementwise-MoE",
    "MoE Finalize": "Elementwise-MoE",
    "MoE Quantize": "Elementwise-MoE",
    "Activation (DeepSeek fused)": "Elementwise-MoE",
    "GEMM": "GEMM",
    "Quantization": "Quantization",
    "MemCpy": "MemCpy",
    "Unknown": "Others",
}

_COMPILED = tuple(
    (re.compile(rule.pattern, re.IGNORECASE), rule.kernel_type, rule.priority)
    for rule in KERNEL_TYPE_RULES
)


@cache
def classify_kernel(name: str) -> tuple[str, str, int]:
    """(kernel_type, perf_category, priority); `("Unknown", "Others", 0)` below confidence."""
    best: tuple[str, int] | None = None
    for regex, kernel_type, priority in _COMPILED:
        if (best is None or priority > best[1]) and regex.search(name or ""):
            best = (kernel_type, priority)
    if best is None or best[1] < MIN_CONFIDENCE:
        return UNKNOWN
    kernel_type, priority = best
    return kernel_type, KERNEL_TYPE_TO_PERF_CATEGORY.get(kernel_type, "Others"), priority
