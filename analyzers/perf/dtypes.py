"""Bytes per element and precision labels of the dtype strings PyTorch writes in traces.

See docs/perf-models.md#dtypes; TraceLens's gaps fixed (docs/deviations.md#dtypes): float8_e5m2
and e5m2fnuz are fp8, signed char (int8) is int8, bool is one byte, short is two. `unsigned
char` (uint8) takes fp8's peak: fp8 tensors are often stored as uint8, and TraceLens reads
them so.
"""

from __future__ import annotations

from typing import Final

# lower-cased trace spelling -> bytes per element; fp4 packs two values per byte (0.5)
BYTES_PER_ELEMENT: Final[dict[str, float]] = {
    "double": 8,
    "long int": 8,
    "long": 8,
    "c10::complex<float>": 8,
    "float": 4,
    "scalar": 4,
    "int": 4,
    "unsigned int": 4,
    "c10::half": 2,
    "c10::bfloat16": 2,
    "short int": 2,
    "short": 2,
    "c10::float8_e4m3fnuz": 1,
    "c10::float8_e4m3fn": 1,
    "c10::float8_e5m2": 1,
    "c10::float8_e5m2fnuz": 1,
    "c10::float8_e8m0fnu": 1,
    "fp8": 1,
    "unsigned char": 1,
    "signed char": 1,
    "bool": 1,
    "c10::float4_e2m1fn_x2": 1,  # one byte holds a packed pair; shapes count pairs
    "fp4": 0.5,
    # element size known, type not: a TensorList whose kernel is instantiated on an opaque
    # N-byte type (CatArrayBatchedCopy<OpaqueType<2u>>); enough for bytes, not for precision
    "opaque1": 1,
    "opaque2": 2,
    "opaque4": 4,
    "opaque8": 8,
}

PRECISION: Final[dict[str, str]] = {
    "double": "fp64",
    "float": "fp32",
    "c10::half": "fp16",
    "c10::bfloat16": "bf16",
    "c10::float8_e4m3fnuz": "fp8",
    "c10::float8_e4m3fn": "fp8",
    "c10::float8_e5m2": "fp8",
    "c10::float8_e5m2fnuz": "fp8",
    "fp8": "fp8",
    "unsigned char": "fp8",  # fp8 tensors stored as uint8 (TraceLens reads them so)
    "signed char": "int8",
    "fp4": "fp4",
    "mxfp4": "fp4",
    "c10::float4_e2m1fn_x2": "fp4",
}


def bytes_per_element(dtype: str) -> float | None:
    """Bytes of one element, or None for a dtype we cannot size (complex, unknown)."""
    return BYTES_PER_ELEMENT.get(dtype.strip().lower())


def precision(dtype: str) -> str | None:
    """Precision label used in Compute Spec (`matrix_bf16`), or None."""
    return PRECISION.get(dtype.strip().lower())
