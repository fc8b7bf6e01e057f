"""The packaged orchestrator and analyst prompts: loading, tool names, hygiene, rendering."""

from __future__ import annotations

import re

import pytest

from rooflens.prompts import PromptSpec, load_prompts, parse_prompt, render
from tests.helpers.tool_names import CALLED, NOT_TOOLS, TOOLISH
from tests.helpers.tool_names import TOOLS as SERVER_TOOLS

ANALYSTS = {
    "cpu-idle",
    "multi-kernel",
    "kernel-fusion",
    "model-identification",
    "gemm",
    "sdpa",
    "elementwise",
    "reduce",
    "triton",
    "moe",
    "norm",
    "convolution",
    "generic-op",
}
COMPUTE = {"gemm", "sdpa", "elementwise", "reduce", "triton", "moe", "norm", "convolution"}
COMPUTE |= {"generic-op"}
MULTI_KEY = {"sdpa", "norm", "convolution", "moe", "generic-op"}
JOB = {"job-analysis"}  # takes a job id, not a run id
EVERY = ANALYSTS | JOB | {"orchestrator"}

SHELL = [
    re.compile(r"python3?\s"),
    re.compile(r"\bbash\b"),
    re.compile(r"\$ "),
    re.compile(r"\btee\s"),
    re.compile(r"\bcd\s"),
    re.compile(r"\bcat\s+[<./\w]"),
    re.compile(r"```(?:sh|shell|console)"),
    re.compile(r"\bpip install\b"),
]
PATHS = [
    re.compile(r"category_data/"),
    re.compile(r"category_findings/"),
    re.compile(r"system_findings/"),
    re.compile(r"\w\.csv\b"),
    re.compile(r"\w\.json\b"),
    re.compile(r"\w\.py\b"),
    re.compile(r"(?<![:/\w])/(?:tmp|home|work|usr)/"),
    re.compile(r"<output_dir>|output_dir"),
]
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@pytest.fixture(scope="module")
def prompts() -> dict[str, PromptSpec]:
    return {p.name: p for p in load_prompts()}


def _args(spec: PromptSpec) -> dict[str, object]:
    return {a.name: a for a in spec.arguments}


def test_fifteen_prompts_load(prompts):
    assert set(prompts) == EVERY
    assert len(prompts) == 15


@pytest.mark.parametrize("name", sorted(EVERY))
def test_front_matter_is_complete(prompts, name):
    spec = prompts[name]
    assert spec.title.strip()
    assert len(spec.description) > 30
    assert spec.body.strip()
    for arg in spec.arguments:
        assert arg.name.isidentifier()
        assert arg.description.strip(), f"{name}: argument {arg.name} lacks a description"
    names = [a.name for a in spec.arguments]
    assert len(names) == len(set(names))
    # every placeholder in the body is a declared argument
    used = set(PLACEHOLDER.findall(spec.body))
    assert used <= set(names), f"{name}: undeclared placeholders {used - set(names)}"


@pytest.mark.parametrize("name", sorted(ANALYSTS))
def test_analyst_arguments(prompts, name):
    args = _args(prompts[name])
    assert args["run_id"].required
    scope = args["comparison_scope"]
    assert not scope.required
    assert scope.default == "standalone"
    if name in MULTI_KEY:
        assert "category" in args and args["category"].required
    if name in COMPUTE:
        assert "category" in args
    if "category" in args:
        assert "{category}" in prompts[name].body
    assert "{run_id}" in prompts[name].body


def test_orchestrator_arguments(prompts):
    args = _args(prompts["orchestrator"])
    assert args["trace"].required
    assert args["comparison_scope"].default == "standalone"
    body = prompts["orchestrator"].body
    for role in ANALYSTS | JOB:
        assert f"`{role}`" in body, f"orchestrator never starts {role}"


@pytest.mark.parametrize("name", sorted(EVERY))
def test_named_tools_exist(prompts, name):
    body = prompts[name].body
    named = set(TOOLISH.findall(body)) - NOT_TOOLS
    called = set(CALLED.findall(body))
    unknown = (named | called) - SERVER_TOOLS
    assert not unknown, f"{name} names tools the server lacks: {sorted(unknown)}"
    assert named, f"{name} names no tool at all"


@pytest.mark.parametrize("name", sorted(COMPUTE))
def test_compute_prompts_follow_the_recipe(prompts, name):
    body = prompts[name].body
    for tool in ("run_category_analysis", "draft_findings", "submit_findings"):
        assert f"`{tool}`" in body
    assert "rooflens://runs/{run_id}/metrics/{category}" in body
    for heading in (
        "## Action by bound type",
        "## Expected efficiency",
        "## Common patterns",
        "## What the trace cannot show",
    ):
        assert heading in body, f"{name} lacks {heading!r}"
    assert "110 %" in body
    assert "`nothing_to_report`" in body and "`error`" in body


@pytest.mark.parametrize("name", ["cpu-idle", "multi-kernel"])
def test_system_prompts_have_null_markers(prompts, name):
    assert "null" in prompts[name].body


@pytest.mark.parametrize("name", sorted(EVERY))
def test_no_shell_commands_or_paths(prompts, name):
    body = prompts[name].body
    for pattern in SHELL:
        assert not pattern.search(body), f"{name}: shell-like text {pattern.pattern!r}"
    for pattern in PATHS:
        assert not pattern.search(body), f"{name}: file path {pattern.pattern!r}"


def test_render_fills_placeholders(prompts):
    spec = prompts["sdpa"]
    text = render(spec, run_id="r42", category="sdpa_bwd")
    assert "r42" in text and "sdpa_bwd" in text
    assert "rooflens://runs/r42/metrics/sdpa_bwd" in text
    assert "standalone" in text  # default for comparison_scope
    assert not PLACEHOLDER.search(text)


@pytest.mark.parametrize("name", sorted(EVERY))
def test_render_leaves_no_placeholder(prompts, name):
    spec = prompts[name]
    for scope in ("standalone", "comparative"):
        values = {a.name: a.choices[-1] if a.choices else f"v_{a.name}" for a in spec.arguments}
        text = render(spec, **{**values, "comparison_scope": scope})
        assert not PLACEHOLDER.search(text), PLACEHOLDER.findall(text)
        assert "<!--" not in text  # every include and 'when' block was resolved


@pytest.mark.parametrize("name", sorted(EVERY))
def test_comparison_scope_is_one_of_two(prompts, name):
    """Every prompt takes the scope the tools know, and refuses any other value."""
    scope = _args(prompts[name])["comparison_scope"]
    assert scope.choices == ("standalone", "comparative")
    required = {a.name: "x" for a in prompts[name].arguments if a.required}
    with pytest.raises(ValueError, match="comparison_scope must be one of"):
        render(prompts[name], **required, comparison_scope="both")


@pytest.mark.parametrize("name", sorted(EVERY - {"model-identification"}))
def test_comparative_guidance_only_in_comparative_scope(prompts, name):
    required = {a.name: "r1" for a in prompts[name].arguments if a.required}
    alone = render(prompts[name], **required)
    compared = render(prompts[name], **required, comparison_scope="comparative")
    assert "## Comparing two traces" not in alone
    assert "## Comparing two traces" in compared
    guidance = compared.split("## Comparing two traces", 1)[1]
    assert "trace 1" in guidance.lower() and "trace 2" in guidance.lower()
    if name in COMPUTE:  # how to read the comparison columns, and the limit of the trace
        for words in (
            "100 × trace-2 time / trace-1 time",
            "`t2_time_ms`",
            "`difference_ms`",
            "negative means trace 1 is slower",
            "cannot show",
        ):
            assert words in guidance, f"{name}: {words!r}"
        assert "the difference is the finding" in guidance.lower()
    assert len(compared) > len(alone)


def test_job_prompt_reads_the_job_and_drills_into_the_straggler(prompts):
    """The job analyst takes the job id load_job returns, reads the job's report and tables,
    names what the traces cannot show, and reaches the straggler's own run by its run id."""
    spec = prompts["job-analysis"]
    assert _args(spec)["job_id"].required and "run_id" not in _args(spec)
    text = render(spec, job_id="job-0123456789ab")
    assert "Call `get_job_overview` with `job_id` = `job-0123456789ab`" in text
    for uri in ("/report", "/tables/straggler_summary", "/tables/ranks"):
        assert f"`rooflens://jobs/job-0123456789ab{uri}`" in text
    for limit in ("node placement", "message sizes", "timestamps from different hosts"):
        assert limit in text
    for tool in ("`prepare_category_data`", "`query_operations`", "`run_id`"):
        assert tool in text
    assert "`cpu-idle`" in text and "`load_trace`" not in text  # a second load only compared
    compared = render(spec, job_id="j", comparison_scope="comparative")
    assert "`load_trace`" in compared and "`compare_with`" in compared
    assert "`trace_path`" in compared and "`rooflens://jobs/j`" in compared


def test_orchestrator_sends_a_job_to_load_job(prompts):
    text = render(prompts["orchestrator"], trace="job/")
    section = text.split("## A distributed job", 1)[1].split("\n## ", 1)[0]
    for word in ("`load_job`", "`paths`", "`job_id`", "`job-analysis`", "`straggler`", "`run_id`"):
        assert word in section


def test_orchestrator_comparative_load(prompts):
    """The orchestrator loads both traces into one run through load_trace's own arguments."""
    text = render(prompts["orchestrator"], trace="a.json", reference_trace="b.json",
                  platform2="H100", comparison_scope="comparative")  # fmt: skip
    for arg in ("`compare_with`", "`platform2`", "`capture_folder2`"):
        assert arg in text
    assert "Trace 1 is `a.json`" in text and "trace 2 is `b.json`" in text


def test_fragments_are_not_prompts_and_must_exist():
    names = {p.name for p in load_prompts()}
    assert not any(n.startswith("_") or n.startswith("comparative") for n in names)
    with pytest.raises(ValueError, match=r"_nope\.md does not exist"):
        parse_prompt("---\nname: x\ntitle: X\ndescription: d\n---\n<!-- include nope -->\n")
    with pytest.raises(ValueError, match="'when' block on 'scope'"):
        parse_prompt(
            "---\nname: x\ntitle: X\ndescription: d\n---\n"
            "<!-- when scope=a -->\nA\n<!-- end when -->\n"
        )


def test_render_uses_defaults(prompts):
    text = render(prompts["gemm"], run_id="abc")
    assert "rooflens://runs/abc/metrics/gemm" in text


def test_render_refuses_missing_required(prompts):
    with pytest.raises(ValueError, match="run_id"):
        render(prompts["gemm"])
    with pytest.raises(ValueError, match="category"):
        render(prompts["norm"], run_id="abc")
    with pytest.raises(ValueError, match="trace"):
        render(prompts["orchestrator"])


def test_render_refuses_unknown_argument(prompts):
    with pytest.raises(ValueError, match="bogus"):
        render(prompts["gemm"], run_id="abc", bogus="x")


def test_parser_subset():
    spec = parse_prompt(
        "---\nname: demo\ntitle: Demo\ndescription: 'A demo: with colon'\narguments:\n"
        "  - name: run_id\n    description: The run.\n    required: true\n"
        "  - name: scope\n    description: Scope.\n    required: false\n"
        "    default: standalone\n---\n\nHello {run_id} ({scope}) {other}\n"
    )
    assert spec.description == "A demo: with colon"
    assert [(a.name, a.required, a.default) for a in spec.arguments] == [
        ("run_id", True, None),
        ("scope", False, "standalone"),
    ]
    assert render(spec, run_id="x") == "Hello x (standalone) {other}\n"


@pytest.mark.parametrize(
    "text",
    [
        "name: x\n",
        "---\nname: x\ntitle: X\n",
        "---\ntitle: X\ndescription: d\n---\nbody\n",
        "---\nname: x\ntitle: X\ndescription: d\narguments:\n    description: no name\n---\n",
    ],
)
def test_parser_rejects_bad_front_matter(text):
    with pytest.raises(ValueError):
        parse_prompt(text)
