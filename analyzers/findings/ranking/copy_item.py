"""The one copy finding on the impact scale (docs/analysis.md#copies): every exposed copy is
counted here and nowhere else, its saving estimated from the link the copies cross and capped
by the exposed copy time. Its title leads with the source of the main group when one call
site issues most of it (`source_phrase`)."""

from __future__ import annotations

from collections.abc import Iterator

from ...categories.copies import SOURCE_SHARE, CopyAnalysis, CopyVerdict
from ...layout import MULTI_KERNEL
from ...markdown_text import md_code
from ...prepare.categories import GpuUtilization
from .impact_scale import Candidate, Saving, pool_sizes


def copy_candidates(
    copies: CopyAnalysis, gpu: GpuUtilization, min_share: float
) -> Iterator[Candidate]:
    """One item for all exposed copies when they hold at least `min_share` % of the window."""
    window = gpu.total_time_ms
    exposed = pool_sizes(gpu)["exposed_memcpy"]
    if window <= 0 or exposed / window * 100 < min_share:
        return
    low, mid, high = copies.saving_ms
    yield Candidate(
        category=MULTI_KERNEL,
        kind="system",
        title=copy_title(copies, exposed, window),
        estimate_method="quantified",
        saving=Saving(
            low_ms=low,
            mid_ms=mid,
            high_ms=high,
            cap_ms=exposed,
            pool="exposed_memcpy",
            basis=copies.basis,
        ),
    )


ROUTE_WORDS = {
    "H2D": "host-to-device",
    "D2H": "device-to-host",
    "D2D": "device-to-device",
    "P2P": "peer-to-peer",
}


def copy_title(copies: CopyAnalysis, exposed_ms: float, window_ms: float) -> str:
    """`[<source phrase>; e]xposed copies: X ms (Y % of the window), most <route> <memory> at
    A of B GB/s <link>`."""
    head = (
        f"xposed copies: {exposed_ms:.1f} ms ({exposed_ms / window_ms * 100:.1f} % of the window)"
    )
    top = copies.groups[0] if copies.groups else None
    if top is None:
        return "E" + head
    source = source_phrase(top)
    head = f"{source}; e{head}" if source else "E" + head
    return f"{head}, most {describe(top)}"


def source_phrase(group: CopyVerdict) -> str | None:
    """`95 % of 93.0 ms of device-to-device copies come from `aten::clone` under
    `CompiledFunction`/`CompiledFunctionBackward`` (trace text as code spans), with `, in
    set-up only: not a per-step cost` for a group outside the steady state; None when no
    call site holds SOURCE_SHARE of the group."""
    top = group.sources[0] if group.sources else None
    if top is None or float(top.percent_of_group or 0) < SOURCE_SHARE:
        return None
    words = ROUTE_WORDS.get(group.route, group.route)
    text = (
        f"{float(top.percent_of_group):.0f} % of {float(group.time_ms):.1f} ms of "
        f"{words} copies come from {md_code(top.call_site)}"
    )
    callers = [md_code(c) for c in top.callers]
    if callers:
        text += " under " + "/".join(callers)
    timing = group.timing
    if timing is not None and timing.steady_iterations and not timing.steady_count:
        text += ", in set-up only: not a per-step cost"
    return text


def describe(group: CopyVerdict) -> str:
    """`D2H to pageable memory at 11.3 GB/s of the 64 GB/s PCIe 5.0 x16 link`; a link
    other than HBM is named by the platform (a user's file, so a code span)."""
    text = group.route
    if group.host_memory in ("pageable", "pinned", "unknown"):
        side = " from" if group.route == "H2D" else " to" if group.route == "D2H" else ""
        held = "host" if group.host_memory == "unknown" else group.host_memory
        text = f"{group.route}{side} {held} memory"
    if group.achieved_gbps is not None and group.link_gbps:
        link = "HBM" if group.link == "HBM" else f"{md_code(group.link)} link"
        text += f" at {group.achieved_gbps:.3g} GB/s of the {group.link_gbps:g} GB/s {link}"
    return text
