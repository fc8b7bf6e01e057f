"""GEMM family (docs/perf-models.md#gemm): matrix multiplies, FLOPs and bytes from operand shapes.

FLOPs = B·(2·M·N·K + M·N if bias); bytes = B·(M·K·bpe_A + K·N·bpe_B + M·N·bpe_out) plus the
bias (or C) tensor's own bytes. Bytes are None when an element size is unknown.

Deliberate differences from TraceLens (docs/deviations.md, "GEMM"):
- A and B each use their own element size (TraceLens uses A's for every tensor).
- The output element size comes from the recorded output: the `out=` tensor of
  mm/addmm/bmm/baddbmm, the `out_dtype` of `_scaled_mm` (a ScalarType code in Concrete Inputs);
  otherwise the input's, and 2 bytes for 1-byte (fp8/int8) scaled GEMMs, as TraceLens.
- `aten::_scaled_mm` bias is its optional tensor input 4 (TraceLens tests `len(dims) == 3`,
  never true on real traces), and bias bytes are the bias/C tensor's real size and dtype
  (TraceLens assumes a 1×N bias of the input dtype, once per batch).
Core GEMM ops have no backward model (their backward runs as further mm/bmm ops).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import OpArgs, PerfModel, Shape, Unsupported, Work, numel
from .dtypes import bytes_per_element, precision


@dataclass(frozen=True, slots=True)
class GemmShape:
    """One (batched) matrix multiply C[b] = A[b] (M×K) · B[b] (K×N); bpe None = unknown."""

    b: int
    m: int
    n: int
    k: int
    bpe_a: float | None
    bpe_b: float | None
    bpe_out: float | None
    bias: bool = False  # adds M·N FLOPs per batch
    bias_elems: int = 0  # elements of the bias/C tensor read, for all batches together
    bpe_bias: float | None = None


def gemm_flops(s: GemmShape) -> int:
    return s.b * (2 * s.m * s.n * s.k + (s.m * s.n if s.bias else 0))


def gemm_bytes(s: GemmShape) -> float | None:
    if s.bpe_a is None or s.bpe_b is None or s.bpe_out is None:
        return None
    per_batch = s.m * s.k * s.bpe_a + s.k * s.n * s.bpe_b + s.m * s.n * s.bpe_out
    if not s.bias_elems:
        return s.b * per_batch
    if s.bpe_bias is None:
        return None
    return s.b * per_batch + s.bias_elems * s.bpe_bias


# c10::ScalarType codes, as the profiler records a `ScalarType? out_dtype` argument
SCALAR_TYPE_CODES: dict[str, str] = {
    "0": "unsigned char",
    "1": "signed char",
    "2": "short int",
    "3": "int",
    "4": "long int",
    "5": "c10::Half",
    "6": "float",
    "7": "double",
    "11": "bool",
    "15": "c10::BFloat16",
    "23": "c10::Float8_e5m2",
    "24": "c10::Float8_e4m3fn",
    "25": "c10::Float8_e5m2fnuz",
    "26": "c10::Float8_e4m3fnuz",
}

TE_PSEUDO_GEMMS = (
    "_Linear_yfwd_mm",
    "_LinearBackward_xgrad_mm",
    "_LinearBackward_wgrad_mm",
    "_LayerNormLinear_yfwd_mm",
    "_LayerNormLinearBackward_xgrad_mm",
    "_LayerNormLinearBackward_wgrad_mm",
)


def _bpe(args: OpArgs, i: int) -> float | None:
    return bytes_per_element(args.dtype(i))


def _strides(args: OpArgs, i: int) -> Shape | None:
    stride = args.stride(i)
    return tuple(stride) if isinstance(stride, tuple) else None


def _operand(args: OpArgs, i: int, rank: int) -> Shape:
    shape = args.shape(i)
    if len(shape) != rank:
        raise Unsupported(f"{args.name}: input {i} is {len(shape)}-D, expected {rank}-D")
    return shape


def _out_bpe(args: OpArgs, out: int, default: float | None) -> float | None:
    """Element size of the recorded `out=` tensor, else `default`."""
    return _bpe(args, out) if args.has_tensor(out) else default


def _work(args: OpArgs, s: GemmShape, ia: int, ib: int) -> Work:
    dtypes = (args.dtype(ia), args.dtype(ib))
    params: dict[str, Any] = {
        "M": s.m,
        "N": s.n,
        "K": s.k,
        "bias": s.bias,
        "stride_A": _strides(args, ia),
        "stride_B": _strides(args, ib),
        "dtype_A_B": dtypes,
        "B": s.b,
    }
    return Work(gemm_flops(s), gemm_bytes(s), precision(dtypes[0]), "matrix", params)


def _bias_of(args: OpArgs, i: int) -> dict[str, Any]:
    """bias=True with the real size of input `i` (the C of addmm/baddbmm, a bias vector)."""
    elems = numel(args.dims[i]) if i < len(args.dims) and isinstance(args.dims[i], tuple) else 0
    return {"bias": True, "bias_elems": elems, "bpe_bias": _bpe(args, i) if elems else None}


def mm(args: OpArgs) -> Work:
    """aten::mm(self, mat2[, out])."""
    (m, k), (_, n) = _operand(args, 0, 2), _operand(args, 1, 2)
    bpe_a = _bpe(args, 0)
    s = GemmShape(1, m, n, k, bpe_a, _bpe(args, 1), _out_bpe(args, 2, bpe_a))
    return _work(args, s, 0, 1)


def addmm(args: OpArgs) -> Work:
    """aten::addmm(self=C, mat1, mat2, beta, alpha[, out]): bias is C, always present."""
    (m, k), (_, n) = _operand(args, 1, 2), _operand(args, 2, 2)
    bpe_a = _bpe(args, 1)
    s = GemmShape(1, m, n, k, bpe_a, _bpe(args, 2), _out_bpe(args, 5, bpe_a), **_bias_of(args, 0))
    return _work(args, s, 1, 2)


def bmm(args: OpArgs) -> Work:
    """aten::bmm(self (B,M,K), mat2 (B,K,N)[, out])."""
    (b, m, k), (_, _, n) = _operand(args, 0, 3), _operand(args, 1, 3)
    bpe_a = _bpe(args, 0)
    s = GemmShape(b, m, n, k, bpe_a, _bpe(args, 1), _out_bpe(args, 2, bpe_a))
    return _work(args, s, 0, 1)


def baddbmm(args: OpArgs) -> Work:
    """aten::baddbmm(self=C, batch1, batch2, beta, alpha[, out])."""
    (b, m, k), (_, _, n) = _operand(args, 1, 3), _operand(args, 2, 3)
    bpe_a = _bpe(args, 1)
    s = GemmShape(b, m, n, k, bpe_a, _bpe(args, 2), _out_bpe(args, 5, bpe_a), **_bias_of(args, 0))
    return _work(args, s, 1, 2)


def _scaled_out_bpe(args: OpArgs, out_dtype: int | None, bpe_a: float | None) -> float | None:
    """Recorded out_dtype if any; else fp8/int8 inputs -> 2 bytes, 2/4-byte inputs -> same."""
    if out_dtype is not None:
        text = args.value(out_dtype).strip()
        dtype = SCALAR_TYPE_CODES.get(text, text)
        recorded = bytes_per_element(dtype) if dtype else None
        if recorded is not None:
            return recorded
    if bpe_a == 1:
        return 2
    return bpe_a if bpe_a in (2, 4) else None


def _scaled_mm(args: OpArgs, bias: int | None, out_dtype: int | None) -> Work:
    (m, k), (_, n) = _operand(args, 0, 2), _operand(args, 1, 2)
    bpe_a = _bpe(args, 0)
    extra = _bias_of(args, bias) if bias is not None and args.has_tensor(bias) else {}
    s = GemmShape(
        1, m, n, k, bpe_a, _bpe(args, 1), _scaled_out_bpe(args, out_dtype, bpe_a), **extra
    )
    return _work(args, s, 0, 1)


def aten_scaled_mm(args: OpArgs) -> Work:
    """aten::_scaled_mm(self, mat2, scale_a, scale_b, bias?, scale_result?, out_dtype?, ...)."""
    return _scaled_mm(args, bias=4, out_dtype=6)


def trtllm_scaled_mm(args: OpArgs) -> Work:
    """trtllm::cublas_scaled_mm(mat_a, mat_b, scale_a, scale_b, bias?, out_dtype?, ...)."""
    return _scaled_mm(args, bias=4, out_dtype=5)


def int8_linear_matmul(args: OpArgs) -> Work:
    """bitsandbytes::int8_linear_matmul(A, B): read as a scaled mm, as TraceLens does."""
    return _scaled_mm(args, bias=None, out_dtype=None)


def te_pseudo_gemm(args: OpArgs) -> Work:
    """TransformerEngine v2 pseudo GEMMs: A, B as aten::mm, output always 2 bytes."""
    if args.dtype(0) != args.dtype(1):
        raise Unsupported(f"{args.name}: A and B dtypes differ ({args.dtype(0)}, {args.dtype(1)})")
    (m, k), (_, n) = _operand(args, 0, 2), _operand(args, 1, 2)
    bpe = _bpe(args, 0)
    return _work(args, GemmShape(1, m, n, k, bpe, bpe, 2), 0, 1)


def gemm_with_dynamic_quant(args: OpArgs) -> Work:
    """vllm::gemm_with_dynamic_quant: x (M,K) and weight (N,K/pack), the first two 2-D inputs.

    As TraceLens: K from x, and x's element size for every tensor (the weight is packed).
    """
    found = [i for i, d in enumerate(args.dims) if isinstance(d, tuple) and len(d) == 2]
    if len(found) < 2:
        raise Unsupported(f"{args.name}: needs two 2-D inputs (x, weight)")
    ia, ib = found[:2]
    (m, k), (n, _) = args.shape(ia), args.shape(ib)
    bpe = _bpe(args, ia)
    return _work(args, GemmShape(1, m, n, k, bpe, bpe, bpe), ia, ib)


MODELS: dict[str, PerfModel] = {
    "aten::mm": PerfModel(mm),
    "aten::addmm": PerfModel(addmm),
    "aten::bmm": PerfModel(bmm),
    "aten::baddbmm": PerfModel(baddbmm),
    "aten::_scaled_mm": PerfModel(aten_scaled_mm),
    "trtllm::cublas_scaled_mm": PerfModel(trtllm_scaled_mm),
    "bitsandbytes::int8_linear_matmul": PerfModel(int8_linear_matmul),
    "vllm::gemm_with_dynamic_quant": PerfModel(gemm_with_dynamic_quant),
    **{name: PerfModel(te_pseudo_gemm) for name in TE_PSEUDO_GEMMS},
}
