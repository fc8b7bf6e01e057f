"""Our findings seen with TraceLens's library labels
(docs/deviations.md#kernel-libraries-from-the-kernels-own-vendor).

TraceLens names only AMD and PyTorch libraries from kernel names: an NVIDIA GEMM, convolution
or attention kernel reads "Unknown" there (and cuBLAS's `splitKreduce_kernel` "rocBLAS"),
where rooflens reads cuBLAS, CUTLASS, cuDNN or FlashAttention from the kernel's own vendor
(perf/kernel_precision.py); and AMD kernels TraceLens leaves "Unknown" (MIOpen's, AOTriton's)
or calls Tensile (hipBLASLt's) are named for their library. The golden tests compare findings
after mapping ours back (`AS_TRACELENS`), and groups that then share (bound, library, bucket,
method) are one group again, their scores summed and their members united, in TraceLens's order
(score, highest first).
"""

from __future__ import annotations

from typing import Any

NVIDIA_LIBRARIES = frozenset({"cuBLAS", "CUTLASS", "cuDNN", "FlashAttention"})
# libraries TraceLens does not name from a kernel (-> "Unknown"), and those it calls otherwise
AS_TRACELENS = {
    **dict.fromkeys(NVIDIA_LIBRARIES, "Unknown"),
    "MIOpen": "Unknown",
    "AOTriton": "Unknown",
    "hipBLASLt": "Tensile",
}
KEY = ("bound_type", "library", "eff_bucket", "estimate_method")
SCORES = ("impact_score", "impact_score_low", "impact_score_high")


def as_tracelens(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`findings` with TraceLens's library labels, merged where those make one group."""
    if not any(f.get("library") in AS_TRACELENS for f in findings):
        return findings
    merged: dict[tuple, dict[str, Any]] = {}
    for f in findings:
        f = {**f, "library": AS_TRACELENS.get(f["library"], f["library"])}
        key = tuple(f[k] for k in KEY)
        if key not in merged:
            merged[key] = {**f, "members": list(f["members"])}
            continue
        group = merged[key]
        for s in SCORES:
            group[s] = round(group[s] + f[s], 2)
        group["members"] = group["members"] + list(f["members"])
    ordered = sorted(merged.values(), key=lambda g: -g["impact_score"])
    return [{**g, "rank": rank} for rank, g in enumerate(ordered, start=1)]
