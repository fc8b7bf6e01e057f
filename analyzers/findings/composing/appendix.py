"""The report's Appendix: the model and the hardware figures the roofline used, each labelled
with what it is (docs/analysis.md#the-report).

A measured figure is "max achievable (measured)", a datasheet one "peak (datasheet)"; a
platform without measured figures has only peaks, and a precision its datasheet does not give
is "not published". Without the platform (a caller that does not pass it), the category
metadata's roofs are shown as the roofs the analysis used, without claiming either source.
The platform's name (maybe a user's file) and the model fields (a model may submit them) are
code spans (docs/analysis.md#trace-text-in-markdown).
"""

from __future__ import annotations

from ...markdown_text import md_cell
from ...perf.platforms import Platform
from .model_info import ModelIdentification
from .summary import UNKNOWN, ReportInputs

PRECISIONS = (("matrix_fp16", "FP16"), ("matrix_bf16", "BF16"), ("matrix_fp8", "FP8"),
              ("matrix_fp4", "FP4"))  # fmt: skip
MEASURED = "max achievable (measured)"
PEAK = "peak (datasheet)"
NOT_PUBLISHED = "not published"


def _table(rows: list[tuple[str, object]]) -> str:
    return "\n".join(["| Field | Value |", "| --- | --- |", *(f"| {a} | {b} |" for a, b in rows)])


def _tflops(value: float | None) -> str:
    return NOT_PUBLISHED if value is None else f"{value:g} TFLOPS"


def platform_rows(platform: Platform) -> list[tuple[str, object]]:
    """HBM bandwidth and the matrix roofs, datasheet and measured apart."""
    rows: list[tuple[str, object]] = [
        ("Platform", md_cell(platform.name)),
        (f"HBM bandwidth, {PEAK}", f"{platform.mem_bw_gbps / 1000:g} TB/s"),
    ]
    if platform.max_achievable_mem_bw_gbps is not None:
        rows.append((f"HBM bandwidth, {MEASURED}",
                     f"{platform.max_achievable_mem_bw_gbps / 1000:g} TB/s"))  # fmt: skip
    measured = platform.max_achievable_tflops or {}
    for spec, label in PRECISIONS:
        rows.append((f"{label} matrix, {PEAK}", _tflops(platform.peak_tflops.get(spec))))
        if spec in measured:
            rows.append((f"{label} matrix, {MEASURED}", _tflops(measured[spec])))
    uses = f"{MEASURED} figures where there are, else {PEAK}" if platform.measured else PEAK
    rows.append(("The roofline uses", uses))
    return rows


def _metadata_rows(run: ReportInputs) -> list[tuple[str, object]]:
    peaks = run.peaks()
    if peaks is None and not run.manifest.platform:
        return [("Platform", "none known: no roofline (see the no_platform warning above)")]
    roofs = peaks.max_achievable_tflops if peaks else {}
    platform = run.manifest.platform or (peaks.platform if peaks else None)
    rows: list[tuple[str, object]] = [("Platform", md_cell(platform) if platform else UNKNOWN)]
    if peaks is not None:
        rows.append(("HBM bandwidth, roofline", f"{peaks.peak_hbm_bw_tbs:g} TB/s"))
    rows += [(f"{label} matrix, roofline", _tflops(roofs.get(spec))) for spec, label in PRECISIONS]
    return rows


def appendix(run: ReportInputs) -> str:
    m = run.identity or ModelIdentification()
    keys = ("model", "architecture", "scale", "precision")
    values = [getattr(m, k) or UNKNOWN for k in keys]
    model_rows: list[tuple[str, object]] = [
        (k.capitalize(), v if v == UNKNOWN else md_cell(v))
        for k, v in zip(keys, values, strict=True)
    ]
    hw_rows = platform_rows(run.platform) if run.platform else _metadata_rows(run)
    if run.comparison is not None:  # the rows above are trace 1's, the one scored here
        two = run.comparison.platform2
        hw_rows.append(("Trace 2's platform (its perf report's roofline)",
                        md_cell(two) if two else "none known"))  # fmt: skip
    return "\n\n".join(
        ["## Appendix", "### Model Architecture", _table(model_rows),
         "### Hardware Reference", _table(hw_rows)]
    )  # fmt: skip
