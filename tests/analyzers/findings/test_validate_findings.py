"""Broken-findings corpus for validate_findings: one case (at least) per rule, exact line."""

import json
from pathlib import Path

import pytest

from rooflens.analyzers.findings.contract.validate import validate_findings, validate_findings_file

DATA = Path(__file__).resolve().parents[2] / "data" / "findings"
COMPUTE = (DATA / "compute.md").read_text(encoding="utf-8")
SYSTEM = (DATA / "system.md").read_text(encoding="utf-8")
FUSION = (DATA / "fusion.md").read_text(encoding="utf-8")
OPS = [
    {
        "args": "M=4096<br>N=4096",
        "launcher_path": "hipblaslt",
        "kernel_name_trunc": "Cijk_Alik_Bljk",
    }
]
METRICS = {"category": "gemm", "category_findings": [{"rank": 1}], "operations": OPS}
P_ITEM = "<!-- impact-begin kind=p_item low=1.2 mid=2.5 high=3.1 -->"


def drop(text: str, *numbers: int) -> str:
    lines = text.splitlines()
    return "\n".join(ln for i, ln in enumerate(lines, 1) if i not in numbers) + "\n"


def hits(text, tier="compute", **kw):
    kw.setdefault("metrics", METRICS if tier == "compute" else None)
    return {(p.rule, p.line) for p in validate_findings(text, tier, **kw)}


@pytest.mark.parametrize(
    ("text", "tier"),
    [(COMPUTE, "compute"), (SYSTEM, "system"), (FUSION, "fusion")]
    + [
        ((DATA / f"empty_{t}.md").read_text(encoding="utf-8"), t)
        for t in ("compute", "system", "fusion")
    ]
    + [((DATA / "error_plain.md").read_text(encoding="utf-8"), "compute")],
)
def test_valid_files_pass(text, tier):
    assert validate_findings(text, tier, metrics=METRICS if tier == "compute" else None) == []


def test_bold_error_status_is_nothing_to_report():
    text = (DATA / "error_plain.md").read_text(encoding="utf-8")
    assert validate_findings(text.replace("Status: ERROR", "**Status**: ERROR"), "system") == []


def test_relaxed_compute_without_status():
    text = drop((DATA / "empty_compute.md").read_text(encoding="utf-8"), 3)
    assert validate_findings(text, "compute", metrics={"category_findings": []}) == []
    assert hits(text) == {("F3", 6), ("F5", 8), ("M6", 6)}


CASES = [
    ("F0", "", "compute", 1),
    ("F1", drop(COMPUTE, 16), "compute", 35),
    ("F1", drop(COMPUTE, 7), "compute", 15),
    (
        "F2",
        COMPUTE.replace("## Recommendations\n", "## Notes\n") + "\n## Recommendations\n",
        "compute",
        38,
    ),
    ("F3", COMPUTE.replace("### P1:", "### Item 1 -"), "compute", 7),
    ("F3", COMPUTE.replace("SUCCESS", "NO_FINDINGS"), "compute", 9),
    ("F4", drop(COMPUTE, 11), "compute", 9),
    ("F4", FUSION.replace("**Confidence**", "**Certainty**"), "fusion", 7),
    ("F5", drop(COMPUTE, 18), "compute", 16),
    ("F5", SYSTEM.replace("SUCCESS", "NO_FINDINGS"), "system", 16),
    (
        "F6",
        COMPUTE.replace(
            "## Detailed",
            "### P2: Again\n**Insight**: i\n**Action**: a\n"
            + P_ITEM
            + "\n**Impact**: x\n<!-- impact-end -->\n\n## Detailed",
        ),
        "compute",
        23,
    ),
    ("F7", COMPUTE.replace("tier=compute", "tier=system"), "compute", 18),
    ("F7", SYSTEM, "fusion", 16),
    ("F8", COMPUTE.replace("**Data:**", "**Numbers:**"), "compute", 18),
    ("F9", COMPUTE.replace("| Args | Kernel Path |", "| Kernel Path | Args |"), "compute", 24),
    ("F9", COMPUTE, "compute", 24, {"comparison_scope": "comparative"}),
    ("F10", COMPUTE.replace("N=4096` |", "N=2048` |"), "compute", 26),
    # a name pasted as it is in the metrics, not as the draft renders it (a code span)
    ("F10", COMPUTE.replace("`M=4096`<br>`N=4096`", "M=4096<br>N=4096"), "compute", 26),
    ("F11", COMPUTE.replace("| `hipblaslt` |", "| `rocblas` |"), "compute", 26),
    ("F12", COMPUTE.replace("Cijk_Alik_Bljk", "Cijk_Other"), "compute", 26),
    ("M1", drop(COMPUTE, 14), "compute", 12),
    ("M1", COMPUTE + "<!-- impact-end -->\n", "compute", 37),
    ("M2", COMPUTE.replace("kind=p_item ", ""), "compute", 12),
    ("M3", COMPUTE.replace("kind=p_item", "kind=p_itme"), "compute", 12),
    ("M4", COMPUTE.replace(" high=3.1 -->", " -->"), "compute", 12),
    ("M5", COMPUTE.replace("low=1.2 mid", "low=null mid"), "compute", 12),
    (
        "M5",
        COMPUTE.replace("low=1.2 mid=2.5 high=3.1", "low=null mid=null high=null"),
        "compute",
        12,
    ),
    ("M5", SYSTEM.replace("low=null mid=null high=null", "low=1 mid=2 high=3"), "system", 10),
    ("M6", drop(COMPUTE, 12, 14), "compute", 7),
    (
        "M6",
        (DATA / "empty_system.md").read_text(encoding="utf-8")
        + "\n"
        + P_ITEM
        + "\n<!-- impact-end -->\n",
        "system",
        11,
    ),
    (
        "M7",
        COMPUTE.replace(
            "<!-- impact-end -->\n\n## Detailed",
            f"<!-- impact-end -->\n{P_ITEM}\n<!-- impact-end -->\n\n## Detailed",
        ),
        "compute",
        9,
    ),
    ("M8", drop(COMPUTE, 33, 34, 35, 36), "compute", 18),
    (
        "M8",
        SYSTEM.replace(" Impact estimate is not quantifiable from trace data.", ""),
        "system",
        16,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_broken_corpus(case):
    rule, text, tier, line, *extra = case
    problems = validate_findings(
        text, tier, metrics=METRICS if tier == "compute" else None, **(extra[0] if extra else {})
    )
    assert (rule, line) in {(p.rule, p.line) for p in problems}, problems
    assert all(": " in p.message and len(p.message) > 30 for p in problems)


def test_every_rule_is_covered():
    rules = {f"F{i}" for i in range(13)} | {f"M{i}" for i in range(1, 9)}
    assert rules <= {c[0] for c in CASES}


def test_file_wrapper_loads_sibling_metrics(tmp_path):
    assert [p.rule for p in validate_findings_file(tmp_path / "nope.md", "compute")] == ["F0"]
    (tmp_path / "category_findings").mkdir()
    (tmp_path / "category_data").mkdir()
    md = tmp_path / "category_findings" / "gemm_findings.md"
    md.write_text(COMPUTE.replace("| `hipblaslt` |", "| `rocblas` |"), encoding="utf-8")
    assert validate_findings_file(md, "compute") == []  # no metrics: F10-F12 skipped
    (tmp_path / "category_data" / "gemm_metrics.json").write_text(json.dumps(METRICS))
    assert [(p.rule, p.line) for p in validate_findings_file(md, "compute")] == [("F11", 26)]


def test_metrics_of_the_wrong_shape_are_named(tmp_path):
    (tmp_path / "category_findings").mkdir()
    (tmp_path / "category_data").mkdir()
    md = tmp_path / "category_findings" / "gemm_findings.md"
    md.write_text(COMPUTE, encoding="utf-8")
    (tmp_path / "category_data" / "gemm_metrics.json").write_text('{"operations": {}}')
    (problem,) = validate_findings_file(md, "compute")
    assert (problem.rule, problem.line) == ("F10", 1)
    assert problem.message.startswith("gemm_metrics.json cannot be read as metrics (operations: ")
    (bad,) = validate_findings(COMPUTE, "compute", metrics={"operations": [1]})
    assert bad.message.startswith("the metrics document cannot be read as metrics")
