"""Model identification on a real run folder (Qwen1.5-0.5B-Chat on MI300X)."""

from __future__ import annotations

from pathlib import Path

from rooflens.analyzers.findings.model_info import model_identification
from rooflens.server.cli import main


def test_qwen_run_is_identified_from_modules_and_shapes(shared: Path, tmp_path: Path) -> None:
    trace = shared / "traces/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    run = tmp_path / "run"
    assert main(["analyze", str(trace), "--out", str(run), "--until", "prepared"]) == 0
    info = model_identification(run)
    assert info.model == "Qwen2"
    # hidden 1024, 24 decoder layers, vocabulary 151,936: 12·24·1024² + 151936·1024 ≈ 0.46B
    assert (info.hidden_size, info.num_layers, info.vocab_size) == (1024, 24, 151936)
    assert info.precision == "bf16"
    assert info.scale == "~0.5B"
    assert info.confidence == "high"
