"""Tests for model identification from the unified perf summary."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rooflens.analyzers.findings.model_info import (
    UNKNOWN,
    model_identification,
    module_names,
    read_rows,
    write_model_identification,
)

COLUMNS = ["name", "Input type", "Input Dims", "operation_count", "call_stack_full"]
BF16 = "c10::BFloat16"


def _stack(*modules: str) -> str:
    frames = ["runner.py(1): main"]
    for m in modules:
        frames += [f"nn.Module: {m}", "torch/nn/modules/module.py(1755): _call_impl"]
    return json.dumps(frames)


def _row(name: str, types: list, dims: list, count: int = 1, stack: str = "[]") -> dict:
    return {
        "name": name,
        "Input type": json.dumps(types),
        "Input Dims": json.dumps(dims),
        "operation_count": str(count),
        "call_stack_full": stack,
    }


def _write(run: Path, rows: list[dict], columns: list[str] = COLUMNS) -> Path:
    path = run / "perf_report_csvs" / "unified_perf_summary.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return run


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


def test_module_names_parse_json_stacks(tmp_path: Path) -> None:
    rows = read_rows(_write(tmp_path, _llama_rows(2)))
    assert module_names(rows) == [
        "Embedding", "Linear", "LlamaAttention", "LlamaDecoderLayer_0", "LlamaDecoderLayer_1",
        "LlamaModel",
    ]  # fmt: skip


def test_identification_from_shapes(tmp_path: Path) -> None:
    info = model_identification(_write(tmp_path, _llama_rows(4)))
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


def test_layer_count_falls_back_to_attention_ops(tmp_path: Path) -> None:
    info = model_identification(_write(tmp_path, _llama_rows(6, indexed=False)))
    assert info.num_layers == 6
    assert any("attention op" in e for e in info.evidence)


def test_unknown_family_and_scale(tmp_path: Path) -> None:
    rows = [_row("aten::mm", ["float", "float"], [[8, 64], [64, 64]], 3, _stack("MyNet"))]
    info = model_identification(_write(tmp_path, rows))
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
def test_family_rules(tmp_path: Path, modules: list[str], family: str) -> None:
    rows = [_row("aten::relu", ["float"], [[1, 8]], 1, _stack(*modules))]
    assert model_identification(_write(tmp_path, rows)).model == family


def test_missing_csv(tmp_path: Path) -> None:
    info = model_identification(tmp_path)
    assert info.model == UNKNOWN and info.confidence == "low"
    assert write_model_identification(tmp_path) is None
    assert not (tmp_path / "metadata").exists()


def test_missing_columns(tmp_path: Path) -> None:
    _write(tmp_path, _llama_rows(1), columns=["name", "Input Dims"])
    assert read_rows(tmp_path) is None


def test_write_metadata_files(tmp_path: Path) -> None:
    run = _write(tmp_path, _llama_rows(2))
    info = write_model_identification(run)
    meta = run / "metadata"
    with (meta / "condensed_op_info.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["name", "Input type", "Input Dims"]
    assert rows[1][0] == "aten::mm" and json.loads(rows[1][2]) == [[32, 256], [256, 256]]
    assert len(rows) == 1 + len(_llama_rows(2))
    names = (meta / "nn_modules.txt").read_text().splitlines()
    assert names == sorted(set(names)) and "LlamaModel" in names
    saved = json.loads((meta / "model_info.json").read_text())
    assert saved["model"] == info.model == "Llama"
    assert saved["source"] == "trace_inference"
    # re-running overwrites our own inference (not treated as submitted)
    assert write_model_identification(run).source == "trace_inference"


@pytest.mark.parametrize("location", ["model_info.json", "metadata/model_info.json"])
def test_submitted_model_info_wins(tmp_path: Path, location: str) -> None:
    run = _write(tmp_path, _llama_rows(2))
    sub = run / location
    sub.parent.mkdir(parents=True, exist_ok=True)
    sub.write_text(json.dumps({"model": "Llama-3.2-1B", "scale": "1.2B", "precision": None}))
    info = write_model_identification(run)
    assert info.model == "Llama-3.2-1B" and info.scale == "1.2B"
    assert info.precision == "bf16"  # null submitted values do not erase the inference
    assert info.source == "submitted"
    saved = json.loads((run / "metadata" / "model_info.json").read_text())
    assert saved["model"] == "Llama-3.2-1B" and saved["num_layers"] == 2
