"""How a figure of trace 1 differs from trace 2's, in words: always trace 1 minus trace 2, so a
positive difference is time trace 1 could recover (docs/deviations.md, "The comparative
report's differences are trace 1 minus trace 2")."""

from __future__ import annotations

DIFF_HEAD = "Difference (T1 − T2)"
DASH = "—"


def ms_difference(t1: float | None, t2: float | None) -> str:
    """`+0.26 ms (+54.2 % of trace 2)`: trace 1 minus trace 2, and that as a share of trace
    2's time; a dash when either side is missing."""
    if t1 is None or t2 is None:
        return DASH
    delta = t1 - t2
    text = f"{delta:+.2f} ms"
    return f"{text} ({delta / t2 * 100:+.1f} % of trace 2)" if t2 > 0 else text


def point_difference(p1: float, p2: float) -> str:
    """A difference of two shares, in percentage points (trace 1 minus trace 2)."""
    return f"{p1 - p2:+.2f} pp"


def slower_sentence(t1: float, t2: float) -> str:
    """How trace 1's window compares with trace 2's, in words."""
    if t2 <= 0 or t1 <= 0:
        return "One trace has no GPU time to compare."
    if abs(t1 - t2) / t2 < 0.01:
        return f"Both windows take the same time to within 1 % ({t1:,.2f} ms against {t2:,.2f} ms)."
    way = "longer" if t1 > t2 else "shorter"
    return (
        f"Trace 1's window ({t1:,.2f} ms) is {abs(t1 - t2) / t2 * 100:.1f} % {way} than "
        f"trace 2's ({t2:,.2f} ms)."
    )
