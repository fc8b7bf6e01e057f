"""SGLang paged attention and store_cache, aiter CK norms, triton_kernels routing, SageAttention
and small ATen ops: FLOPs and bytes counted by hand in each test's docstring or comments."""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf import registry
from rooflens.analyzers.perf.base import OpArgs, Unsupported
from rooflens.analyzers.perf.categories import default_table
from rooflens.analyzers.trace.op_names import normalised_name

BF16, FP8, I8, F32, LONG, INT = (
    "c10::BFloat16",
    "c10::Float8_e4m3fnuz",
    "signed char",
    "float",
    "long int",
    "int",
)
PA = "sglang_profiler::attention_paged_attention_ragged"
PA_KERNEL = (
    "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, "
    "(vllm::Fp8KVCacheDataType)0, 1, 8, 256, false, 2, 1, ck_tile::X>(...)"
)
# two decode requests with 14 and 16 keys: sq = 2, sk = 30, sqsq = 2, sqsk = 30
DECODE = "execute_2_context_0(sq0sk0sqsq0sqsk0)_generation_2(sq2sk30sqsq2sqsk30)"


def run(name: str, dims, types, concrete=(), **context):
    args = OpArgs(name, tuple(dims), tuple(types), (), tuple(concrete), **context)
    model = registry.model_for(name)
    assert model is not None, name
    return model.forward(args)


def paged(cache=(100, 1, 2, 8), kernels=(PA_KERNEL,), annotation=DECODE):
    dims = [(2, 4, 8), (1000,), (2, 4, 8), cache, cache, (3,), (64,), (2,), (), (1,), (1,), ()]
    types = [BF16, "unsigned char", BF16, BF16, BF16, INT, INT, INT, "", F32, F32, ""]
    return run(PA, dims, types, annotation=annotation, kernels=kernels)


def test_sglang_profiler_names_drop_the_line_number() -> None:
    assert normalised_name("sglang_profiler::attention_paged_attention_ragged_100") == PA
    assert normalised_name("sglang_profiler::rmsnorm_rmsnorm2d_fwd_with_add_110") == (
        "sglang_profiler::rmsnorm_rmsnorm2d_fwd_with_add"
    )
    assert normalised_name("sglang::store_cache") == "sglang::store_cache"
    assert normalised_name("sglang_profiler::foo_v2") == "sglang_profiler::foo_v2"


def test_paged_attention_ragged_decode() -> None:
    """H_q = 4, H_kv = 2 (NHD cache [pages, 1, 2, 8], page 1 from the kernel), d = 8.
    Pairs: sqsk − (sqsq − sq)/2 = 30 − 0 = 30. FLOPs = 2·4·30·(8 + 8) = 3,840.
    Bytes = Q 2·4·8·2 = 128 + K,V 30·2·16·2 = 1,920 + O 128 = 2,176."""
    work = paged()
    assert work.flops == 3840
    assert work.bytes == 2176
    assert work.compute_spec == "matrix_bf16"
    assert work.params["H_KV"] == 2 and work.params["requests"] == 2


def test_paged_attention_layout_from_kernel_template() -> None:
    """HND [pages, H_kv = 2, page = 4, 8]: the kernel's BLOCK_SIZE 4 picks dim 2 as the
    page, so H_kv = 2 and the bytes match the NHD case; without the kernel: no model."""
    hnd_kernel = PA_KERNEL.replace("0, 1, 8, 256", "0, 4, 8, 256")
    assert paged(cache=(25, 2, 4, 8), kernels=(hnd_kernel,)).bytes == 2176
    with pytest.raises(Unsupported, match="layout"):
        paged(cache=(25, 2, 4, 8), kernels=())
    with pytest.raises(Unsupported, match="annotation"):
        paged(annotation="")


def test_store_cache() -> None:
    """k, v [3, 16] bf16 into [100, 16] caches at int64 indices [3]: n = 48 per tensor.
    Bytes = 48·2 (k) + 48·2 (v) + 3·8 (indices) + 48·2 + 48·2 (cache writes) = 408;
    FLOPs = elements written = 96."""
    dims = [(3, 16), (3, 16), (100, 16), (100, 16), (3,), (), ()]
    types = [BF16, BF16, BF16, BF16, LONG, "Scalar", "Scalar"]
    work = run("sglang::store_cache", dims, types, ("", "", "", "", "", "32", "0"))
    assert (work.flops, work.bytes) == (96, 408)


def test_aiter_ck_norms() -> None:
    """[4, 8] bf16, weight [8]: N = 32, E = 4 rows, C = 8.
    with_add: FLOPs = N + E·(2C + 2) + 2N = 32 + 72 + 64 = 168; bytes = 4·32·2 + 8·2 = 272.
    rms_norm: FLOPs = 72 + 64 = 136; bytes = 32·2 read + 32·2 written + 8·2 = 144."""
    x = (4, 8)
    work = run(
        "aiter::rmsnorm2d_fwd_with_add_ck",
        [x, x, x, x, (8,), (), ()],
        [BF16] * 5 + ["Scalar"] * 2,
    )
    assert (work.flops, work.bytes) == (168, 272)
    work = run("aiter::rms_norm", [x, (8,), (), ()], [BF16, BF16, "Scalar", "Scalar"])
    assert (work.flops, work.bytes) == (136, 144)


def test_triton_kernels_topk() -> None:
    """x [32, 40] bf16, k = 4, softmax: FLOPs = 32·40 + 5·32·4 = 1,280 + 640 = 1,920.
    Bytes = 32·40·2 = 2,560 + vals 32·4·2 = 256 + int16 indices 256 + bitmatrix
    ⌈40/32⌉ = 2 words · 32 rows · 4 = 256 → 3,328."""
    dims = [(32, 40), (), (), (), (), (), ()]
    types = [BF16, "Scalar", "Scalar", "Scalar", "Scalar", "", ""]
    work = run("TopK", dims, types, ("", "4", "True", "1", "True", "", ""))
    assert (work.flops, work.bytes) == (1920, 3328)


def test_triton_kernels_sort_tokens() -> None:
    """expt_scal [32, 4] bf16, expt_indx [32, 4] int16, E = 32: 128 gates.
    Bytes = 128·2 + 128·2 (read) + bitmatrix 1·32·4 = 128 + gate_scal 128·2 = 256
    + combine/dispatch 2·128·4 = 1,024 + hist 32·4 = 128 → 2,048; FLOPs 0."""
    work = run("SortTokens", [(32, 4), (32, 4), ()], [BF16, "short int", "Scalar"], ("", "", "32"))
    assert (work.flops, work.bytes) == (0, 2048)
    assert work.unit == "vector"


def test_sage_fwd() -> None:
    """q, k int8 and v fp8 [1, 2, 64, 16], out bf16: non-causal pairs 1·2·64·64 = 8,192.
    FLOPs = 2·8,192·(16 + 16) = 524,288. Bytes = 3·2,048 (q, k, v at 1 byte) + 2,048·2 (out)
    + descales (2·1 + 2·2 + 2·16)·4 = 152 → 10,392."""
    qkv = (1, 2, 64, 16)
    dims = [qkv, qkv, qkv, (), (1, 2, 1), (1, 2, 2), (1, 2, 16), *([()] * 9), qkv]
    types = [I8, I8, FP8, "Scalar", F32, F32, F32, *(["Scalar"] * 9), BF16]
    work = run("sage_fwd_1", dims, types)
    assert (work.flops, work.bytes) == (524288, 10392)
    assert work.compute_spec == "matrix_int8"
    assert default_table().category("sage_fwd_1", None) == "SDPA_fwd"


def test_sage_quant() -> None:
    """q, k, v bf16 [1, 2, 64, 16] (2,048 elements each) to int8, int8, fp8 with scales of
    2, 4 and 32 floats: FLOPs = 4·3·2,048 = 24,576; bytes = 3·2,048·2 (read) + 3·2,048·1
    (written) + 38·4 = 12,288 + 6,144 + 152 = 18,584."""
    x = (1, 2, 64, 16)
    dims = [x, x, (1, 2, 1), x, x, (1, 2, 2), x, x, (1, 2, 16)]
    types = [BF16, I8, F32, BF16, I8, F32, BF16, FP8, F32]
    work = run("sage_quant_kernel_0", dims, types)
    assert (work.flops, work.bytes) == (24576, 18584)


def test_small_aten_ops() -> None:
    # all([1, 141] bool): FLOPs 141, bytes 141 + 1
    work = run("aten::all", [(1, 141)], ["bool"], [""])
    assert (work.flops, work.bytes) == (141, 142)
    # .item() of one int64: 8 bytes, 0 FLOPs
    work = run("aten::_local_scalar_dense", [(1,)], [LONG], [""])
    assert (work.flops, work.bytes) == (0, 8)
    # arange(0, 256, 1, out=int64): 256 elements, 2,048 bytes
    dims, types = [(), (), (), (0,)], ["Scalar", "Scalar", "Scalar", LONG]
    work = run("aten::arange", dims, types, ["0", "256", "1", ""])
    assert (work.flops, work.bytes) == (256, 2048)
    # normal_ on [2, 3, 4] float: 24 elements, FLOPs 48, bytes 96
    work = run("aten::normal_", [(2, 3, 4), (), (), ()], [F32, "Scalar", "Scalar", ""])
    assert (work.flops, work.bytes) == (48, 96)


def test_max_pool2d() -> None:
    """[2, 3, 112, 112] bf16, kernel 3, stride 2, padding 1: H_o = ⌊(112 + 2 − 2 − 1)/2⌋ + 1
    = 56. N_out = 2·3·56·56 = 18,816; N_in = 75,264. FLOPs = 9·18,816 = 169,344.
    Bytes = 75,264·2 + 18,816·2 + 18,816·8 = 150,528 + 37,632 + 150,528 = 338,688.
    Backward: FLOPs = 18,816; bytes = 37,632 (grad) + 150,528 (indices) + 150,528 (grad_in)."""
    x, y = (2, 3, 112, 112), (2, 3, 56, 56)
    pool = ["", "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", "False"]
    types = [BF16, "ScalarList", "ScalarList", "ScalarList", "ScalarList", "Scalar"]
    work = run("aten::max_pool2d_with_indices", [x, (), (), (), (), ()], types, pool)
    assert (work.flops, work.bytes) == (169344, 338688)
    work = run(
        "aten::max_pool2d_with_indices_backward",
        [y, x, (), (), (), (), (), y],
        [BF16, BF16, *types[1:], LONG],
        ["", *pool, ""],
    )
    assert (work.flops, work.bytes) == (18816, 338688)
