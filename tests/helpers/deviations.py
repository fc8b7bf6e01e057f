"""Reference rows where one of our deliberate fixes applies, with our own value for each.

`Deviation` names the rows (op, Input Dims, Input type) and our hand-derived values;
`mismatches` compares our Work for a reference row with TraceLens's numbers or with the
deviation's. The tables: GEMM/CONV/SDPA rows (`MATRIX_DEVIATIONS`) and elementwise, reduce,
norm and fused rows (`VECTOR_DEVIATIONS`); docs/deviations.md says why each differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rooflens.analyzers.perf.base import PerfModel, Work
from tests.helpers.golden import ReferenceRow


@dataclass(frozen=True)
class Deviation:
    """Reference rows where a deliberate fix applies, with our own hand-derived values."""

    op: str
    reason: str
    input_dims: str | None = None  # the row's `Input Dims` text; None: every row of `op`
    gflops: float | None = None  # ours; None: same as TraceLens
    data_moved_mb: float | None = None
    params: Mapping[str, Any] = field(default_factory=dict)  # ours, for these keys
    input_type: str | None = None  # the row's `Input type` text, where dims are not enough

    def applies(self, row: ReferenceRow) -> bool:
        return self.matches(row.args.name, row.row["Input Dims"], row.row["Input type"])

    def matches(self, name: str, input_dims: str, input_type: str) -> bool:
        return (
            name == self.op
            and (self.input_dims is None or input_dims == self.input_dims)
            and (self.input_type is None or input_type == self.input_type)
        )


TOLERANCE = 0.005  # TraceLens's numbers: within 0.5 %
EXACT = 1e-12  # our own hand-derived values


def normalise(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(normalise(v) for v in value)
    return value


def within(ours: float, ref: float, tolerance: float) -> bool:
    return abs(ours - ref) <= tolerance * abs(ref)


def mismatches(
    row: ReferenceRow,
    work: Work,
    deviation: Deviation | None,
    skip_params: frozenset[str] = frozenset(),
) -> dict[str, tuple[Any, Any]]:
    """{what: (ours, expected)} for one modelled reference row; empty when it matches."""
    gflops, mb = work.flops / 1e9, (work.bytes or 0.0) / 2**20
    want_gflops, want_mb = row.number("GFLOPS"), row.number("Data Moved (MB)")
    want_params = {k: v for k, v in (row.perf_params or {}).items() if k not in skip_params}
    tol_gflops = tol_mb = TOLERANCE
    if deviation is not None:
        if deviation.gflops is not None:
            want_gflops, tol_gflops = deviation.gflops, EXACT
        if deviation.data_moved_mb is not None:
            want_mb, tol_mb = deviation.data_moved_mb, EXACT
        want_params |= dict(deviation.params)
    found: dict[str, tuple[Any, Any]] = {}
    if not within(gflops, want_gflops, tol_gflops):
        found["GFLOPS"] = (gflops, want_gflops)
    if work.bytes is None or not within(mb, want_mb, tol_mb):
        found["Data Moved (MB)"] = (mb if work.bytes is not None else None, want_mb)
    ours_params = {k: normalise(v) for k, v in work.params.items()}
    for key in sorted(set(ours_params) | set(want_params)):
        if ours_params.get(key, "<absent>") != normalise(want_params.get(key, "<absent>")):
            found[f"param {key}"] = (ours_params.get(key), want_params.get(key))
    if row.row["Compute Spec"] != work.compute_spec:
        found["Compute Spec"] = (work.compute_spec, row.row["Compute Spec"])
    return found


def is_sole_backward(row: ReferenceRow, model: PerfModel) -> bool:
    """A forward op name in a backward category: its row carries the backward pass."""
    return model.backward is not None and row.row["op category"] == model.bwd_category


def reference_work(row: ReferenceRow, models: Mapping[str, PerfModel]) -> Work:
    """Our Work for a reference row: forward, or backward for a sole-backward row."""
    model = models[row.args.name]
    formula = model.backward if is_sole_backward(row, model) else model.forward
    assert formula is not None
    return formula(row.args)


# --- GEMM, CONV and SDPA rows --------------------------------------------------------------

_CONV_BIAS = (
    "aten::convolution bias is the optional tensor input 2; TraceLens tests len(Input Dims) "
    "== 3, never true on real traces (9 entries), so a real bias adds no FLOPs and no bytes"
)

MATRIX_DEVIATIONS: dict[str, Deviation] = {
    # x (4,3,224,224), w (768,3,16,16), stride 16 -> out (4,768,14,14) = 602,112 elements.
    # FLOPs 2·768·602,112 = 924,844,032 + bias 602,112 = 925,446,144.
    # bytes (602,112 + 589,824 + 602,112)·2 = 3,588,096 + bias 768·2 = 3,589,632 B.
    "conv_fwd_bias/falconsai": Deviation(
        "aten::convolution",
        _CONV_BIAS,
        "((4, 3, 224, 224), (768, 3, 16, 16), (768,), (), (), (), (), (), ())",
        gflops=0.925446144,
        data_moved_mb=3_589_632 / 2**20,
        params={"bias": True},
    ),
    # x (128,3,224,224) = 19,267,584, out (128,768,14,14) = 19,267,584, w = 589,824.
    # FLOPs 2·768·19,267,584 = 29,595,009,024 + 19,267,584 = 29,614,276,608.
    # bytes (19,267,584·2 + 589,824)·2 = 78,249,984 + 1,536 = 78,251,520 B.
    "conv_fwd_bias/timesformer": Deviation(
        "aten::convolution",
        _CONV_BIAS,
        "((128, 3, 224, 224), (768, 3, 16, 16), (768,), (), (), (), (), (), ())",
        gflops=29.614276608,
        data_moved_mb=78_251_520 / 2**20,
        params={"bias": True},
    ),
    # numbers unchanged (output_mask[2] is False on every reference row: no grad-bias)
    "conv_bwd_bias_param": Deviation(
        "aten::convolution_backward",
        "perf_params bias is a bool read from output_mask[2] (else a non-empty bias_sizes); "
        "TraceLens stores Input Dims[3] raw, the shape of the bias_sizes int list, always []",
        params={"bias": False},
    ),
}


# --- elementwise, reduce, norm and fused rows ---------------------------------------------

_REDUCE = "§10.22: output elements from the dim/keepdim Concrete Inputs (TraceLens: always 1)"
_AFFINE = "§10.23: affine/bias only when the optional tensor has a shape (TraceLens: always)"
_BOOL = "dtypes: bool is 1 byte (TraceLens: unknown size, no Data Moved)"
_NO_AFFINE = {"is_affine": False, "has_bias": False}

VECTOR_DEVIATIONS: dict[str, Deviation] = {
    # in 16·559·1024 = 9,158,656 fp32, dim [-1] -> out 16·559 = 8,944; (in + out)·4 B
    "reduce/qwen_mean": Deviation(
        "aten::mean",
        _REDUCE,
        "((16, 559, 1024), (), (), ())",
        data_moved_mb=(9_158_656 + 8_944) * 4 / 2**20,
        params={"num_output_elems": 8_944},
    ),
    # in 1·8·768 = 6,144 bf16, dim [1] -> out 768; (6,144 + 768)·2 = 13,824 B
    "reduce/timesformer_mean": Deviation(
        "aten::mean",
        _REDUCE,
        "((1, 8, 768), (), (), ())",
        data_moved_mb=13_824 / 2**20,
        params={"num_output_elems": 768},
    ),
    # in 5184·768 = 3,981,312 bf16, dim [-1] (input 2) -> out 5,184; (in + out)·2 B
    "reduce/owlv2_linalg_norm": Deviation(
        "aten::linalg_norm",
        _REDUCE,
        "((1, 5184, 768), (), (), (), ())",
        data_moved_mb=(3_981_312 + 5_184) * 2 / 2**20,
        params={"num_output_elems": 5_184},
    ),
    # in 10·1000 bf16, dim [0] -> out 1,000; (10,000 + 1,000)·2 = 22,000 B
    "reduce/resnet_sum": Deviation(
        "aten::sum",
        _REDUCE,
        "((10, 1000), (), (), ())",
        data_moved_mb=22_000 / 2**20,
        params={"num_output_elems": 1_000},
    ),
    # in 10·512·7·7 = 250,880 bf16, dims [-1, -2] -> out 5,120; (in + out)·2 = 512,000 B
    "reduce/resnet_mean": Deviation(
        "aten::mean",
        _REDUCE,
        "((10, 512, 7, 7), (), (), ())",
        data_moved_mb=512_000 / 2**20,
        params={"num_output_elems": 5_120},
    ),
    # in 8·16 = 128 fp32, dim [0] -> out 16; (128 + 16)·4 = 576 B
    "reduce/normalization_sum": Deviation(
        "aten::sum",
        _REDUCE,
        "((8, 16), (), (), ())",
        data_moved_mb=576 / 2**20,
        params={"num_output_elems": 16},
    ),
    # N = 131,072 fp32, C = 16, training: N·8 + W·C·4 with W = 2 (mean, var) + 2 (training)
    # = 1,048,576 + 256 = 1,048,832 B (TraceLens W = 6); FLOPs 6C + 5N unchanged
    "norm/batch_norm_no_weight": Deviation(
        "aten::batch_norm",
        _AFFINE,
        "((8, 16, 32, 32), (), (), (16,), (16,), (), (), (), ())",
        data_moved_mb=1_048_832 / 2**20,
        params=_NO_AFFINE,
    ),
    "norm/instance_norm_no_weight": Deviation(
        "aten::instance_norm",
        _AFFINE,
        "((8, 16, 32, 32), (), (), (), (), (), (), (), ())",
        data_moved_mb=1_048_832 / 2**20,
        params=_NO_AFFINE,
    ),
    "norm/group_norm_no_weight": Deviation(
        "aten::group_norm",
        _AFFINE,
        "((8, 16, 32, 32), (), (), (), (), ())",
        data_moved_mb=1_048_832 / 2**20,
        params=_NO_AFFINE,
    ),
    # C = 16·32·32 = 16,384: N·8 + 4·C·4 = 1,048,576 + 262,144 = 1,310,720 B = 1.25 MB
    "norm/layer_norm_no_weight": Deviation(
        "aten::layer_norm",
        _AFFINE,
        "((8, 16, 32, 32), (), (), (), (), ())",
        data_moved_mb=1.25,
        params=_NO_AFFINE,
    ),
    # C = 16 / 4 groups = 4, training, mask[0]: N·4 + 2·N·4 + C·4 = 1,572,880 B; FLOPs 9N same
    "norm/group_norm_backward_no_weight": Deviation(
        "aten::native_group_norm_backward",
        _AFFINE,
        "((8, 16, 32, 32), (8, 16, 32, 32), (8, 4), (8, 4), (), (), (), (), (), ())",
        data_moved_mb=1_572_880 / 2**20,
        params=_NO_AFFINE,
    ),
    # C = 16: N·4 + 2·N·4 + C·4 = 1,572,864 + 64 = 1,572,928 B
    "norm/batch_norm_backward_no_weight": Deviation(
        "aten::native_batch_norm_backward",
        _AFFINE,
        "((8, 16, 32, 32), (8, 16, 32, 32), (), (16,), (16,), (16,), (16,), (), (), ())",
        data_moved_mb=1_572_928 / 2**20,
        params=_NO_AFFINE,
    ),
    # N = 131,072, C = 128: 3·N·4 + C·4 = 1,572,864 + 512 = 1,573,376 B
    "norm/batch_norm_backward_no_weight_c128": Deviation(
        "aten::native_batch_norm_backward",
        _AFFINE,
        "((1, 128, 32, 32), (1, 128, 32, 32), (), (), (), (128,), (128,), (), (), ())",
        data_moved_mb=1_573_376 / 2**20,
        params=_NO_AFFINE,
    ),
    # mask [True, False], no weight: FLOPs N + 6N = 917,504; bytes 3·N·4 = 1,572,864 B = 1.5 MB
    "norm/rms_norm_backward_no_weight": Deviation(
        "aten::_fused_rms_norm_backward",
        _AFFINE,
        "((8, 16, 32, 32), (8, 16, 32, 32), (), (8, 16, 1, 1), (), ())",
        gflops=917_504 / 1e9,
        data_moved_mb=1.5,
        params={"is_affine": False},
    ),
    # C = 1,024, no weight: FLOPs 128·(2·1024 + 2) + N = 262,400 + 131,072 = 393,472;
    # bytes 2·N·4 = 1,048,576 B = 1 MB
    "norm/rms_norm_no_weight": Deviation(
        "aten::_fused_rms_norm",
        _AFFINE,
        "((8, 16, 32, 32), (), (), ())",
        gflops=393_472 / 1e9,
        data_moved_mb=1.0,
        params={"is_affine": False},
    ),
    # one bool element in, one out: 2 B
    "dtype/copy_bool": Deviation(
        "aten::copy_",
        _BOOL,
        "((1,), (1,), ())",
        data_moved_mb=2 / 2**20,
        input_type="('bool', 'bool', 'Scalar')",
    ),
    # 25 bool in, 25 bf16 out: 25·(1 + 2) = 75 B
    "dtype/copy_bool_to_bf16": Deviation(
        "aten::copy_",
        _BOOL,
        "((1, 1, 5, 5), (1, 1, 5, 5), ())",
        data_moved_mb=75 / 2**20,
        input_type="('bool', 'c10::BFloat16', 'Scalar')",
    ),
}
