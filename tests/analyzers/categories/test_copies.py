"""The copy analysis (docs/analysis.md#copies): routes and host memory from copy names, each
group against its link, and the saving estimator, with hand-computed values."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.categories.copies import PIN, analyze_copies, judge
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.prepare.copies import (
    CopyData,
    CopyGroup,
    MemsetSummary,
    copy_data,
    copy_route,
    host_memory,
)
from rooflens.analyzers.synthetic.copies import D2H, H2D, write_copy_bound_trace
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model

H100 = get_platform("H100")  # PCIe 5.0 x16, 64 GB/s one way; HBM 3350 GB/s; NVLink 4 450 GB/s


def group(name: str, *, count=1, time_us=1000.0, nbytes=0, exposed_us=None) -> CopyGroup:
    route = copy_route(name)
    return CopyGroup(
        name=name, route=route, host_memory=host_memory(name, route), count=count,
        time_us=time_us, bytes=nbytes, with_bytes=count if nbytes else 0,
        exposed_us=time_us if exposed_us is None else exposed_us, launchers=[],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "route", "memory"),
    [
        ("Memcpy HtoD (Pageable -> Device)", "H2D", "pageable"),
        ("Memcpy HtoD (Pinned -> Device)", "H2D", "pinned"),
        ("Memcpy DtoH (Device -> Pageable)", "D2H", "pageable"),
        ("Memcpy DtoH (Device -> Pinned)", "D2H", "pinned"),
        ("Memcpy HtoD (Host -> Device)", "H2D", "unknown"),  # ROCm does not say
        ("Memcpy DtoD (Device -> Device)", "D2D", "none"),
        ("Memcpy PtoP (Device -> Device)", "P2P", "none"),
        ("MEMORY_COPY_HOST_TO_DEVICE", "H2D", "unknown"),
        ("__amd_rocclr_copyBuffer", "other", "none"),
    ],
)
def test_route_and_host_memory_from_the_name(name: str, route: str, memory: str) -> None:
    assert copy_route(name) == route
    assert host_memory(name, copy_route(name)) == memory


def test_a_pageable_copy_is_pinned_to_the_link_then_overlapped() -> None:
    """T = 10 ms, half exposed, 64 MB: at 87.5 % of 64 GB/s it takes 1.142857 ms, so the
    exposed half of the speed-up is 4.428571 ms, plus half of the 0.571429 ms still exposed."""
    verdict = judge(group(H2D, time_us=10_000.0, nbytes=64_000_000, exposed_us=5_000.0), H100)
    assert verdict.link == "PCIe 5.0 x16" and verdict.link_gbps == 64.0
    assert (verdict.achieved_gbps, verdict.percent_of_link, verdict.at_link_ms) == (6.4, 10.0, 1.0)
    low, mid, high = verdict.saving_ms
    assert mid == pytest.approx(4.428571 + 0.5 * (5.0 - 4.428571), abs=1e-4)
    assert low == pytest.approx((10 - 64 / 48) * 0.5 + 0.25 * (5 - (10 - 64 / 48) * 0.5), abs=1e-4)
    assert high == pytest.approx(4.5 + 0.75 * 0.5, abs=1e-4)
    assert verdict.fixes[0] == PIN
    assert not any("fuse" in fix.lower() for fix in verdict.fixes)


def test_pinned_or_unknown_copies_get_the_overlap_share_only() -> None:
    for name in ("Memcpy HtoD (Pinned -> Device)", "Memcpy HtoD (Host -> Device)"):
        verdict = judge(group(name, time_us=4_000.0, nbytes=8_000_000), H100)
        assert verdict.saving_ms == (1.0, 2.0, 3.0)
    unknown = judge(group("Memcpy HtoD (Host -> Device)", nbytes=8_000_000), H100)
    assert unknown.fixes[0] == PIN + ", if it is pageable"


def test_tiny_pageable_copies_are_never_faster_than_the_floor() -> None:
    """1000 copies of 4 bytes in 3 ms: pinned they still take 1000 x 2 µs = 2 ms, so 1 ms
    faster, plus 25/50/75 % of the 2 ms left."""
    verdict = judge(group(D2H, count=1000, time_us=3_000.0, nbytes=4_000), H100)
    assert verdict.saving_ms == (1.5, 2.0, 2.5)
    assert "batch the small copies" in verdict.fixes[-1]


def test_device_and_peer_copies_cross_hbm_and_the_gpu_link() -> None:
    d2d = judge(group("Memcpy DtoD (Device -> Device)", time_us=100.0, nbytes=67_000_000), H100)
    assert (d2d.link, d2d.achieved_gbps, d2d.percent_of_link) == ("HBM", 1340.0, 40.0)
    assert d2d.saving_ms == (0.025, 0.05, 0.075)
    p2p = judge(group("Memcpy PtoP (Device -> Device)", time_us=100.0, nbytes=9_000_000), H100)
    assert (p2p.link, p2p.achieved_gbps, p2p.percent_of_link) == ("NVLink 4", 90.0, 20.0)


def test_without_bytes_or_a_host_link_nothing_is_measured() -> None:
    no_link = H100.model_copy(update={"host_link": None})
    verdict = judge(group(H2D, time_us=2_000.0, nbytes=64_000_000), no_link)
    assert (verdict.link, verdict.percent_of_link) == (None, None)
    assert verdict.saving_ms == (0.5, 1.0, 1.5)
    unknown_gpu = judge(group(H2D, time_us=2_000.0, nbytes=64_000_000), None)
    assert (unknown_gpu.link, unknown_gpu.link_gbps, unknown_gpu.percent_of_link) == (None,) * 3
    assert unknown_gpu.achieved_gbps == 32.0  # measured from the trace, no platform needed
    assert unknown_gpu.saving_ms == (0.5, 1.0, 1.5)  # the overlap share only
    unsized = judge(group(H2D, time_us=2_000.0), H100)
    assert (unsized.megabytes, unsized.achieved_gbps) == (None, None)
    assert unsized.saving_ms == (0.5, 1.0, 1.5)


def test_the_summary_sums_the_groups_and_keeps_the_fixes_that_matter() -> None:
    data = CopyData(
        groups=[
            group(H2D, time_us=10_000.0, nbytes=64_000_000),
            group("Memcpy DtoD (Device -> Device)", time_us=100.0, nbytes=1_000),
        ],
        memsets=MemsetSummary(count=2, time_us=3.0, bytes=64),
        time_us=10_100.0,
        exposed_us=10_100.0,
    )
    analysis = analyze_copies(data, H100)
    assert analysis.saving_ms == pytest.approx(
        [sum(g.saving_ms[k] for g in analysis.groups) for k in range(3)]
    )
    assert not any("view" in fix for fix in analysis.fixes)  # D2D: under 5 % of the exposed time
    assert (analysis.memset_count, analysis.memset_ms) == (2, 0.003)


def test_copy_data_of_the_copy_bound_trace(tmp_path: Path) -> None:
    model = build_model(load_trace(write_copy_bound_trace(tmp_path / "copies.json.gz")))
    data = copy_data(model)
    h2d, d2h = data.groups
    assert (h2d.name, h2d.count, h2d.bytes, h2d.exposed_us) == (H2D, 4, 512_000_000, 40_000.0)
    assert (d2h.name, d2h.count, d2h.bytes, d2h.exposed_us) == (D2H, 4, 16_000_000, 2_000.0)
    assert [launcher.name for launcher in h2d.launchers] == ["aten::copy_"]
    assert (data.time_us, data.exposed_us) == (42_000.0, 42_000.0)
