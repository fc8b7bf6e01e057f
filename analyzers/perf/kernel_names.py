"""Short names for demangled C++ kernel names (docs/analysis.md#unquantified-items).

`short_kernel_name` keeps a kernel's function name and what its template arguments say that
a reader needs: the operation of a functor (`add`, `mul`, `direct_copy`, `mean`) and the
first data type (`bf16`, `fp32`): ``void at::native::batch_norm_backward_kernel<c10::BFloat16,
c10::BFloat16, float, int>(…)`` → ``batch_norm_backward_kernel<bf16>``. A name that is not a
C++ signature (Tensile `Cijk_…`, MIOpen `igemm_…`, a mangled CK name, an operator) is kept
whole, capped at `LIMIT` characters. Pure text work: the name is never trusted to be
well-formed (unbalanced brackets give the capped name).
"""

from __future__ import annotations

import re

LIMIT = 80  # characters of a name kept when it cannot be shortened
ELLIPSIS = "…"

# element types, first match by position wins; float types before integer ones
_FLOAT_TYPES = (
    (r"c10::BFloat16|__nv_bfloat16|__hip_bfloat16|\bbfloat16\b|\bbf16\b", "bf16"),
    (r"c10::Half\b|__half\b|\bhalf\b", "fp16"),
    (r"Float8_e4m3\w*|__nv_fp8_e4m3", "fp8_e4m3"),
    (r"Float8_e5m2\w*|__nv_fp8_e5m2", "fp8_e5m2"),
    (r"\bdouble\b", "fp64"),
    (r"\bfloat\b", "fp32"),
)
_INT_TYPES = (
    (r"\bbool\b", "bool"),
    (r"(?<!unsigned )\blong\b", "int64"),
    (r"(?<!unsigned )\bint\b", "int32"),
    (r"\bsigned char\b|\bint8_t\b", "int8"),
)
_FLOAT_RE = [(re.compile(p), t) for p, t in _FLOAT_TYPES]
_INT_RE = [(re.compile(p), t) for p, t in _INT_TYPES]
_WRAPPERS = {"Binary", "AUnary", "BUnary", "Unary", "CUDA", "Compare", "OpaqueType"}
# the operation a template argument names, most specific first
_OPS = (
    re.compile(r"CUDAFunctor(?:OnSelf)?_(\w+?)\b"),
    re.compile(r"binary_internal::(\w+?)Functor\b"),
    re.compile(r"\b(\w+?)_kernel_(?:cuda|impl)\b"),
    re.compile(r"\blaunch_(\w+?)\("),
    re.compile(r"\b(\w+?)Functor\b"),
    re.compile(r"\b(\w+?)Ops<"),
    re.compile(r"\b(\w+?)_functor<"),
)
_ENABLE_IF = "std::enable_if<"
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _matching(text: str, start: int) -> int:
    """Index of the '>' closing the '<' at `start`, or -1 (unbalanced)."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"<": 1, ">": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


def capped(name: str, limit: int = LIMIT) -> str:
    return name if len(name) <= limit else name[: limit - 1] + ELLIPSIS


def _operation(template: str) -> str | None:
    for pattern in _OPS:
        for found in pattern.finditer(template):
            word = found.group(1).split("::")[-1]
            if word and word not in _WRAPPERS:
                return _CAMEL.sub("_", word).lower()
    return None


def _dtype(template: str) -> str | None:
    for table in (_FLOAT_RE, _INT_RE):
        hits = [(m.start(), t) for p, t in table if (m := p.search(template))]
        if hits:
            return min(hits)[1]
    return None


def short_kernel_name(name: str, limit: int = LIMIT) -> str:
    """`function<operation, dtype>` of a demangled C++ kernel name, else `name` capped."""
    text = name.strip().replace("(anonymous namespace)::", "")
    if text.startswith(_ENABLE_IF):  # std::enable_if<…, void>::type ns::kernel<…>(…)
        end = _matching(text, len(_ENABLE_IF) - 1)
        text = text[end + 1 :].removeprefix("::type").strip() if end > 0 else text
    text = text.removeprefix("void ").strip()
    cut = re.search(r"[<(]", text)
    if cut is None or cut.start() == 0:
        return capped(name.strip(), limit)
    function = text[: cut.start()].split("::")[-1].strip()
    if not re.fullmatch(r"[A-Za-z_]\w*", function):
        return capped(name.strip(), limit)
    template = ""
    if cut.group() == "<":
        end = _matching(text, cut.start())  # unbalanced (a cut name): the rest of it
        template = text[cut.start() + 1 : end if end > 0 else None]
    parts = [p for p in (_operation(template), _dtype(template)) if p]
    if function in parts:
        parts.remove(function)
    return capped(f"{function}<{', '.join(parts)}>" if parts else function, limit)
