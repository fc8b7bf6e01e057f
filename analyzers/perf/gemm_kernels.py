"""What a GEMM kernel's name says about its operands' layout (docs/perf-models.md#gemm).

hipBLASLt/Tensile names spell the index order of A and B (`Cijk_Alik_Bljk_...`: A is
transposed, B is not); cuBLAS `nvjet` names end in layout letters (`..._TNT`: A transposed, B
not). Other kernels say nothing we can read reliably.
"""

from __future__ import annotations

import re
from functools import cache

_TENSILE = re.compile(r"^Cijk_A(?P<a>ilk|lik)_B(?P<b>ljk|jlk)_")
_NVJET = re.compile(r"^nvjet\w*_(?P<a>[TN])(?P<b>[TN])[TN]?$")


@cache
def gemm_transpose(kernel_name: str) -> tuple[bool, bool] | None:
    """(A transposed, B transposed) from a GEMM kernel name, or None."""
    match = _TENSILE.match(kernel_name)
    if match:
        return match.group("a") == "lik", match.group("b") == "jlk"
    match = _NVJET.match(kernel_name)
    if match:
        return match.group("a") == "T", match.group("b") == "T"
    return None
