"""What to say and do about each named idle cause: the priority item's title, the card's
insight and action, and the share of the idle a fix wins back.

One entry per cause of trace/host_causes.py, so no cause gets another's advice; the call
sites in a title come from the metrics (the culprits the attribution found), rendered as
code because they are trace text. Definitions: docs/analysis.md#idle-causes.
"""

from __future__ import annotations

from ...categories.cpu_idle import IdleCauseShare
from ...markdown_text import md_code
from ...trace.host_causes import IdleCause

Fractions = tuple[float, float, float]
RECOVERY: Fractions = (0.25, 0.5, 0.75)
# a removed call gives back most of the idle it held; a host-overhead cut gives back part
CAUSE_RECOVERY: dict[IdleCause, Fractions] = {
    "allocator": (0.5, 0.75, 0.9),
    "sync": (0.5, 0.75, 1.0),
    "input_pipeline": (0.5, 0.75, 1.0),
    "collective_issue": RECOVERY,
    "optimizer_step": RECOVERY,
    "launch_bound": RECOVERY,
    "dispatch": RECOVERY,
    # the GPU waited on its own work: how much a reordered dependency wins is not known
    "gpu_wait": (0.1, 0.25, 0.5),
    # only an item when the trace has no host side at all (a GPU-only trace)
    "unexplained": RECOVERY,
}
# profiler artefacts, one-off set-up and unrecorded host time are no item to fix
NOT_AN_ITEM: frozenset[IdleCause] = frozenset({"profiler", "one_off", "unexplained"})

TITLES: dict[IdleCause, str] = {
    "allocator": "The GPU sat idle while the host freed and allocated memory",
    "sync": "The GPU waited while the host blocked in calls that wait for it",
    "input_pipeline": "The GPU sat idle waiting for the next batch from the data loader",
    "collective_issue": "The GPU sat idle while the host issued collectives",
    "optimizer_step": "The GPU sat idle during the optimizer step on the host",
    "launch_bound": "The GPU waited on kernel launches (kernels shorter than their launches)",
    "dispatch": "The GPU sat idle while the host ran operators and Python between launches",
    "gpu_wait": "The GPU idled with its next kernel already queued (a wait on the GPU side)",
    "one_off": "One-off set-up left the GPU idle",
    "profiler": "The profiler's own start and stop left the GPU idle",
    "unexplained": "The GPU sat idle with no host event recorded to say why",
}
WHY: dict[IdleCause, str] = {
    "allocator": (
        "the caching allocator returned memory to the driver and took it back; "
        "`cudaFree`/`hipFree` also synchronises the device, so the GPU drains every time"
    ),
    "sync": "each call waits for the GPU to finish, so the queue runs dry behind it",
    "input_pipeline": "the next batch was prepared on the training process while the GPU waited",
    "collective_issue": (
        "the host spent the time preparing and issuing collectives (flattening buffers, "
        "bookkeeping) instead of launching compute"
    ),
    "optimizer_step": "the optimizer's host-side work held the launches of the next step",
    "launch_bound": "each kernel ran for less time than it took the host to launch it",
    "dispatch": "the host could not issue kernels as fast as the GPU ran them",
    "gpu_wait": (
        "the next kernel had been launched before the gap began, so the host was not late: "
        "the GPU waited on something of its own (another stream's event, a peer, a copy)"
    ),
    "one_off": "module loads, handle and stream creation and first launches happen once",
    "profiler": "the profiler synchronises and flushes when it starts and stops",
    "unexplained": "no operator, annotation or Python frame was recorded during the gap",
}
ACTIONS: dict[IdleCause, str] = {
    "allocator": (
        "Stop handing memory back every step: remove `torch.cuda.empty_cache()` from the "
        "loop, keep tensor shapes steady so cached blocks are reused, and set "
        "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (`PYTORCH_HIP_ALLOC_CONF` on "
        "ROCm); check that memory is not near the limit, which forces frees."
    ),
    "sync": (
        "Take the synchronisation out of the step (`.item()`, `.cpu()`, `.tolist()`, "
        "`torch.cuda.synchronize()`), or do it once every N steps; copy to the host with "
        "`non_blocking=True` into pinned memory."
    ),
    "input_pipeline": (
        "Prepare batches in worker processes: `DataLoader(num_workers=N, pin_memory=True, "
        "persistent_workers=True, prefetch_factor=2..4)`; move heavy preprocessing off the "
        "training process; for periodic stalls, give the workers more prefetch or faster "
        "storage."
    ),
    "collective_issue": (
        "Issue fewer, larger collectives and keep bookkeeping off the step: "
        "`DistributedDataParallel(broadcast_buffers=False)` when buffers do not change, a "
        "larger `bucket_cap_mb`, and overlap communication with backward compute."
    ),
    "optimizer_step": (
        "Use a fused or foreach optimizer (`fused=True` / `foreach=True`), keep its math on "
        "the GPU in few kernels, or compile the step with `torch.compile`."
    ),
    "launch_bound": (
        "Launch less often: capture the step in a CUDA/HIP graph (`torch.cuda.graphs`, or "
        '`torch.compile(mode="reduce-overhead")`) or fuse the small kernels.'
    ),
    "dispatch": (
        "Cut host overhead where it is named: `torch.compile` the region, remove per-step "
        "Python work (shape checks, `inspect`, logging) from the hot path, or capture the "
        "step in a CUDA/HIP graph."
    ),
    "gpu_wait": (
        "Not a host problem: do not try to feed the GPU faster. Find what the queued kernel "
        "waited for (a cross-stream event, a peer, a copy) and overlap or remove that "
        "dependency."
    ),
    "one_off": (
        "A one-time cost: keep warm-up out of the profiled window "
        "(`torch.profiler.schedule(wait=1, warmup=1, active=3)`) and measure steady state."
    ),
    "profiler": "Nothing to fix in the workload: the profiler's own start and stop.",
    "unexplained": (
        "Record the host side: profile with `activities=[ProfilerActivity.CPU, "
        "ProfilerActivity.CUDA]` and `with_stack=True` so the host's work shows, then look "
        "again."
    ),
}


def is_item(cause: IdleCause, host_recorded: bool) -> bool:
    """Whether a cause's idle becomes a priority item: a cause a fix can address, or all the
    idle of a trace that recorded no host side (nothing else can be said of it)."""
    if cause == "unexplained":
        return not host_recorded
    return cause not in NOT_AN_ITEM and cause in CAUSE_RECOVERY


def culprit_words(part: IdleCauseShare) -> str:
    """` (most in `X` under `Y`, in `frame`)` for the top culprit, or ""."""
    if not part.culprits:
        return ""
    top = part.culprits[0]
    words = f"most in {md_code(top.name, 80)}"
    if top.operator and top.operator != top.name:
        words += f" under {md_code(top.operator, 80)}"
    if top.module:
        words += f" in {md_code(top.module, 60)}"
    elif top.frame and not top.operator:  # a bare runtime call: where the code made it
        words += f" from {md_code(top.frame, 80)}"
    return f" ({words})"


def idle_title(cause: IdleCause, part: IdleCauseShare, blocking_site: str = "") -> str:
    """The priority item's title: the cause and where it happened."""
    title = TITLES[cause]
    if cause == "sync" and blocking_site:
        return f"{title} ({blocking_site})"
    if cause == "launch_bound":
        return title
    return title + culprit_words(part)
