"""What a GPU kernel's name says about its precision, its use of matrix units and its vendor
(docs/perf-models.md#kernel-names).

Used when a trace did not record shapes: the name is then all there is. Vendor libraries spell
their data types in their kernel names:

* cuBLAS/cuDNN/CUTLASS: `volta_sgemm_*`/`ampere_sgemm_*`/`*_dgemm_*` (fp32/fp64 on CUDA cores),
  `scudnn_*`/`hcudnn_*`, `implicit_convolve_sgemm`, `cutlass_80_simt_sgemm*` (SIMT);
  `h884`/`h1688`/`h16816` (fp16 tensor cores), `s1688`/`s16816` with a `bf16`/`f16` prefix
  (that precision on tensor cores, fp32 accumulation), bare `s1688gemm`/`_tf32` (TF32),
  `tensorop`/`wmma`/`imma`/`hmma` (tensor cores), `xmma_gemm_<A><B>_...` (its input type),
  `nvjet_*` (Hopper+ cuBLAS, tensor cores), `e4m3`/`e5m2`/`f8` (fp8);
* AMD Tensile/hipBLASLt `Cijk_<A>_<B>_<types>_..._MT..[_MI..]`: the type token's first type
  (`S` fp32, `D` fp64, `H` fp16, `B` bf16, `X` xf32, `I8` int8, `F8`/`B8` fp8); `MI` is an MFMA
  instruction, a macro tile (`MT`) without one runs on the vector ALUs; MIOpen/CK: `igemm_*_gtcx*`
  and `xdl`/`xdlops` (MFMA), `naive_conv_*` (VALU), `_nhwc_bf16`/`_fp16`/`_fp32` suffixes;
* templated PyTorch and library kernels: the first data type among the template arguments
  (`<float>`, `c10::Half`, `c10::BFloat16`, `double`, `__nv_bfloat16` ...), index types ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Literal

Precision = Literal["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "unknown"]
Vendor = Literal["nvidia", "amd", "unknown"]


@dataclass(frozen=True)
class KernelRead:
    """What one kernel name says. `matrix_units`: True on tensor cores/MFMA, False on CUDA
    cores/vector ALUs (SIMT/VALU), None when the name does not say. `matrix_work`: a GEMM,
    convolution or attention kernel, work that matrix units could run."""

    precision: Precision
    matrix_units: bool | None
    vendor: Vendor
    library: str | None
    matrix_work: bool


# C++ type spellings in template arguments -> precision (index types such as int are not data)
_TEMPLATE_TYPES = (
    (r"\bdouble\b", "fp64"),
    (r"\bfloat\d?\b", "fp32"),
    (r"c10::Half|__half|cutlass::half_t|\bhalf\b|_Float16", "fp16"),
    (r"c10::BFloat16|__nv_bfloat16|__hip_bfloat16|bfloat16_t|\bBF16\b", "bf16"),
    (r"Float8_e\w+|__nv_fp8\w*|float_e4m3_t|float_e5m2_t|\bFP8\b", "fp8"),
    (r"signed char|int8_t|\bI8\b", "int8"),
)
_TEMPLATE = re.compile(
    "|".join(f"(?P<t{i}>{pattern})" for i, (pattern, _) in enumerate(_TEMPLATE_TYPES))
)
# name codes, most specific first: (pattern, precision, matrix units or None)
_NAME_CODES: tuple[tuple[str, Precision, bool | None], ...] = (
    (r"e4m3|e5m2|_f8|f8f8|fp8|mxf8|_e8m0", "fp8", True),
    (r"i8816|imma|_int8|i8i8", "int8", None),
    (r"_tf32|tf32f32|tf32_", "tf32", True),
    (r"bf16|bfloat16", "bf16", None),
    (r"\bh(884|1688|16816|161616)|_h(884|1688|16816)|fp16|f16f16|_half|hcudnn|f16_", "fp16", None),
    (r"dgemm|dcudnn|_fp64|f64f64|_double", "fp64", False),
    (r"tensorop_s(1688|16816)|_s1688gemm|_s16816", "tf32", True),
    (r"sgemm|scudnn|simt_s|f32f32_f32f32", "fp32", False),
    (r"_fp32|_float\b", "fp32", None),
)
_CODES = [(re.compile(p, re.IGNORECASE), prec, mu) for p, prec, mu in _NAME_CODES]
_MATRIX_UNITS = re.compile(
    r"(?-i:tensorop)|wmma|hmma|imma|h884|h1688|h16816|s1688|s16816|s161616|nvjet|gmma|warpgroup|"
    r"xdl|mfma|_MI\d+x\d+|gtcx|flash_fwd|flash_bwd|fmha",
    re.IGNORECASE,
)
_SIMT = re.compile(r"simt|sgemm|dgemm|[sdh]cudnn|naive_conv|gemmSN|gemv|gemmk1", re.IGNORECASE)
_MATRIX_WORK = re.compile(
    r"(?<!fb)gemm(?!v)|[sdh]cudnn|convolve|conv_(fwd|bwd|wrw)|_conv|fprop|dgrad|wgrad|"
    r"winograd|Cijk_|xmma|nvjet|(?-i:tensorop)|wmma|mfma|fmha|flash_(fwd|bwd|attn)|attn_fwd|"
    r"attn_bwd|matmul|\bbmm_|"
    r"ConvolutionForward|ConvolutionBackward",
    re.IGNORECASE,
)
_NAIVE_CONV = re.compile(r"naive_conv\w*?_(?P<t>float|half|bfloat16|ushort|double|int8)")
_NAIVE_TYPES = {"float": "fp32", "half": "fp16", "bfloat16": "bf16", "ushort": "bf16",
                "double": "fp64", "int8": "int8"}  # fmt: skip
_TENSILE = re.compile(r"Cijk_A[a-z]+_B[a-z]+_(?P<types>[A-Z][A-Za-z0-9]*)")
_TENSILE_TYPES = (
    ("F8", "fp8"), ("B8", "fp8"), ("I8", "int8"), ("D", "fp64"), ("S", "fp32"), ("X", "tf32"),
    ("H", "fp16"), ("B", "bf16"),
)  # fmt: skip
_TRITON_FUSED = re.compile(r"triton_(poi|red|per)_")
_MFMA = re.compile(r"_MI\d+x\d+")
_NVIDIA = re.compile(
    r"cudnn|cublas|cutlass|xmma|nvjet|__nv_|\b(maxwell|pascal|volta|turing|ampere|hopper)_|"
    r"\bsm\d{2,3}a?_|splitKreduce_kernel|gemmSN_|gemv2[NT]_|gemvNSP|implicit_convolve|"
    r"fmhaSm\d+|_sm\d{2,3}f?\b",
    re.IGNORECASE,
)
_AMD = re.compile(
    r"^Cijk_|__hip_|\bhip|miopen|igemm_\w+_gtc|naive_conv|\bck_|\bck::|_ZN2ck|ck_tile|aiter|"
    r"rocprim|wvSplitK|batched_transpose_|transpose_(NCHW|CNHW)|Im2d2Col|MIOpen",
)
# (pattern, library, vendor it belongs to or None for any); first match wins
_LIBRARIES: tuple[tuple[str, str, Vendor | None], ...] = (
    (r"aiter", "AITER", "amd"),
    (r"ck_tile::|ck_tile6kentry|FmhaFwd|FmhaBwd", "CK", "amd"),
    (r"(?i)hipblaslt|^Cijk_\w*_UserArgs", "hipBLASLt", "amd"),  # TensileLite's user-args GEMMs
    (r"^Cijk_", "Tensile", "amd"),  # rocBLAS's GEMMs
    (r"wvSplitK", "rocBLAS", "amd"),
    (r"splitKreduce", "rocBLAS", "amd"),
    (r"rocprim::", "rocPRIM", "amd"),
    (r"triton_", "Triton", None),
    (r"void at::native::", "PyTorch Native", None),
    # after PyTorch Native: an operation that also launches an ATen kernel stays PyTorch Native
    (r"(?i)miopen|igemm_\w+_gtc|naive_conv", "MIOpen", "amd"),
    (r"^attn_(fwd|bwd)", "AOTriton", None),  # PyTorch's flash attention on ROCm
    (r"flash_fwd|flash_bwd|pytorch_flash", "FlashAttention", "nvidia"),
    (r"cudnn|implicit_convolve", "cuDNN", "nvidia"),
    (r"cutlass_\d+_|cutlass::Kernel|cutlass3x", "CUTLASS", "nvidia"),
    (r"xmma|nvjet|cublas|gemv2[NT]_|gemvNSP|gemmSN_|gemmk1_kernel|splitKreduce|"
     r"\b(maxwell|pascal|volta|turing|ampere|hopper)_[a-z0-9_]*gemm", "cuBLAS", "nvidia"),
)  # fmt: skip
LIBRARY_ORDER = tuple(dict.fromkeys(library for _, library, _ in _LIBRARIES))
_LIBRARY_PATTERNS = [(re.compile(p), lib, v) for p, lib, v in _LIBRARIES]


@cache
def read_kernel(name: str) -> KernelRead:
    """Precision, matrix-unit use, vendor and library from a kernel name (bad input: all
    unknown)."""
    if not isinstance(name, str) or not name:
        return KernelRead("unknown", None, "unknown", None, False)
    if _TRITON_FUSED.match(name):  # a fused Triton kernel's name lists the ops it fused
        return KernelRead(*_precision(name)[:1], None, "unknown", "Triton", False)  # type: ignore[arg-type]
    vendor = kernel_vendor(name)
    precision, units = _precision(name)
    if units is None and _MATRIX_UNITS.search(name):
        units = True
    elif units is None and _SIMT.search(name):
        units = False
    if _TENSILE.match(name) and "_MT" in name:  # a macro tile with or without an MFMA
        units = _MFMA.search(name) is not None
    elif units is None and "xmma" in name:  # xmma kernels on fp32 are FFMA, else MMA
        units = precision not in ("fp32", "fp64", "unknown")
    return KernelRead(
        precision, units, vendor, kernel_library(name), bool(_MATRIX_WORK.search(name))
    )


def _precision(name: str) -> tuple[Precision, bool | None]:
    """(precision, matrix units when the precision code says) from a name."""
    tensile = _TENSILE.match(name)
    if tensile and "<" not in name:
        types = tensile.group("types")
        for prefix, precision in _TENSILE_TYPES:
            if types.startswith(prefix):
                return precision, None  # type: ignore[return-value]
    naive = _NAIVE_CONV.search(name)
    if naive:  # naive_conv_<layout>_<input>_<accumulator>_<output>
        return _NAIVE_TYPES[naive.group("t")], False  # type: ignore[return-value]
    if "<" in name:  # template arguments (and the parameter list, which agrees)
        found = _TEMPLATE.search(name, name.index("<"))
        if found:
            index = int(next(k for k, v in found.groupdict().items() if v)[1:])
            return _TEMPLATE_TYPES[index][1], None  # type: ignore[return-value]
    for pattern, precision, units in _CODES:
        if pattern.search(name):
            return precision, units
    return "unknown", None


@cache
def kernel_vendor(name: str) -> Vendor:
    """Whose kernel: NVIDIA's libraries and type names, AMD's, or unknown (PyTorch, Triton
    and other portable kernels)."""
    if _AMD.search(name):
        return "amd"
    if _NVIDIA.search(name):
        return "nvidia"
    return "unknown"


@cache
def kernel_library(name: str) -> str | None:
    """The library a kernel comes from, never a library of the other vendor: an NVIDIA
    kernel (a cuBLAS `splitKreduce_kernel`, a CUTLASS `cutlass_80_tensorop_*`) reads cuBLAS,
    CUTLASS or cuDNN, an AMD one Tensile, rocBLAS, CK ...; None when unknown."""
    vendor = kernel_vendor(name)
    for pattern, library, owner in _LIBRARY_PATTERNS:
        if owner in (None, vendor) and pattern.search(name):
            return library
    return None
