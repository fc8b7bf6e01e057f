"""fusion_candidates (§2.7 standalone) on small hand-written traces, one rule at a time."""

from __future__ import annotations

import json
from itertools import count

import pandas as pd
import pytest

from rooflens.analyzers.prepare.fusion import (
    FusionCandidate,
    KernelLookup,
    base_name,
    chain_label,
    data_in_out,
    dedup_by_kernel_set,
    fusion_candidates,
    gemm_norm_only,
    narrow_attention,
)
from tests.helpers.fusion_files import write_fusion_candidates
from tests.helpers.trace_builder import TraceBuilder

tb = TraceBuilder
GELU = "void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>"
MUL = "void at::native::vectorized_elementwise_kernel<4, MulFunctor<float>>"
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64"
RMSNORM = "rmsnorm2d_fwd_kernel<bf16>"
LAYER_NORM = "void at::native::vectorized_layer_norm_kernel<float, float>"


class Trace:
    """Modules of cpu_ops, each op launching one kernel; kernels run 10 µs apart."""

    def __init__(self) -> None:
        self.events: list = []
        self.correlation = count(1)
        self.t = 0.0

    def module(self, name: str, ops: list[tuple[str, str, float]], parent: str | None = None):
        start = self.t
        if parent is not None:
            self.t += 1
        inner = self.t
        self.t += 1
        for op, kernel, dur in ops:
            c = next(self.correlation)
            self.events.append(tb.cpu_op(op, self.t, 8))
            self.events += tb.launch(c, self.t + 1, 100_000 + self.t * 10, dur, kernel)
            self.t += 10
        self.events.append(tb.python_function(name, inner, self.t - inner))
        if parent is not None:
            self.t += 1
            self.events.append(tb.python_function(parent, start, self.t - start))
        self.t += 5
        return self

    def model(self, tmp_path):
        return TraceBuilder(tmp_path).model(self.events)


def by_base(candidates: list[FusionCandidate], source=None) -> dict[str, FusionCandidate]:
    return {c.base_name: c for c in candidates if c.source == source}


@pytest.mark.parametrize(
    ("raw", "base"),
    [
        ("nn.Module: BertLayer_3", "BertLayer"),
        ("nn.Module: Linear", "Linear"),
        ("layers_12", "layers"),
        ("modeling_bert.py(638): feed_forward_chunk", "modeling_bert.py(638): feed_forward_chunk"),
        ("nn.Module: Qwen2_5Attention_0", "Qwen2_5Attention"),
    ],
)
def test_base_name_strips_module_prefix_and_trailing_counter(raw, base):
    assert base_name(raw) == base


def test_chain_label_keeps_module_name_or_last_path_part():
    assert chain_label("nn.Module: BertLayer_0") == "BertLayer_0"
    assert chain_label("transformers/models/bert/modeling_bert.py(573): forward") == (
        "modeling_bert.py(573): forward"
    )


def test_instances_accumulate_under_the_first_instance(tmp_path):
    t = Trace()
    t.module("nn.Module: Block_0", [("aten::gelu", GELU, 3.0), ("aten::mul", MUL, 2.0)])
    t.module("nn.Module: Block_1", [("aten::gelu", GELU, 4.0), ("aten::mul", MUL, 1.0)])
    found = by_base(fusion_candidates(t.model(tmp_path), None))
    block = found["Block"]
    assert block.module_name == "nn.Module: Block_0"
    assert block.instance_count == 2
    assert block.kernel_count == 2 and block.eligible_kernel_count == 2
    assert [k["dur_us"] for k in block.kernels] == [3.0, 2.0]  # first instance's kernels
    assert block.total_kernel_time_us == pytest.approx(10.0)
    assert block.kernel_type_signature == ["Elementwise", "Elementwise"]
    assert block.kernel_type_summary == {"Elementwise": 2}
    assert block.parent_chain == []
    assert block.has_fused_kernel is False


def test_parent_chain_is_innermost_first(tmp_path):
    t = Trace().module(
        "nn.Module: Block_0",
        [("aten::gelu", GELU, 3.0), ("aten::mul", MUL, 2.0)],
        parent="nn.Module: Outer_0",
    )
    found = by_base(fusion_candidates(t.model(tmp_path), None))
    assert found["Block"].parent_chain == ["Outer_0"]
    # the outer module has the same two kernels: both are kept without a summary (no dedup)
    assert found["Outer"].parent_chain == []


def test_a_single_kernel_is_not_a_candidate(tmp_path):
    t = Trace().module("nn.Module: Solo_0", [("aten::gelu", GELU, 3.0)])
    assert fusion_candidates(t.model(tmp_path), None) == []


def test_already_fused_kernels_drop_the_module(tmp_path):
    t = Trace().module(
        "nn.Module: Attn_0",
        [("aten::mul", MUL, 1.0), ("aten::sdpa", "flash_fwd_kernel<bf16>", 9.0)],
    )
    assert "Attn" not in by_base(fusion_candidates(t.model(tmp_path), None))


def test_excluded_kernels_are_not_eligible(tmp_path):
    t = Trace()
    t.module("nn.Module: Comm_0", [("aten::mul", MUL, 1.0), ("c10d::ar", "ncclKernel_x", 5.0)])
    t.module(
        "nn.Module: Three_0",
        [("aten::mul", MUL, 1.0), ("aten::gelu", GELU, 1.0), ("aten::fill_", "memset_k", 1.0)],
    )
    found = by_base(fusion_candidates(t.model(tmp_path), None))
    assert "Comm" not in found  # one eligible kernel left
    three = found["Three"]
    assert [k["eligible"] for k in three.kernels] == [True, True, False]
    assert three.kernel_count == 3 and three.eligible_kernel_count == 2


def test_gemm_plus_norm_only_is_dropped_but_gemm_epilogue_is_kept(tmp_path):
    t = Trace()
    t.module("nn.Module: Norm_0", [("aten::mm", GEMM, 5.0), ("aten::rms_norm", RMSNORM, 2.0)])
    # §2.7 matches norm names literally: `layer_norm` (underscore) is not `layernorm`
    t.module("nn.Module: Ln_0", [("aten::mm", GEMM, 5.0), ("aten::layer_norm", LAYER_NORM, 2.0)])
    t.module("nn.Module: Mlp_0", [("aten::mm", GEMM, 5.0), ("aten::gelu", GELU, 2.0)])
    t.module("nn.Module: SplitK_0", [("aten::mm", GEMM, 5.0), ("aten::mm", GEMM, 1.0)])
    found = by_base(fusion_candidates(t.model(tmp_path), None))
    assert "Norm" not in found
    assert "Mlp" in found and "SplitK" in found and "Ln" in found


def test_gemm_norm_only_rule():
    def k(name, kernel_type):
        return {"name": name, "type": kernel_type}

    assert gemm_norm_only([k("g", "GEMM"), k("rmsnorm_fwd", "Normalization")])
    assert gemm_norm_only([k("c", "Conv"), k("add", "Elementwise Add"), k("x", "Copy/Cast")])
    assert not gemm_norm_only([k("g", "GEMM"), k("gelu", "Elementwise")])
    assert not gemm_norm_only([k("a", "Elementwise"), k("rmsnorm", "Normalization")])
    assert not gemm_norm_only([k("g", "GEMM"), k("g2", "GEMM")])


def test_sibling_sequences_group_single_kernel_ops_by_parent(tmp_path):
    t = Trace()
    t.module("forward_0", [("aten::gelu", GELU, 3.0), ("aten::mul", MUL, 2.0)])
    t.module("forward_1", [("aten::gelu", GELU, 1.0), ("aten::mul", MUL, 1.0)])
    candidates = fusion_candidates(t.model(tmp_path), None)
    sibling = by_base(candidates, "sibling_sequence")["forward"]
    assert sibling.instance_count == 2
    assert sibling.total_kernel_time_us == pytest.approx(7.0)
    assert [k["op"] for k in sibling.kernels] == ["aten::gelu", "aten::mul"]
    assert set(sibling.kernels[0]) == {"op", "kernel_type", "kernel_name", "dur_us", "gpu_op_uid"}
    assert sibling.kernel_type_summary == {} and sibling.parent_chain == []
    assert sibling.as_dict()["source"] == "sibling_sequence"
    assert "source" not in by_base(candidates)["forward"].as_dict()


def test_sorted_by_total_kernel_time(tmp_path):
    t = Trace()
    t.module("nn.Module: Small_0", [("aten::gelu", GELU, 1.0), ("aten::mul", MUL, 1.0)])
    t.module("nn.Module: Big_0", [("aten::gelu", GELU, 9.0), ("aten::mul", MUL, 9.0)])
    times = [c.total_kernel_time_us for c in fusion_candidates(t.model(tmp_path), None)]
    assert times == sorted(times, reverse=True)


def candidate(module_name, names, chain=(), time=1.0, source=None) -> FusionCandidate:
    kernels = [
        {"name": n, "type": "Elementwise", "dur_us": 1.0, "gpu_op_uid": i}
        for i, n in enumerate(names)
    ]
    return FusionCandidate(
        module_name=module_name,
        base_name=base_name(module_name),
        parent_chain=list(chain),
        instance_count=1,
        kernel_count=len(names),
        eligible_kernel_count=len(names),
        kernels=kernels,
        kernel_type_signature=["Elementwise"] * len(names),
        kernel_type_summary={"Elementwise": len(names)},
        has_fused_kernel=False,
        total_kernel_time_us=time,
        source=source,
    )


def test_dedup_prefers_modules_then_longer_parent_chains():
    frame = candidate("model.py(3): forward", ["a", "b"], chain=["x", "y", "z"])
    module = candidate("nn.Module: Mlp_0", ["a", "b"], chain=["x"])
    deeper = candidate("nn.Module: Inner_0", ["a", "b"], chain=["x", "y"])
    other = candidate("nn.Module: Other_0", ["b", "a"])
    kept = dedup_by_kernel_set([frame, module, deeper, other])
    assert [c.module_name for c in kept] == ["nn.Module: Inner_0", "nn.Module: Other_0"]


def test_dedup_runs_with_a_summary_and_adds_data_split(tmp_path):
    t = Trace().module(
        "nn.Module: Block_0",
        [("aten::gelu", GELU, 3.0), ("aten::mul", MUL, 2.0)],
        parent="model.py(9): forward",
    )
    summary = pd.DataFrame(
        {
            "name": ["aten::gelu"],
            "op category": ["elementwise"],
            "Input Dims": ["[[4,8]]"],
            "Data Moved (MB)": [3.0],
            "perf_params": [{"shape_in1": [4, 8]}],
            "kernel_details_summary": [[{"name": GELU}]],
        }
    )
    candidates = fusion_candidates(t.model(tmp_path), summary)
    modules = [c for c in candidates if c.source is None]
    assert [c.module_name for c in modules] == ["nn.Module: Block_0"]  # the frame collapsed
    gelu, mul = modules[0].kernels
    assert (gelu["data_in_mb"], gelu["data_out_mb"]) == (pytest.approx(2.0), pytest.approx(1.0))
    assert "data_in_mb" not in mul


def test_data_in_out_split():
    gemm = {"Data Moved (MB)": 10.0, "op category": "GEMM", "perf_params": {"M": 2, "N": 2, "K": 3}}
    # in = MK + KN = 12 parts, out = MN = 4 parts
    assert data_in_out(pd.Series(gemm)) == (pytest.approx(7.5), pytest.approx(2.5))
    assert data_in_out(pd.Series({"Data Moved (MB)": 4.0, "op category": "reduce"})) == (4.0, 0.0)
    plain = {"Data Moved (MB)": 4.0, "op category": "elementwise", "perf_params": {}}
    assert data_in_out(pd.Series(plain)) == (2.0, 2.0)
    assert data_in_out(pd.Series({"Data Moved (MB)": float("nan")})) == (None, None)


def test_attention_narrowing_keeps_the_gemm_softmax_gemm_slice():
    names = ["copy_k", "qk_gemm", "scale_k", "softmax_warp_forward", "pv_gemm", "out_add"]
    c = candidate("nn.Module: Attn_0", names)
    c.instance_count = 3
    info = {None: {"op_category": "GEMM", "data_in_mb": 1.0, "data_out_mb": 1.0}}
    lookup = KernelLookup({"qk_gemm": info, "pv_gemm": info})
    narrow_attention(c, lookup, {})
    assert c.kernel_names() == ("qk_gemm", "scale_k", "softmax_warp_forward", "pv_gemm")
    assert c.kernel_count == 4
    assert c.total_kernel_time_us == pytest.approx(12.0)  # 4 kernels x 1 µs x 3 instances


def test_lookup_prefers_the_shape_then_prefix_then_any_shape():
    lookup = KernelLookup(
        {"kernel_long_name": {"[1]": {"op_category": "A"}, "[2]": {"op_category": "B"}}}
    )
    assert lookup.get("kernel_long_name", "[2]")["op_category"] == "B"
    assert lookup.get("kernel_long", "[2]")["op_category"] == "B"  # truncated name
    assert lookup.get("kernel_long_name", "[9]")["op_category"] == "A"
    assert lookup.get("other", None) is None


def test_write_fusion_candidates_is_a_json_array(tmp_path):
    path = write_fusion_candidates(tmp_path, [candidate("nn.Module: X_0", ["a", "b"])])
    assert path == tmp_path / "category_data" / "fusion_candidates.json"
    data = json.loads(path.read_text())
    assert data[0]["base_name"] == "X" and "source" not in data[0]
    write_fusion_candidates(tmp_path, [])
    assert json.loads(path.read_text()) == []
