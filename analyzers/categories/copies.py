"""Copies judged as copies (docs/analysis.md#copies): each group of copies against the link
it crosses, the fixes that apply to copies, and what they could save of the exposed copy time.

A host<->device copy crosses the platform's `host_link` (PCIe, NVLink-C2C, Infinity Fabric),
a device-to-device copy reads and writes HBM, a peer copy crosses the `gpu_link`. Nothing here
is scored against a compute roofline, and no fix is a kernel fusion: a copy is made cheaper
by pinning its host buffer, hidden by overlapping it with compute, or removed by keeping the
tensor where it is used.

Saving of one group, for each bound k in (low, mid, high), over its exposed time E of its
copy time T (B bytes, n copies):

    pinned_k = max(n × COPY_FLOOR_US, B / (LINK_FRACTION[k] × link))   pageable host copies only
    faster_k = max(0, T − pinned_k) × E / T                            (0 for any other copy)
    saving_k = faster_k + OVERLAP[k] × (E − faster_k)

E is the group's exposed time inside the steady state when the window has steady iterations
(docs/analysis.md#phases): a weight upload during set-up or warm-up is a one-time cost, priced
at nothing per step, like warm-up idle. The run's saving is the groups' sum; the impact scale
caps it at the exposed copy time.

Each group names its source, the call sites that issue it (prepare/copy_sources.py), and its
first fix is the one for its main source (`source_fix`): the compiled graph's own copies,
a pageable upload, a `.item()`, an eager clone, or a one-time set-up copy.
"""

from __future__ import annotations

from pydantic import BaseModel

from ..perf.platforms import Platform
from ..prepare.copies import CopyData, CopyGroup
from ..prepare.copy_sources import Source, Timing

LINK_FRACTION = (0.75, 0.875, 1.0)  # of the link a pinned copy reaches: low, mid, high
OVERLAP = (0.25, 0.5, 0.75)  # share of the remaining exposed time overlapping hides
# The shortest copy the shared traces hold: 1 pinned byte D2H on H100 took 2.24 µs. No copy,
# however small, is assumed faster than this.
COPY_FLOOR_US = 2.0
SMALL_COPY_BYTES = 64 * 1024  # below this a copy's time is mostly latency: batch them
FIX_SHARE = 0.05  # groups under this share of the exposed copy time add no fix to the summary

PIN = "pin the host buffer (`pin_memory=True` in the DataLoader, or `tensor.pin_memory()`)"
NON_BLOCKING = "copy with `non_blocking=True` so the host does not wait for the copy"
OVERLAP_FIX = "overlap the copy with compute: issue it early on a side stream (prefetch inputs)"
KEEP_D2H = "keep the tensor on the device (no `.cpu()`, `.item()`, `.tolist()` in the step)"
KEEP_H2D = "keep the tensor on the device between steps instead of copying it again"
AVOID_D2D = "avoid the device copy where a view would do (`.contiguous()`, `.clone()`, `.to()`)"
BATCH = "batch the small copies into one (each pays the link's latency)"
COMPILED_COPIES = (
    "inspect the compiled graph for these copies (`TORCH_LOGS=output_code` or `tlparse`): "
    "an input mutated inside the compiled function, an output aliasing an input, or CUDA-graph "
    'input copies (`mode="reduce-overhead"`) each add one; mutate outside the compiled '
    "region or in place on buffers the graph owns"
)
ONE_TIME = (
    "these copies run outside the steady state (set-up or warm-up): a one-time cost, not a "
    "per-step one, so nothing to win per step; pin the source and copy once if start-up matters"
)
SOURCE_SHARE = 50.0  # % of a group's time its main source must hold to choose the first fix


class CopyVerdict(BaseModel):
    """One group of copies against its link."""

    name: str
    route: str
    host_memory: str
    count: int
    time_ms: float
    exposed_ms: float
    megabytes: float | None  # None when no copy of the group recorded its bytes
    achieved_gbps: float | None
    link: str | None  # what the copy crosses ("PCIe 5.0 x16", "HBM", "NVLink 4")
    link_gbps: float | None
    percent_of_link: float | None
    at_link_ms: float | None  # the group's bytes at the full link bandwidth
    saving_ms: tuple[float, float, float]  # low, mid, high
    launchers: list[str]
    fixes: list[str]
    sources: list[Source] = []
    timing: Timing | None = None
    priced_ms: float | None = None  # the exposed time the saving is priced on (steady state)


class CopyAnalysis(BaseModel):
    """Every group of copies, longest exposed first, and their summed saving."""

    time_ms: float
    exposed_ms: float
    memset_count: int
    memset_ms: float
    groups: list[CopyVerdict]
    saving_ms: tuple[float, float, float]
    fixes: list[str]  # the fixes of the groups that matter (FIX_SHARE), once, in group order
    basis: str
    steady: bool = False  # the groups are priced on the steady state's exposed time


BASIS = (
    "pageable host copies brought to 75/87.5/100 % of the host link once pinned, then "
    "25/50/75 % of the exposed copy time left hidden by overlapping copies with compute"
)


def _link(group: CopyGroup, platform: Platform | None) -> tuple[str | None, float | None, float]:
    """(link name, its GB/s one way, bytes moved per byte copied); no link without a platform
    (then only the overlap part of the saving is estimated)."""
    if platform is None:
        return None, None, 1.0
    if group.route in ("H2D", "D2H") and platform.host_link is not None:
        return platform.host_link.kind, platform.host_link.one_way_gbps(), 1.0
    if group.route == "D2D":
        return "HBM", platform.mem_bw(), 2.0  # a device copy reads and writes HBM
    if group.route == "P2P" and platform.gpu_link is not None:
        return platform.gpu_link.kind, platform.gpu_link.one_way_gbps(), 1.0
    return None, None, 1.0


def one_time(timing: Timing | None) -> bool:
    """The group ran only outside the steady state of a window that has one."""
    return timing is not None and timing.steady_iterations > 0 and timing.steady_count == 0


def source_fix(group: CopyGroup) -> str | None:
    """The fix for the group's main source, when one source holds SOURCE_SHARE of it."""
    if one_time(group.timing):
        return ONE_TIME
    top = group.sources[0] if group.sources else None
    if top is None or top.percent_of_group < SOURCE_SHARE:
        return None
    if top.compiled and group.route == "D2D":
        return COMPILED_COPIES
    if group.route == "D2H" and top.call_site in ("aten::item", "aten::_local_scalar_dense"):
        return KEEP_D2H
    if group.host_memory == "pageable":
        return PIN  # then NON_BLOCKING for an upload (the route's fixes follow)
    return AVOID_D2D if group.route == "D2D" else None


def _fixes(group: CopyGroup) -> list[str]:
    first = source_fix(group)
    fixes = [first] if first else []
    if group.host_memory in ("pageable", "unknown"):
        fixes.append(PIN if group.host_memory == "pageable" else PIN + ", if it is pageable")
    if group.route == "D2H":
        fixes += [KEEP_D2H, NON_BLOCKING, OVERLAP_FIX]
    elif group.route == "H2D":
        fixes += [NON_BLOCKING, OVERLAP_FIX, KEEP_H2D]
    elif group.route == "D2D":
        fixes += [AVOID_D2D, OVERLAP_FIX]
    else:
        fixes.append(OVERLAP_FIX)
    if group.with_bytes and group.bytes / group.with_bytes < SMALL_COPY_BYTES and group.count > 1:
        fixes.append(BATCH)
    return [f for i, f in enumerate(fixes) if f not in fixes[:i]]


def priced_us(group: CopyGroup, steady: bool) -> float:
    """The exposed time a fix can win back per step: the steady state's when there is one."""
    if not steady or group.timing is None:
        return group.exposed_us
    return min(group.exposed_us, group.timing.steady_exposed_us)


def _saving(
    group: CopyGroup, link_gbps: float | None, steady: bool = False
) -> tuple[float, float, float]:
    """The group's low/mid/high saving in ms (module docstring)."""
    exposed, time = priced_us(group, steady), group.time_us
    known = group.with_bytes == group.count and group.bytes > 0
    speeds = group.host_memory == "pageable" and known and link_gbps and time > 0
    out = []
    for fraction, overlap in zip(LINK_FRACTION, OVERLAP, strict=True):
        faster = 0.0
        if speeds:
            pinned = max(group.count * COPY_FLOOR_US, group.bytes / (fraction * link_gbps * 1e3))
            faster = max(0.0, time - pinned) * exposed / time
        out.append((faster + overlap * (exposed - faster)) / 1000.0)
    return out[0], out[1], out[2]


def judge(group: CopyGroup, platform: Platform | None, steady: bool = False) -> CopyVerdict:
    link, gbps, moved = _link(group, platform)
    known = group.with_bytes > 0
    timed = group.time_us * group.with_bytes / group.count  # time of the copies with bytes
    achieved = moved * group.bytes / (timed * 1e3) if known and timed > 0 else None
    return CopyVerdict(
        name=group.name,
        route=group.route,
        host_memory=group.host_memory,
        count=group.count,
        time_ms=round(group.time_us / 1000.0, 4),
        exposed_ms=round(group.exposed_us / 1000.0, 4),
        megabytes=round(group.bytes / 1e6, 6) if known else None,
        achieved_gbps=round(achieved, 3) if achieved is not None else None,
        link=link,
        link_gbps=gbps,
        percent_of_link=round(achieved / gbps * 100, 2) if achieved is not None and gbps else None,
        at_link_ms=round(moved * group.bytes / (gbps * 1e6), 4) if known and gbps else None,
        saving_ms=tuple(round(v, 4) for v in _saving(group, gbps, steady)),  # type: ignore[arg-type]
        launchers=[launcher.name for launcher in group.launchers],
        fixes=_fixes(group),
        sources=group.sources,
        timing=group.timing,
        priced_ms=round(priced_us(group, steady) / 1000.0, 4),
    )


def analyze_copies(data: CopyData, platform: Platform | None) -> CopyAnalysis:
    """Every group judged, with the run's summed saving (uncapped: the impact scale caps it)."""
    verdicts = [judge(group, platform, data.steady) for group in data.groups]
    fixes: list[str] = []
    for rank, verdict in enumerate(verdicts):
        if rank and verdict.exposed_ms < FIX_SHARE * data.exposed_us / 1000.0:
            continue  # a group this small does not earn its fixes a place in the summary
        fixes += [f for f in verdict.fixes if f not in fixes]
    return CopyAnalysis(
        time_ms=round(data.time_us / 1000.0, 4),
        exposed_ms=round(data.exposed_us / 1000.0, 4),
        memset_count=data.memsets.count,
        memset_ms=round(data.memsets.time_us / 1000.0, 4),
        groups=verdicts,
        saving_ms=tuple(round(sum(v.saving_ms[k] for v in verdicts), 4) for k in range(3)),  # type: ignore[arg-type]
        fixes=fixes,
        basis=BASIS,
        steady=data.steady,
    )
