"""Tests for model identification from the unified perf summary."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.findings.composing.model_info import (
    UNKNOWN,
    ModelIdentification,
    condensed_csv,
    merged_identity,
    model_identification,
    module_names,
    op_rows,
)
from rooflens.analyzers.pipeline.folder import RunFolder

COLUMNS = ["name", "Input type", "Input Dims", "operation_count", "call_stack_full"]
BF16 = "c10::BFloat16"


def _stack(*modules: str) -> list[str]:
    frames = ["runner.py(1): main"]
    for m in modules:
        frames += [f"nn.Module: {m}", "torch/nn/modules/module.py(1755): _call_impl"]
    return frames


def _row(name: str, types: list, dims: list, count: int = 1, stack: list | None = None) -> dict:
    """One row of the perf report's unified table (structured cells as Python objects)."""
    return {
        "name": name,
        "Input type": types,
        "Input Dims": dims,
        "operation_count": count,
        "call_stack_full": stack or [],
    }


def _rows(rows: list[dict], columns: list[str] = COLUMNS) -> list[dict[str, str]] | None:
    """The rows model identification reads, from a unified table of `rows`."""
    frame = pd.DataFrame(rows)
    return op_rows(frame[[c for c in columns if c in frame.columns]].assign(extra=1.0))


def _llama_rows(layers: int = 4, indexed: bool = True) -> list[dict]:
    rows = []
    for i in range(layers):
        layer = f"LlamaDecoderLayer_{i}" if indexed else "LlamaDecoderLayer"
        stack = _stack("LlamaModel", layer, "LlamaAttention", "Linear")
        rows.append(_row("aten::mm", [BF16, BF16], [[32, 256], [256, 256]], 2, stack))
    rows.append(_row("aten::addmm", [BF16, BF16, BF16, "Scalar"], [[688], [32, 256], [256, 688],
                                                                  []]))  # fmt: skip
    rows.append(_row("aten::_scaled_dot_product_flash_attention", [BF16] * 3,
                     [[1, 4, 32, 64]] * 3, layers, _stack("LlamaAttention")))  # fmt: skip
    rows.append(_row("aten::embedding", [BF16, "long int"], [[32000, 256], [32]], 1,
                     _stack("LlamaModel", "Embedding")))  # fmt: skip
    rows.append(_row("aten::mul", ["float", "float"], [[32, 999], [32, 999]], 50))
    return rows


def _known(rows: list[dict]) -> list[dict[str, str]]:
    found = _rows(rows)
    assert found is not None
    return found


def _llama(layers: int = 4, indexed: bool = True) -> list[dict[str, str]]:
    return _known(_llama_rows(layers, indexed))


def test_module_names_parse_json_stacks() -> None:
    rows = _rows(_llama_rows(2))
    assert rows is not None
    assert json.loads(rows[0]["call_stack_full"])[1] == "nn.Module: LlamaModel"  # JSON text
    assert module_names(rows) == [
        "Embedding", "Linear", "LlamaAttention", "LlamaDecoderLayer_0", "LlamaDecoderLayer_1",
        "LlamaModel",
    ]  # fmt: skip


def test_identification_from_shapes() -> None:
    info = model_identification(_llama(4))
    assert info.model == "Llama"
    assert "decoder-only" in info.architecture
    assert (info.hidden_size, info.num_layers, info.vocab_size) == (256, 4, 32000)
    assert info.precision == "bf16"
    params = 12 * 4 * 256**2 + 32000 * 256  # ≈ 11.3M
    assert params < 0.05e9
    assert info.scale == "~11M"
    assert info.confidence == "high"
    assert any("12·L·h² + V·h" in e for e in info.evidence)
    assert any("LlamaDecoderLayer_<n>" in e for e in info.evidence)


def test_layer_count_falls_back_to_attention_ops() -> None:
    info = model_identification(_llama(6, indexed=False))
    assert info.num_layers == 6
    assert any("attention op" in e for e in info.evidence)


def test_unknown_family_and_scale() -> None:
    rows = [_row("aten::mm", ["float", "float"], [[8, 64], [64, 64]], 3, _stack("MyNet"))]
    info = model_identification(_known(rows))
    assert info.model == UNKNOWN and info.scale == UNKNOWN
    assert info.precision == "fp32"
    assert info.hidden_size is None  # only bf16/fp16 inputs vote for the hidden size
    assert info.confidence == "low"


@pytest.mark.parametrize(
    ("modules", "family"),
    [
        (["ResNet", "Bottleneck", "Conv2d"], "ResNet"),
        (["Qwen2Model", "Qwen2DecoderLayer"], "Qwen2"),
        (["FluxTransformer2DModel", "FluxSingleTransformerBlock"], "Flux"),
        (["ViTModel", "ViTLayer"], "ViT"),
        (["BertModel", "BertLayer", "Linear"], "BERT"),
        (["Owlv2ForObjectDetection", "Owlv2VisionModel"], "OWLv2"),
        (["TimesformerModel"], "TimeSformer"),
        (["Sequential", "Conv2d"], UNKNOWN),
    ],
)
def test_family_rules(modules: list[str], family: str) -> None:
    rows = [_row("aten::relu", ["float"], [[1, 8]], 1, _stack(*modules))]
    assert model_identification(_known(rows)).model == family


def test_no_unified_table() -> None:
    assert op_rows(None) is None
    info = model_identification([])
    assert info.model == UNKNOWN and info.confidence == "low"


def test_missing_columns() -> None:
    assert _rows(_llama_rows(1), columns=["name", "Input Dims"]) is None


def test_write_metadata_files(tmp_path: Path) -> None:
    rows = _llama(2)
    info = model_identification(rows)
    RunFolder(tmp_path).write_identity(rows, info)
    with (tmp_path / layout.CONDENSED_OPS).open(newline="") as f:
        written = list(csv.reader(f))
    assert written == list(csv.reader(io.StringIO(condensed_csv(rows))))
    assert written[0] == ["name", "Input type", "Input Dims"]
    assert written[1][0] == "aten::mm" and json.loads(written[1][2]) == [[32, 256], [256, 256]]
    assert len(written) == 1 + len(_llama_rows(2))
    names = (tmp_path / layout.NN_MODULES).read_text().splitlines()
    assert names == sorted(set(names)) and "LlamaModel" in names
    saved = json.loads((tmp_path / layout.MODEL_INFO).read_text())
    assert saved["model"] == info.model == "Llama"
    assert saved["source"] == "trace_inference"
    assert layout.MODEL_INFO == "metadata/model_info.json"


def test_submitted_model_info_wins(tmp_path: Path) -> None:
    rows = _llama(2)
    submitted = ModelIdentification(model="Llama-3.2-1B", scale="1.2B", hidden_size=None)
    info = merged_identity(model_identification(rows), submitted)
    assert info.model == "Llama-3.2-1B" and info.scale == "1.2B"
    assert info.precision == "bf16"  # what was not submitted stays the inference's
    assert info.hidden_size == 256  # a null submitted value does not erase the inference
    assert info.source == "submitted"
    assert info.evidence[-1] == "submitted model_info.json overrides the trace inference"
    assert merged_identity(model_identification(rows), None).source == "trace_inference"
    RunFolder(tmp_path).write_identity(rows, info)
    saved = json.loads((tmp_path / layout.MODEL_INFO).read_text())
    assert saved["model"] == "Llama-3.2-1B" and saved["num_layers"] == 2


def test_submitted_nulls_keep_the_inference(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    path = tmp_path / layout.SUBMITTED_MODEL
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"model": "Llama-3.2-1B", "architecture": None, "precision": None}))
    submitted = folder.read_submitted_identity()
    assert submitted is not None  # null text fields no longer refuse the whole file
    info = merged_identity(model_identification(_llama(2)), submitted)
    assert info.model == "Llama-3.2-1B"
    assert info.precision == "bf16" and info.architecture != "unknown"
