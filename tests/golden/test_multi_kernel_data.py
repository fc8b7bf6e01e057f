"""multi_kernel_data against TraceLens's category_data/multi_kernel_data.json, every reference.

Counts and byte sums must be equal; times within 1e-3 relative or 0.01 µs (TraceLens writes
them rounded to 2 decimals), ratios within 1e-6, and the keys the same.

b200_eager_trace: our communication bucket also holds the symmetric-memory
`multimem_all_reduce` kernels (a documented deviation; TraceLens counts them as computation),
so there the reference is matched after moving those kernels back to computation, and our own
nccl_summary is checked against counts computed here from the trace's kernel names.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rooflens.analyzers.prepare.multi_kernel import multi_kernel_data, multi_kernel_from_frame
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import TraceModel, build_model
from tests.helpers.golden import REFERENCE_FOLDERS, trace_path

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

REFERENCE = Path("reference/tracelens")
FILE = Path("analysis_output/category_data/multi_kernel_data.json")
SYMMETRIC_MEMORY = "b200_eager_trace"


def reference_file(shared: Path, folder: str) -> Path:
    return shared / REFERENCE / folder / FILE


def _exact(where: str) -> bool:
    """Counts, byte sums and streams are compared exactly."""
    return where.endswith(("count", "total_bytes", "stream"))


def assert_close(ours: Any, ref: Any, where: str = "") -> None:
    if isinstance(ref, dict):
        assert isinstance(ours, dict), where
        assert list(ours) == list(ref), f"{where}: keys {list(ours)} != {list(ref)}"
        for key in ref:
            assert_close(ours[key], ref[key], f"{where}.{key}")
    elif isinstance(ref, list):
        assert isinstance(ours, list) and len(ours) == len(ref), where
        for i, (o, r) in enumerate(zip(ours, ref, strict=True)):
            assert_close(o, r, f"{where}[{i}]")
    elif ref is None or isinstance(ref, str) or _exact(where):
        assert ours == ref, where
    elif where.endswith("ratio"):
        assert ours == pytest.approx(ref, abs=1e-6), where
    else:
        assert isinstance(ours, int | float), where
        assert math.isclose(ours, ref, rel_tol=1e-3, abs_tol=0.01), f"{where}: {ours} != {ref}"


_models: dict[str, TraceModel] = {}


def model_of(shared: Path, folder: str) -> TraceModel:
    if folder not in _models:
        _models[folder] = build_model(load_trace(trace_path(shared, folder)))
    return _models[folder]


# TraceLens's category preparation fails on the GPU-only MI210 trace: no reference file
WITH_REFERENCE = [f for f in REFERENCE_FOLDERS if f != "mi210_gpu_only"]


@pytest.mark.parametrize("folder", WITH_REFERENCE)
def test_multi_kernel_data_matches_tracelens(shared: Path, folder: str) -> None:
    path = reference_file(shared, folder)
    ref = json.loads(path.read_text())
    model = model_of(shared, folder)
    if folder == SYMMETRIC_MEMORY:
        # TraceLens's buckets: only collective-library names are communication.
        gpu = model.gpu
        names = gpu["name"].astype(str)
        library = names.str.contains("nccl|rccl", case=False, regex=True).to_numpy()
        comm = gpu["bucket"].to_numpy() == "communication"
        assert (comm & ~library).any(), "expected symmetric-memory kernels in this trace"
        gpu = gpu.assign(bucket=np.where(comm & ~library, "computation", gpu["bucket"]))
        nbytes = model.events["bytes"].loc[gpu.index].to_numpy()
        ours = multi_kernel_from_frame(gpu, nbytes).model_dump(mode="json")
    else:
        ours = multi_kernel_data(model).model_dump(mode="json")
    assert_close(ours, ref, folder)


def test_b200_our_communication_includes_multimem(shared: Path) -> None:
    """Our b200 nccl_summary: NCCL plus multimem kernels, counted here from the names."""
    path = reference_file(shared, SYMMETRIC_MEMORY)
    ref = json.loads(path.read_text())
    model = model_of(shared, SYMMETRIC_MEMORY)
    ours = multi_kernel_data(model).model_dump(mode="json")

    events = model.events
    kernels = events[(events["cat"].astype(str) == "kernel").to_numpy()]
    pattern = re.compile(r"nccl|multimem_", re.IGNORECASE)
    is_comm = kernels["name"].astype(str).str.contains(pattern).to_numpy()
    durations = np.sort(kernels["dur"].to_numpy(dtype=np.float64)[is_comm])[::-1]
    assert len(durations) == 74  # 73 multimem_all_reduce + 1 NCCL AllGather

    nccl = ours["nccl_summary"]
    assert nccl["total_count"] == len(durations)
    assert nccl["total_time_us"] == pytest.approx(durations.sum(), abs=0.01)
    assert nccl["avg_time_us"] == pytest.approx(durations.mean(), abs=0.01)
    assert nccl["max_time_us"] == pytest.approx(durations[0], abs=0.01)
    assert [op["duration_us"] for op in nccl["top_ops"]] == pytest.approx(durations[:10], abs=0.01)
    assert all(pattern.search(op["name"]) for op in nccl["top_ops"])

    # Copies and the window are unaffected; the extra comm time moves out of computation
    # (all of it runs on one stream, so none of it was overlapped).
    assert_close(ours["memcpy_summary"], ref["memcpy_summary"], "memcpy_summary")
    overlap, ref_overlap = ours["overlap_analysis"], ref["overlap_analysis"]
    for key in ("total_time_us", "total_memcpy_time_us", "exposed_memcpy_time_us"):
        assert overlap[key] == pytest.approx(ref_overlap[key], abs=0.01), key
    moved = overlap["total_comm_time_us"] - ref_overlap["total_comm_time_us"]
    assert overlap["total_comm_time_us"] == pytest.approx(durations.sum(), abs=0.01)
    assert overlap["exposed_comm_time_us"] == overlap["total_comm_time_us"]
    assert overlap["computation_time_us"] == pytest.approx(
        ref_overlap["computation_time_us"] - moved, abs=0.02
    )
