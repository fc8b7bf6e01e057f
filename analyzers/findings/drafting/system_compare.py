"""Trace 1's system figures against trace 2's (docs/compare.md#system-analyses-of-both-traces).

Both traces' CPU/idle and multi-kernel documents give, per trace, the idle time and its main
cause, the exposed communication and copies, the copies, collectives and kernels. What part of
trace 1's time trace 2 shows to be avoidable is said only when the two windows are
comparable: both hold iterations the host-side analysis found with confidence. Then the unit
is one iteration: trace 1's time per iteration beyond trace 2's, times trace 1's iteration
count (idle before the first and after the last iteration, the window's edges, is left out of
the idle). Otherwise both figures are stated and no part of trace 1's time is called avoidable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...categories.any_metrics import Metrics
from ...categories.cpu_idle import CpuIdleMetrics, IterationSummary
from ...categories.multi_kernel import MultiKernelMetrics
from ...prepare.multi_kernel import OverlapAnalysis
from ..ranking.run_metrics import RunMetrics
from .differences import DIFF_HEAD, ms_difference

POOLS = ("idle", "exposed_copies", "exposed_comm")
POOL_WORDS = {
    "idle": "idle time inside iterations",
    "exposed_copies": "exposed copy time",
    "exposed_comm": "exposed communication",
}
# idle before the first and after the last iteration (trace/phases.py), left out of the pool
EDGE_PHASES = ("setup", "tail")


@dataclass(frozen=True)
class SystemSide:
    """One trace's system figures, in ms of its own window."""

    window_ms: float
    idle_ms: float
    idle_pct: float
    cause: tuple[str, float] | None  # the largest idle cause: label, ms
    edges_ms: float
    exposed_ms: Mapping[str, float]  # "exposed_copies" / "exposed_comm" -> ms
    copies: tuple[int, float]  # count, ms
    collectives: tuple[int, float]
    kernels: tuple[int, int]  # all, short
    iterations: IterationSummary | None

    def pool_ms(self, pool: str) -> float:
        return self.idle_ms - self.edges_ms if pool == "idle" else self.exposed_ms[pool]

    def pct(self, ms: float) -> float:
        return ms / self.window_ms * 100 if self.window_ms > 0 else 0.0


def side(idle: CpuIdleMetrics, multi: MultiKernelMetrics | None) -> SystemSide | None:
    """A trace's figures from its documents; None when its CPU/idle analysis failed."""
    u = idle.gpu_utilization
    if idle.status != "OK" or u is None:
        return None
    causes = idle.host_side.idle_causes if idle.host_side else []
    top = max(causes, key=lambda c: c.idle_ms, default=None)
    ok = multi is not None and multi.status == "SUCCESS"
    copies = multi.memcpy_summary if ok and multi else None
    nccl = multi.nccl_summary if ok and multi else None
    kernels = idle.kernel_analysis
    return SystemSide(
        window_ms=u.total_time_ms,
        idle_ms=u.idle_time_ms,
        idle_pct=u.idle_time_percent,
        cause=(top.label, top.idle_ms) if top is not None and top.idle_ms > 0 else None,
        edges_ms=_edges_ms(idle),
        exposed_ms=_exposed(
            u.memcpy_percent,
            u.communication_percent,
            u.total_time_ms,
            multi.overlap_analysis if ok and multi else None,
        ),
        copies=(copies.total_count, copies.total_time_ms) if copies else (0, 0.0),
        collectives=(nccl.total_count, nccl.total_time_ms) if nccl else (0, 0.0),
        kernels=(kernels.total_kernel_count, kernels.short_kernel_count) if kernels else (0, 0),
        iterations=idle.host_side.iterations if idle.host_side else None,
    )


def _exposed(
    copy_pct: float, comm_pct: float, total_ms: float, overlap: OverlapAnalysis | None
) -> dict[str, float]:
    """Exposed copies and communication in ms: the multi-kernel data's unrounded times when
    the trace has them, else the timeline's (rounded) shares."""
    if overlap is not None:
        return {
            "exposed_copies": overlap.exposed_memcpy_time_us / 1000,
            "exposed_comm": overlap.exposed_comm_time_us / 1000,
        }
    return {"exposed_copies": copy_pct * total_ms / 100, "exposed_comm": comm_pct * total_ms / 100}


@dataclass(frozen=True)
class SystemComparison:
    one: SystemSide
    two: SystemSide
    not_comparable: str | None  # why the windows are not comparable; None when they are
    avoidable_ms: Mapping[str, float]  # pool -> trace 1's ms trace 2 did without (comparable)


def _why_not(one: SystemSide, two: SystemSide) -> str | None:
    for name, s in (("trace 1", one), ("trace 2", two)):
        it = s.iterations
        if it is None or it.count == 0:
            return f"{name} has no iterations with a measured time"
        if not it.confident:
            return f"{name}'s iterations were found with low confidence"
    return None


def compare_sides(one: SystemSide, two: SystemSide) -> SystemComparison:
    why = _why_not(one, two)
    avoidable: dict[str, float] = {}
    if why is None and one.iterations and two.iterations:
        n1, n2 = one.iterations.count, two.iterations.count
        for pool in POOLS:
            gap = one.pool_ms(pool) / n1 - two.pool_ms(pool) / n2
            avoidable[pool] = max(0.0, gap) * n1
    return SystemComparison(one, two, why, avoidable)


def system_comparison(
    metrics1: Mapping[str, Metrics], metrics2: Mapping[str, Metrics]
) -> SystemComparison | None:
    """Both traces' figures from their `cpu_idle` / `multi_kernel` metrics; None when either
    CPU/idle analysis is missing or failed."""
    sides = []
    for metrics in map(RunMetrics, (metrics1, metrics2)):
        if metrics.cpu_idle is None:
            return None
        found = side(metrics.cpu_idle, metrics.multi_kernel)
        if found is None:
            return None
        sides.append(found)
    return compare_sides(sides[0], sides[1])


def _edges_ms(idle: CpuIdleMetrics) -> float:
    host = idle.host_side
    if host is None or host.idle_by_phase_ms is None:
        return 0.0
    return sum(ms for p, ms in host.idle_by_phase_ms.items() if p in EDGE_PHASES)


def _ms(value: float) -> str:
    return f"{value:,.3f}"


def _cause(s: SystemSide) -> str:
    if s.cause is None:
        return "—"
    label, ms = s.cause
    share = ms / s.idle_ms * 100 if s.idle_ms > 0 else 0.0
    return f"{label} ({_ms(ms)} ms, {share:.1f} % of its idle)"


def idle_sentence(c: SystemComparison) -> str:
    """`GPU idle 79.16 % of trace 1's window (34.08 ms of 43.05 ms) against 61.52 % in trace
    2 (…); trace 1's idle is mostly <cause>, trace 2's <cause>.`"""
    one, two = c.one, c.two
    text = (
        f"GPU idle {one.idle_pct:.2f} % of trace 1's window ({_ms(one.idle_ms)} ms of "
        f"{_ms(one.window_ms)} ms) against {two.idle_pct:.2f} % in trace 2 ({_ms(two.idle_ms)} "
        f"ms of {_ms(two.window_ms)} ms)"
    )
    if one.cause and two.cause and one.cause[0] == two.cause[0]:
        text += f"; both traces' idle is mostly {one.cause[0]}"
    elif one.cause and two.cause:
        text += f"; trace 1's idle is mostly {one.cause[0]}, trace 2's {two.cause[0]}"
    return text + "."


def _avoidable_text(c: SystemComparison) -> str:
    if c.not_comparable is not None:
        return (
            f"The two windows are not comparable ({c.not_comparable}), so both traces' "
            "figures are stated and no part of trace 1's time is called avoidable."
        )
    n1 = c.one.iterations.count if c.one.iterations else 0
    said = []
    for pool, ms in c.avoidable_ms.items():  # every pool, in POOLS order (compare_sides)
        if ms > 0:
            said.append(f"{_ms(ms)} ms of {POOL_WORDS[pool]}")
    if not said:
        return (
            "Per iteration, trace 1 has no more idle time, exposed copies or exposed "
            "communication than trace 2: trace 2 shows none of it to be avoidable."
        )
    its = f"{n1} iteration" + ("" if n1 == 1 else "s")
    return (
        f"Per iteration, trace 2 did without part of trace 1's time; over trace 1's {its} "
        f"that is {', '.join(said)}. That much is shown avoidable: trace 2 ran its iterations "
        "without it. Idle time depends on the host as well as the code: when the two traces "
        "come from different machines, part of this can be the host CPU, not the program."
    )


def _row(name: str, a: str, b: str, diff: str = "—") -> str:
    return f"| {name} | {a} | {b} | {diff} |"


def _with_pct(s: SystemSide, ms: float) -> str:
    return f"{_ms(ms)} ms ({s.pct(ms):.2f} %)"


def _idle(s: SystemSide) -> str:
    """The idle time with the CPU/idle document's own share (not re-derived from rounded ms)."""
    return f"{_ms(s.idle_ms)} ms ({s.idle_pct:.2f} %)"


def _iterations(s: SystemSide) -> str:
    it = s.iterations
    if it is None or it.count == 0:
        return "—"
    return f"{it.count}, {it.median_ms:,.2f} ms median" + ("" if it.confident else " (low conf.)")


def system_markdown(c: SystemComparison) -> str:
    """The System-Level section's side-by-side part: the idle sentence, the table, and what
    trace 2 shows avoidable (or why nothing is called so)."""
    one, two = c.one, c.two
    rows = [
        f"| Metric | Trace 1 | Trace 2 | {DIFF_HEAD} |",
        "| --- | --- | --- | --- |",
        _row("GPU idle", _idle(one), _idle(two), ms_difference(one.idle_ms, two.idle_ms)),
        _row("Largest idle cause", _cause(one), _cause(two)),
    ]  # fmt: skip
    for pool, name in (("exposed_comm", "Exposed communication"),
                       ("exposed_copies", "Exposed copies")):  # fmt: skip
        a, b = one.exposed_ms[pool], two.exposed_ms[pool]
        rows.append(_row(name, _with_pct(one, a), _with_pct(two, b), ms_difference(a, b)))
    for name, a, b in (("Copies", one.copies, two.copies),
                       ("Collectives", one.collectives, two.collectives)):  # fmt: skip
        rows.append(_row(name, f"{a[0]} ({_ms(a[1])} ms)", f"{b[0]} ({_ms(b[1])} ms)"))
    rows.append(_row("Kernels (short)", f"{one.kernels[0]} ({one.kernels[1]})",
                     f"{two.kernels[0]} ({two.kernels[1]})"))  # fmt: skip
    rows.append(_row("Iterations", _iterations(one), _iterations(two)))
    parts = ["### Trace 1 against trace 2", idle_sentence(c), "\n".join(rows), _avoidable_text(c)]
    return "\n\n".join(parts)


def trace2_idle_words(m2: CpuIdleMetrics) -> tuple[tuple[str, str, str], str] | None:
    """The CPU/idle card's trace-2 row and sentence, from trace 2's metrics."""
    u = m2.gpu_utilization
    if m2.status != "OK" or u is None:
        return None
    idle, pct, total = u.idle_time_ms, u.idle_time_percent, u.total_time_ms
    row = ("Trace 2 idle time", f"{idle} ms ({pct}%)", "false")
    return row, f" In trace 2 the GPU is idle for {idle} ms of {total} ms ({pct}%)."


def trace2_exposed_words(m2: MultiKernelMetrics, what: str) -> str:
    """` Trace 2: 0.05 ms of exposed copies (0.22% of its window).` for a multi-kernel card
    (`what`: "copies" or "communication"); empty without trace 2's analysis."""
    if m2.status != "SUCCESS":
        return ""
    total = float(m2.total_time_ms or 0.0)
    overlap = m2.overlap_analysis
    if overlap is None:
        exposed = 0.0
    else:
        us = overlap.exposed_memcpy_time_us if what == "copies" else overlap.exposed_comm_time_us
        exposed = float(us or 0.0) / 1000
    share = exposed / total * 100 if total > 0 else 0.0
    return f" Trace 2: {exposed:,.3f} ms of exposed {what} ({share:.2f}% of its window)."
