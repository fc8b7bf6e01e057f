"""Level-3 validator for ``analysis.md`` (docs/analysis.md#validation).

Every problem carries a rule id, a 1-based line number and a message that says how to fix it.

V0  ``analysis.md`` exists and holds at least 100 non-blank characters.
V1  the six ``## <H>`` section heading lines are present (exact lines, not substrings).
V2  the Executive Summary holds a pipe table.
V3  that table has the five metric rows.
V4  no template values (``X ms``, ``Y%``, ``Z%``, ``W%``) left in the Executive Summary table.
V5  no template placeholder left anywhere (TraceLens misses some): ``<Model>``, ``<Platform>``,
    ``<Platform1>``/``<Platform2>``, ``<Brief Title>``, ``<Library>``, ``<architecture>``,
    ``<scale>``, ``<precision>`` matched case-insensitively, and ``{{PERF_PLOT}}`` or any other
    ``{{NAME}}`` template slot; code spans are names from the trace, not template text.
V6  every Args / Args (T1) cell is one of the ``operations[].args`` of the metrics files, as
    the drafts render it (``md_cell_lines``; docs/analysis.md#trace-text-in-markdown).
V7  Kernel Fusion ``**Impact**`` lines give the saving (with the perf-model coverage in
    standalone runs, without in comparative ones); the scope is read from the
    manifest, then the ``comparison_scope`` argument, else standalone.
R1  every ``priority_data.priorities`` entry k has one ``### P<k>:`` card in the section of its kind
    (compute, kernel fusion, system); no P-number is used twice.
R2  that card's ``kind=p_item`` marker has ``p`` = k and the item's ``category``.
R3  its low/mid/high equal the item's percent_low/mid/high, its low_ms/mid_ms/high_ms the
    item's saving.
R4  the ``kind=top_ops`` block has one data row per ``tracelens_compute.priorities`` entry.
R7–R9  one idle figure, Top Operations against the workbook's ``ops_summary_by_category``, the
    rank column naming its order (composing/numbers.py).
R6  the Priorities table lists P1..Pn in order, and the section states the saving_totals mid.
R5  each Insights subsection has as many ``#### P<N>:`` headings as reasoning-candidates of its
    tier.
M1–M5  marker pairing, ``kind=``, known kinds, required attrs, all-null or all-numeric values.
M6  a ``kind=top_ops`` marker is present (mandatory).

R1–R4, R6 and R7–R9 are skipped when ``priority_data.json`` is missing, and when it does not
read as the priorities model one R1 problem at line 1 says why; R8 is skipped when the
workbook's ``ops_summary_by_category.csv`` is missing or unreadable.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...markdown_text import md_cell_lines, plain_line, without_code_spans
from ..composing.checks import ReportProblem, priorities_problems
from ..composing.compose import INSIGHTS, REPORT_NAME, SECTIONS
from ..composing.numbers import (
    idle_problems,
    read_workbook,
    top_ops_problems,
)
from ..contract.contract import (
    BEGIN_RE,
    CANDIDATE_RE,
    END_RE,
    NOT_QUANTIFIABLE,
    Marker,
    Tier,
    is_separator,
    parse_attrs,
    split_row,
)
from ..contract.validate import check_marker
from ..ranking.priorities import PriorityData
from .documents import ManifestView, MetricsView, read_view

METRIC_ROWS = ("Total Time", "Compute %", "Idle %", "Exposed Communication %",
               "Top Bottleneck Category")  # fmt: skip
TEMPLATE_VALUES = ("| X ms", "| Y%", "| Z%", "| W%")
PLACEHOLDERS = {"brief title", "library", "model", "platform", "platform1", "platform2",
                "architecture", "scale", "precision"}  # fmt: skip
ANGLE_RE = re.compile(r"<([A-Za-z][A-Za-z0-9_ ]*)>")
SLOT_RE = re.compile(r"\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}")
SAVING = r"[\d.]+–[\d.]+ ms \(mid [\d.]+ ms, [\d.]+ % of the window\)"
STANDALONE_IMPACT = re.compile(rf"^\*\*Impact\*\*: {SAVING}; perf-model coverage \d+/\d+ kernels$")
COMPARATIVE_IMPACT = re.compile(rf"^\*\*Impact\*\*: {SAVING}$")
UNRANKED_IMPACT = f"**Impact**: {NOT_QUANTIFIABLE}"
DETAIL_P_RE = re.compile(r"^####\s+.*?P(\d+)\s*:")


def _spans(lines: list[str], prefix: str, lo: int, hi: int) -> dict[str, tuple[int, int]]:
    """``{heading text: (first line, last line)}`` (1-based) of ``prefix`` headings in [lo, hi]."""
    heads = [(n, lines[n - 1][len(prefix) :].strip()) for n in range(lo, hi + 1)
             if lines[n - 1].startswith(prefix)]  # fmt: skip
    out: dict[str, tuple[int, int]] = {}
    for k, (n, name) in enumerate(heads):
        end = heads[k + 1][0] - 1 if k + 1 < len(heads) else hi
        out.setdefault(name, (n, end))
    return out


def _markers(lines: list[str]) -> tuple[list[ReportProblem], dict]:
    """M1–M5 over the report. A p_item marker is all numbers (a ranked item) or all null (a
    card no item ranks), in every section."""
    probs: list[ReportProblem] = []
    found: dict[int, Marker] = {}
    open_at = 0
    for n, line in enumerate(lines, 1):
        if END_RE.match(line):
            if not open_at:
                probs.append(ReportProblem("M1", n, "impact-end without an impact-begin: "
                                           "delete it or add the impact-begin above."))  # fmt: skip
            open_at = 0
        elif BEGIN_RE.match(line):
            if open_at:
                probs.append(_unclosed(open_at))
            open_at, found[n] = n, Marker.parse(line)
            values = [found[n].attr(a) for a in ("low", "mid", "high")]
            tier = Tier.SYSTEM if values == ["null"] * 3 else Tier.COMPUTE
            problem = check_marker(n, found[n], tier)
            if problem:
                probs.append(ReportProblem(problem.rule, n, problem.message))
    if open_at:
        probs.append(_unclosed(open_at))
    return probs, found


def _unclosed(n: int) -> ReportProblem:
    return ReportProblem("M1", n, "impact-begin is not closed: add '<!-- impact-end -->' after "
                         "the wrapped lines.")  # fmt: skip


def _scope(run_dir: Path, comparison_scope: str | None) -> str:
    manifest, _ = read_view(run_dir / "category_data" / "category_manifest.json", ManifestView)
    if manifest is not None and manifest.comparison_scope:
        return str(manifest.comparison_scope)
    return comparison_scope or "standalone"


def _all_args(run_dir: Path) -> set[str]:
    args: set[str] = set()
    for path in (run_dir / "category_data").glob("*_metrics.json"):
        metrics, _ = read_view(path, MetricsView)
        for op in (metrics.operations or []) if metrics is not None else []:
            if op.args not in (None, ""):
                args.add(md_cell_lines(op.args).strip())
    return args


def _summary(lines: list[str], span: tuple[int, int] | None) -> list[ReportProblem]:
    """V2–V4 inside the Executive Summary."""
    if span is None:
        return []
    first, last = span
    body = lines[first - 1 : last]
    if not any("|" in ln for ln in body):
        return [ReportProblem("V2", first, "no metrics table under ## Executive Summary: add the "
                              "'| Metric | Value |' table with the five rows.")]  # fmt: skip
    probs = []
    labels = {split_row(ln)[0] for ln in body if ln.lstrip().startswith("|")}
    for label in METRIC_ROWS:
        if label not in labels:
            probs.append(ReportProblem("V3", first, f"missing metrics row '{label}': add it to "
                                       "the Executive Summary table."))  # fmt: skip
    for n, ln in enumerate(body, first):
        for value in TEMPLATE_VALUES:
            if value in ln:
                probs.append(
                    ReportProblem(
                        "V4",
                        n,
                        f"template value '{value[2:]}' in the "
                        "Executive Summary table: fill in the real number.",
                    )
                )
    return probs


def _placeholders(lines: list[str]) -> list[ReportProblem]:
    probs = []
    for n, line in enumerate(lines, 1):
        ln = without_code_spans(line)
        hits = [m.group(0) for m in ANGLE_RE.finditer(ln) if m.group(1).lower() in PLACEHOLDERS]
        hits += SLOT_RE.findall(ln)
        if hits:
            probs.append(ReportProblem("V5", n, f"unfilled placeholder(s) {', '.join(hits)}: "
                                       "replace with real values (embed or link the plot for "
                                       "{{PERF_PLOT}}, or delete the line)."))  # fmt: skip
    return probs


def _args_cells(lines: list[str], allowed: set[str]) -> list[ReportProblem]:
    probs, header = [], None
    for n, ln in enumerate(lines, 1):
        if not ln.lstrip().startswith("|"):
            header = None
            continue
        cells = split_row(ln)
        if header is None:
            header = cells
            continue
        if is_separator(cells):
            continue
        for name in ("Args", "Args (T1)"):
            if name in header and header.index(name) < len(cells):
                cell = cells[header.index(name)]
                if cell and cell != "—" and cell not in allowed:
                    probs.append(ReportProblem("V6", n, "Args cell does not match any "
                                               "operations[].args (copy the drafted cell: a "
                                               "code span per <br> part): "
                                               f"{plain_line(cell)}"))  # fmt: skip
    return probs


def _fusion_impacts(lines: list[str], span, scope: str) -> list[ReportProblem]:
    if span is None:
        return []
    probs = []
    for n in range(span[0], span[1] + 1):
        ln = lines[n - 1].strip()
        if not ln.startswith("**Impact**") or ln == UNRANKED_IMPACT:
            continue
        saving = "'**Impact**: L–H ms (mid M ms, P % of the window)"
        if scope == "comparative":
            ok = COMPARATIVE_IMPACT.search(ln)
            want = f"{saving}' (no coverage in comparative runs)"
        else:
            ok = STANDALONE_IMPACT.search(ln)
            want = f"{saving}; perf-model coverage K/N kernels'"
        if not ok:
            probs.append(
                ReportProblem("V7", n, f"Kernel Fusion Impact format error: write {want}.")
            )
    return probs


def _insights(lines: list[str], span) -> list[ReportProblem]:
    """R5 per Insights subsection of Detailed Analysis."""
    if span is None:
        return []
    subs = _spans(lines, "### ", span[0] + 1, span[1])
    probs = []
    for tier, name in INSIGHTS.items():
        if name not in subs:
            probs.append(
                ReportProblem(
                    "R5",
                    span[0],
                    f"missing '### {name}' under Detailed "
                    "Analysis: add it (it may say there are no items).",
                )
            )
            continue
        first, last = subs[name]
        heads = sum(bool(DETAIL_P_RE.match(lines[n - 1])) for n in range(first, last + 1))
        cands = 0
        for n in range(first, last + 1):
            m = CANDIDATE_RE.match(lines[n - 1])
            cands += bool(
                m and Marker("candidate", parse_attrs(m.group("body"))).attr("tier") == tier
            )
        if heads != cands:
            probs.append(
                ReportProblem(
                    "R5",
                    first,
                    f"{name} has {heads} #### P<N>: headings but "
                    f"{cands} reasoning-candidate tier={tier} markers: put one "
                    "marker right before each heading.",
                )
            )
    return probs


def _numbers(
    lines, sections, markers, priority: PriorityData, run_dir: Path
) -> list[ReportProblem]:
    """R7–R9: one idle figure, Top Operations against the workbook, the rank's order."""
    probs = idle_problems(lines, sections.get("Executive Summary"), priority)
    begins = sorted(n for n, m in markers.items() if m.kind == "top_ops")
    if begins:
        end = next((n for n in range(begins[0] + 1, len(lines) + 1)
                    if END_RE.match(lines[n - 1])), None)  # fmt: skip
        if end is not None:
            probs += top_ops_problems(lines, (begins[0], end), priority, read_workbook(run_dir))
    return probs


def validate_report_text(
    text: str, run_dir: Path, comparison_scope: str | None = None
) -> list[ReportProblem]:
    """All problems of report ``text`` checked against ``run_dir`` (empty list ⇒ valid)."""
    run_dir = Path(run_dir)
    if len(text.strip()) < 100:
        return [ReportProblem("V0", 1, "report is empty or too short: compose it with "
                              "the compose_report step.")]  # fmt: skip
    lines = text.splitlines()
    sections = _spans(lines, "## ", 1, len(lines))
    probs = [ReportProblem("V1", len(lines), f"missing section '## {h}': add it in the "
                           "report's section order (docs/analysis.md#the-report).")
             for h in SECTIONS if h not in sections]  # fmt: skip
    marker_probs, markers = _markers(lines)
    probs += marker_probs
    if not any(m.kind == "top_ops" for m in markers.values()):
        probs.append(ReportProblem("M6", 1, "missing required kind=top_ops: wrap the Top "
                                   "Operations table in '<!-- impact-begin kind=top_ops -->' / "
                                   "'<!-- impact-end -->'."))  # fmt: skip
    probs += _summary(lines, sections.get("Executive Summary"))
    probs += _placeholders(lines)
    probs += _args_cells(lines, _all_args(run_dir))
    fusion = sections.get("Kernel Fusion Opportunities (Experimental)")
    probs += _fusion_impacts(lines, fusion, _scope(run_dir, comparison_scope))
    priority, problem = read_view(run_dir / "priority_data.json", PriorityData)
    if priority is not None:
        probs += priorities_problems(lines, sections, markers, priority)
        probs += _numbers(lines, sections, markers, priority, run_dir)
    elif problem != "not found":
        probs.append(ReportProblem("R1", 1, f"priority_data.json {problem}: the report's "
                                   "numbers cannot be checked against it; regenerate it with "
                                   "the priorities step."))  # fmt: skip
    probs += _insights(lines, sections.get("Detailed Analysis"))
    return sorted(probs, key=lambda p: (p.line, p.rule))


def validate_report(run_dir: Path, comparison_scope: str | None = None) -> list[ReportProblem]:
    """Validate ``<run_dir>/analysis.md``; an empty list means the report passes."""
    path = Path(run_dir) / REPORT_NAME
    if not path.is_file():
        return [ReportProblem("V0", 1, f"report not found: {path}: write it with "
                              "the compose_report step.")]  # fmt: skip
    return validate_report_text(path.read_text(encoding="utf-8"), Path(run_dir), comparison_scope)
