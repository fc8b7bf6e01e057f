"""Precision without shapes: one compute item when fp32/fp64 matrix kernels run without matrix
units in operations that have no roofline (docs/perf-models.md#precision-without-shapes).

A trace without shapes gives the roofline nothing to work on, and every compute item of such a
run is "not quantifiable". The kernel names still say what runs: `volta_sgemm_*`, `scudnn_*`,
`cutlass_80_simt_sgemm*`, a Tensile macro tile without an MFMA instruction are fp32 GEMMs and
convolutions on CUDA cores or vector ALUs (categories/precision_mix.py). When they hold
`MIN_SHARE` % of the computation time or more, the item names them with their share and the
fix (autocast to bf16/fp16, or TF32 on NVIDIA; channels_last for convolutions), priced as an
estimate: matrix units run such work 2–4× faster than CUDA cores, so `FRACTIONS` of those
kernels' time, capped by it. It is a reading of kernel names, not a roofline, and says so.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator, Mapping

from ...categories.any_metrics import Metrics
from ...categories.models import CategoryMetrics
from ...categories.precision_mix import SimtKernel
from ...markdown_text import md_code
from ...prepare.categories import GpuUtilization
from .impact_scale import Candidate, Saving

KEY = "precision"  # the item's category: it spans the compute categories
MIN_SHARE = 20.0  # % of the computation time below which the item is not raised
FRACTIONS = (0.5, 2 / 3, 0.75)  # the time saved when the work runs 2x, 3x, 4x faster
TOP = 3  # kernels named in the title
BASIS = (
    "an estimate from the kernel names, not a roofline (no shapes): matrix units (tensor "
    "cores/MFMA) run this work 2–4× faster than {units}, so 50/67/75 % of these kernels' "
    "time is saved, capped by it"
)


def precision_candidates(
    metrics: Mapping[str, Metrics], gpu: GpuUtilization
) -> Iterator[Candidate]:
    """The precision item, when the SIMT fp32/fp64 matrix kernels of unmodelled operations
    hold at least MIN_SHARE % of the computation time."""
    kernels = [
        k
        for m in metrics.values()
        if isinstance(m, CategoryMetrics) and m.status == "OK"
        for k in m.simt_kernels or ()
    ]
    compute_ms = gpu.total_time_ms * gpu.computation_time_percent / 100
    total = sum(k.time_ms for k in kernels)
    if compute_ms <= 0 or not kernels or total / compute_ms * 100 < MIN_SHARE:
        return
    total = min(total, compute_ms)
    low, mid, high = (total * f for f in FRACTIONS)
    yield Candidate(
        category=KEY,
        kind="compute",
        title=precision_title(kernels, compute_ms),
        estimate_method="quantified",
        source_rank=1,
        saving=Saving(
            low_ms=low,
            mid_ms=mid,
            high_ms=high,
            cap_ms=total,
            pool="kernels",
            basis=BASIS.format(units=_units(kernels)),
        ),
    )


def precision_title(kernels: list[SimtKernel], compute_ms: float) -> str:
    """'fp32 SIMT kernels take 76.6 % of compute: AMP (bf16/fp16) or TF32, and channels_last
    for convolutions (`scudnn_…` 40.0 %, `volta_sgemm_…` 36.6 %)'; trace names as code spans."""
    by_kernel: dict[str, float] = defaultdict(float)
    for k in kernels:
        by_kernel[k.kernel] += k.time_ms
    top = sorted(by_kernel.items(), key=lambda kv: -kv[1])[:TOP]
    named = ", ".join(f"{md_code(name, 80)} {ms / compute_ms * 100:.1f} %" for name, ms in top)
    share = sum(by_kernel.values()) / compute_ms * 100
    precisions = "/".join(sorted({k.precision for k in kernels}, key=("fp32", "fp64").index))
    return (
        f"{precisions} {_word(kernels)} kernels take {min(share, 100.0):.1f} % of compute: "
        f"{action(kernels)} ({named})"
    )


def action(kernels: list[SimtKernel]) -> str:
    """The fix for these kernels: lower precision on the matrix units, and channels_last
    when convolutions are among them."""
    amd = all(k.vendor == "amd" for k in kernels)
    if _before_ampere(kernels):
        fix = "AMP (fp16: no bf16 or TF32 tensor cores before Ampere)"
    else:
        fix = "AMP (bf16/fp16)" if amd else "AMP (bf16/fp16) or TF32"
    if any(k.convolution for k in kernels):
        fix += ", and channels_last for convolutions"
    return fix


def precision_action(title: str) -> str:
    """The card's Action for the item (report_cards.fallback_pair): what to change in the
    training script, said once."""
    conv = "channels_last" in title
    if "before Ampere" in title:
        return (
            "Run the model under `torch.autocast(device_type='cuda', dtype=torch.float16)` "
            "with a `torch.amp.GradScaler` so GEMMs and convolutions use the fp16 tensor "
            "cores (this GPU has no bf16 or TF32 ones)"
            + (_CHANNELS_LAST if conv else "")
            + _RESHAPE
        )
    return (
        "Run the model under `torch.autocast(device_type='cuda', dtype=torch.bfloat16)` (or "
        "float16 with a GradScaler) so GEMMs and convolutions use the matrix units; where fp32 "
        "must stay, allow TF32 on NVIDIA (`torch.backends.cuda.matmul.allow_tf32 = True`, "
        "`torch.backends.cudnn.allow_tf32 = True`)" + (_CHANNELS_LAST if conv else "") + _RESHAPE
    )


_CHANNELS_LAST = (
    "; convert the model and its inputs to `torch.channels_last` so cuDNN/MIOpen pick NHWC "
    "matrix-unit kernels without layout transposes"
)
_RESHAPE = (
    ". The saving is read from kernel names (no shapes): re-profile with "
    "`record_shapes=True` to price it on the roofline."
)
_OLD_ARCH = re.compile(r"\b(maxwell|pascal|volta|turing)_|\bsm_?(5\d|6\d|7\d)_", re.IGNORECASE)


def _before_ampere(kernels: list[SimtKernel]) -> bool:
    """A kernel name says a GPU generation without bf16/TF32 tensor cores (cuBLAS's
    `volta_sgemm_*`, `turing_*`)."""
    return any(_OLD_ARCH.search(k.kernel) for k in kernels)


def _word(kernels: list[SimtKernel]) -> str:
    return "VALU" if all(k.vendor == "amd" for k in kernels) else "SIMT"


def _units(kernels: list[SimtKernel]) -> str:
    return "vector ALUs" if all(k.vendor == "amd" for k in kernels) else "CUDA cores (SIMT)"
