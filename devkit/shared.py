"""The reference data folder (`../shared`): where it is, and which trace each TraceLens
reference folder was produced from (reference README table).

`shared_dir()` is the folder named by ROOFLENS_SHARED, else `shared` next to the repository;
it counts as present only when it holds `traces/`. Tests reach it through the `shared`
fixture (tests/conftest.py), which skips without it, and fails under CI.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_FIXED = {
    "b200_eager_trace": "b200/eager_trace.json.gz",
    "perf_model_normalization": "perf_model/normalization/normalization_layer_test.json.gz",
    "torch_compile_triton": "torch_compile_triton/trace.json.gz",
    "mi210_gpu_only": "mi210/gpu_only_trace/gpu_only_trace.json.gz",
    "mi300_resnet_act_checkpoint": "mi300/resnet_act_checkpoint.json.gz",
}
_PREFIXES = {"h100_": "h100/", "mi300_": "mi300/"}

REFERENCE_FOLDERS = (
    "b200_eager_trace",
    "h100_Falconsai_nsfw_image_detection__1016002",
    "h100_Qwen_Qwen1.5-0.5B-Chat__1016005",
    "h100_facebook_timesformer-base-finetuned-k400__1016002",
    "h100_gaunernst_bert-small-uncased__1016001",
    "h100_google_owlv2-large-patch14-ensemble__1016001",
    "mi210_gpu_only",
    "mi300_Falconsai_nsfw_image_detection__1016002",
    "mi300_Qwen_Qwen1.5-0.5B-Chat__1016005",
    "mi300_facebook_timesformer-base-finetuned-k400__1016002",
    "mi300_gaunernst_bert-small-uncased__1016001",
    "mi300_google_owlv2-large-patch14-ensemble__1016001",
    "mi300_resnet_act_checkpoint",
    "perf_model_normalization",
    "torch_compile_triton",
)


def shared_dir() -> Path | None:
    """The reference data folder, or None when it (or its `traces/`) is absent."""
    configured = os.environ.get("ROOFLENS_SHARED")
    candidate = Path(configured) if configured else REPO.parent / "shared"
    return candidate if (candidate / "traces").is_dir() else None


def trace_path(shared: Path, folder: str) -> Path:
    """The trace file a reference folder describes."""
    if folder in _FIXED:
        return shared / "traces" / _FIXED[folder]
    for prefix, sub in _PREFIXES.items():
        if folder.startswith(prefix):
            return shared / "traces" / sub / f"{folder[len(prefix) :]}.json.gz"
    raise KeyError(folder)
