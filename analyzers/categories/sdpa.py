"""Attention (sdpa_fwd, sdpa_bwd, inferenceattention): flash / paged detection, the paged
sub-kernel breakdown and the prefill/decode workload profile from `perf_params`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ..prepare.manifest import CategoryMetadata
from .op_row import KernelDetail, OpRow, op_rows
from .scoring import peaks

FIELDS = ("Input Dims", "Input type", "has_perf_model", "perf_params", "kernel_details_summary")
FLASH = ("flash", "fmha", "flash_attention", "flashattn")
PAGED_NAMES = ("unified_attention", "paged_attention", "vllm")
PAGED_KERNELS = ("kernel_paged_attention", "paged_attention_2d")
KERNEL_TYPES = ("reshape_cache", "fwd_kernel", "paged_attention")


def is_flash(name: str) -> bool:
    return any(word in name.lower() for word in FLASH)


def is_paged(name: str, kernels: list[str]) -> bool:
    lowered = name.lower()
    return any(w in lowered for w in PAGED_NAMES) or any(
        w in k for k in kernels for w in PAGED_KERNELS
    )


def sub_kernel_type(name: str) -> str:
    if "reshape_and_cache" in name or "reshape_cache" in name:
        return "reshape_cache"
    if "paged_attention" in name:
        return "paged_attention"
    return "fwd_kernel" if "fwd_kernel" in name else "other"


def kernel_breakdown(items: Sequence[KernelDetail]) -> dict[str, Any]:
    """Each sub-kernel typed, with its share of the summed mean durations."""
    means = [d.mean_us or 0.0 for d in items]
    total = sum(means)
    kernels = [
        {
            "name": d.name,
            "mean_us": mean,
            "kernel_type": sub_kernel_type(d.name),
            "percent": round(mean / total * 100, 2) if total else 0.0,
        }
        for d, mean in zip(items, means, strict=True)
    ]
    types = {k["kernel_type"] for k in kernels}
    return {
        "has_paged_attention_kernel": "paged_attention" in types,
        "has_fwd_kernel": "fwd_kernel" in types,
        "has_reshape_cache": "reshape_cache" in types,
        "kernels": kernels,
    }


class AttentionParams(BaseModel):
    """The keys of an attention row's `perf_params` cell the workload profile reads, values
    as the cell has them; a token sum the cell lacks is 0 (None when the row has no params)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    n_q: JsonValue = Field(None, alias="N_Q")
    n_kv: JsonValue = Field(None, alias="N_KV")
    h_q: JsonValue = Field(None, alias="H_Q")
    h_kv: JsonValue = Field(None, alias="H_KV")
    sum_ctx_tokens: JsonValue = 0
    sum_gen_tokens: JsonValue = 0

    @classmethod
    def of(cls, params: Any) -> AttentionParams:
        """The parsed cell; a cell that is not a JSON object gives no params at all."""
        if isinstance(params, dict):
            return cls.model_validate(params)
        return cls(sum_ctx_tokens=None, sum_gen_tokens=None)


def workload_profile(params: Any) -> dict[str, Any]:
    """Prefill- or decode-heavy from the summed context / generated tokens; GQA or MHA."""
    read = AttentionParams.of(params)
    h_q, h_kv = read.h_q, read.h_kv
    ctx, gen = read.sum_ctx_tokens, read.sum_gen_tokens
    tokens = (ctx or 0) + (gen or 0)
    ratio = (ctx or 0) / tokens if tokens else None
    if ratio is None:
        kind = "unknown"
    else:
        kind = "prefill_heavy" if ratio > 0.8 else "decode_heavy" if ratio < 0.2 else "mixed"
    pattern = gqa = None
    if isinstance(h_q, int) and isinstance(h_kv, int) and h_kv > 0:
        if h_kv < h_q:
            pattern, gqa = "GQA", h_q // h_kv
        elif h_kv == h_q:
            pattern = "MHA"
    return {
        "n_q": read.n_q,
        "n_kv": read.n_kv,
        "h_q": h_q,
        "h_kv": h_kv,
        "sum_ctx_tokens": ctx,
        "sum_gen_tokens": gen,
        "ctx_ratio": None if ratio is None else round(ratio, 3),
        "workload_type": kind,
        "attention_pattern": pattern,
        "gqa_ratio": gqa,
    }


def classify(row: OpRow) -> dict[str, Any]:
    name, kernels = row.name or "", row.kernels or ()
    flash, paged = is_flash(name), is_paged(name, [k.name for k in kernels])
    out: dict[str, Any] = {
        "is_flash_attention": flash,
        "is_paged_attention": paged,
        "has_perf_model": bool(row.has_perf_model),
        "attention_type": "paged" if paged else "flash" if flash else "standard",
    }
    if paged:
        out["kernel_breakdown"] = kernel_breakdown(kernels)
    out["workload_profile"] = workload_profile(row.perf_params)
    return out


def specific(ops: pd.DataFrame, metadata: CategoryMetadata) -> dict[str, Any]:
    """Flash/paged counts, kernel breakdown and workload profile of attention rows; reads
    `name`, `has_perf_model`, `perf_params` and `kernel_details_summary`."""
    classes = [classify(row) for row in op_rows(ops)]
    flash = sum(c["is_flash_attention"] for c in classes)
    paged = [c for c in classes if c["is_paged_attention"]]
    specific: dict[str, Any] = {
        "flash_attention_count": flash,
        "paged_attention_count": len(paged),
        "has_perf_model_count": sum(c["has_perf_model"] for c in classes),
        "flash_attention_detected": flash > 0,
        "paged_attention_detected": bool(paged),
        **peaks(metadata),
    }
    if paged:
        shares = {t: 0.0 for t in KERNEL_TYPES}
        for c in paged:
            for kernel in c["kernel_breakdown"]["kernels"]:
                if kernel["kernel_type"] in shares:
                    shares[kernel["kernel_type"]] += kernel["percent"]
        specific["kernel_breakdown_avg"] = {
            f"avg_{t}_percent": round(shares[t] / len(paged), 2) for t in KERNEL_TYPES
        }
    ctx = sum(c["workload_profile"]["sum_ctx_tokens"] or 0 for c in classes)
    gen = sum(c["workload_profile"]["sum_gen_tokens"] or 0 for c in classes)
    if ctx + gen > 0:
        ratio = ctx / (ctx + gen)
        kind = "prefill_heavy" if ratio > 0.8 else "decode_heavy" if ratio < 0.2 else "mixed"
        specific["workload_profile"] = {
            "total_ctx_tokens": ctx,
            "total_gen_tokens": gen,
            "ctx_ratio": round(ratio, 3),
            "profile_type": kind,
        }
    return specific
