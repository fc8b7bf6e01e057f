"""Findings per category (draft, submit, validate) and the priorities across categories."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from pydantic import Field

from rooflens.analyzers import layout
from rooflens.analyzers.findings.contract.contract import Findings
from rooflens.analyzers.findings.contract.validate import validate_findings_file
from rooflens.analyzers.findings.drafting import submission
from rooflens.analyzers.findings.drafting.drafts import tier_for
from rooflens.analyzers.findings.ranking.priorities import PriorityData
from rooflens.analyzers.findings.validation.run_checks import validate_run as check_run
from rooflens.analyzers.pipeline.ledger import verify
from rooflens.analyzers.pipeline.steps import AGGREGATED, DRAFTED

from .. import results as r
from ..bounded import fit
from ..loading import pipeline
from ..runs import Run
from ..state import AppState
from .common import (
    READ_ONLY,
    WRITES_RUN,
    CategoryArg,
    CategoryDep,
    Ctx,
    RunDep,
    RunIdArg,
    app_state,
    engine,
)

ItemsArg = Annotated[
    list[submission.PItemProse],
    Field(description="Your words per drafted item, by rank; a field left out keeps the draft's."),
]
StatusArg = Annotated[
    submission.SubmitStatus,
    Field(
        description="findings; nothing_to_report (refused when the metrics hold findings); error."
    ),
]
MergeArg = Annotated[
    list[submission.MergeItems],
    Field(description="Items folded into one that stays, with reasons."),
]
DropArg = Annotated[
    list[submission.DropItem],
    Field(description="Items set aside, with reasons."),
]
NoteArg = Annotated[
    str | None,
    Field(
        description="Your overview (shown in the report), or why nothing_to_report, or the error."
    ),
]


def draft_items(found: Findings) -> list[r.DraftItem]:
    items = []
    for card in found.cards:
        fields = dict(card.fields)
        items.append(
            r.DraftItem(
                rank=card.number,
                title=card.title,
                insight=fields.get("Insight", ""),
                action=fields.get("Action", ""),
                confidence=fields.get("Confidence"),
                impact=card.impact_text,
            )
        )
    return items


def draft(st: AppState, run: Run, key: str) -> r.DraftResult:
    found = pipeline(st, run).draft(key)
    base = r.DraftResult(
        run_id=run.id,
        category=key,
        status=str(found.status),
        items=[],
        has_more=False,
        resources=[f"rooflens://runs/{run.id}/findings/{key}", "rooflens://contract/findings"],
    )
    items, more = fit(base, "items", draft_items(found), st.payload_budget)
    return base.model_copy(update={"items": items, "has_more": more})


def submit(
    st: AppState,
    run: Run,
    key: str,
    items: list[submission.PItemProse],
    status: submission.SubmitStatus,
    note: str | None,
    merge: list[submission.MergeItems] = (),
    drop: list[submission.DropItem] = (),
) -> r.SubmitResult:
    pipeline(st, run).submit(key, items, status, note, merge, drop)
    return r.SubmitResult(
        run_id=run.id,
        category=key,
        status=status,
        items_written=len(items),
        resource=f"rooflens://runs/{run.id}/findings/{key}",
    )


def check_findings(st: AppState, run: Run, key: str) -> r.ValidationResult:
    pipeline(st, run).require(DRAFTED, key)
    found = validate_findings_file(run.folder / layout.findings(key), tier_for(key))
    return validation(st, run.id, f"findings/{key}", found)


def validation(st: AppState, run_id: str, target: str, found: list) -> r.ValidationResult:
    problems = [r.ProblemModel(rule=p.rule, line=p.line, message=p.message) for p in found]
    base = r.ValidationResult(run_id=run_id, target=target, valid=not found, problems=[])
    shown, more = fit(base, "problems", problems, st.payload_budget)
    return base.model_copy(update={"problems": shown, "has_more": more})


def aggregate(st: AppState, run: Run) -> r.AggregateResult:
    data = pipeline(st, run).aggregate()
    return r.AggregateResult(
        run_id=run.id,
        baseline_ms=data.baseline_ms,
        priorities=priority_rows(data),
        failed_categories=[
            f"{f.category}: {f.status} ({f.message})" for f in data.failed_categories
        ],
        resources=[f"rooflens://runs/{run.id}/priorities"],
    )


def priority_rows(data: PriorityData) -> list[r.PriorityRow]:
    """The ranked items, P1 first (docs/analysis.md#one-impact-scale)."""
    return [
        r.PriorityRow(
            p=item.p_number,
            kind=item.kind,
            category=item.category,
            title=item.title,
            estimate_method=item.estimate_method,
            saving_ms=tuple(round(v, 3) for v in item.saving.range_ms) if item.saving else None,
            percent_of_window=item.percent_mid,
            unquantified_reason=item.unquantified_reason,
            time_ranges=item.time_ranges.brief() if item.time_ranges else None,
        )
        for item in data.priorities
    ]


def check_run_folder(st: AppState, run: Run) -> r.RunValidationResult:
    pipeline(st, run).require(AGGREGATED)
    found = check_run(run.folder)
    checks = [r.RunCheck(name=n, status=str(c.status), messages=c.messages[:5]) for n, c in found]
    mixed = verify(run.folder)
    checks.append(
        r.RunCheck(name="artifacts", status="FAIL" if mixed else "PASS", messages=mixed[:5])
    )
    return r.RunValidationResult(run_id=run.id, passed=found.passed and not mixed, checks=checks)


def register(mcp: MCPServer) -> None:
    @mcp.tool(name="draft_findings", title="Draft findings", annotations=WRITES_RUN)
    async def draft_findings_tool(
        run_id: RunIdArg, category: CategoryArg, ctx: Ctx, run: RunDep, key: CategoryDep
    ) -> r.DraftResult:
        """Draft a valid findings file from a category's metrics; submit_findings rewrites its
        words, never its numbers."""
        return await engine(draft, app_state(ctx), run, key)

    @mcp.tool(title="Submit findings", annotations=WRITES_RUN)
    async def submit_findings(
        run_id: RunIdArg,
        category: CategoryArg,
        ctx: Ctx,
        run: RunDep,
        key: CategoryDep,
        status: StatusArg = "findings",
        items: ItemsArg = [],  # noqa: B006 - pydantic copies defaults
        note: NoteArg = None,
        merge: MergeArg = [],  # noqa: B006 - pydantic copies defaults
        drop: DropArg = [],  # noqa: B006
    ) -> r.SubmitResult:
        """Your prose over the draft's items (merge or drop them with a reason), or
        nothing_to_report / error with a note; refused unless valid."""
        return await engine(submit, app_state(ctx), run, key, items, status, note, merge, drop)

    @mcp.tool(title="Validate findings", annotations=READ_ONLY)
    async def validate_findings(
        run_id: RunIdArg, category: CategoryArg, ctx: Ctx, run: RunDep, key: CategoryDep
    ) -> r.ValidationResult:
        """Check a category's findings file; each problem names its rule, line and fix."""
        return await engine(check_findings, app_state(ctx), run, key)

    @mcp.tool(title="Aggregate findings", annotations=WRITES_RUN)
    async def aggregate_findings(run_id: RunIdArg, ctx: Ctx, run: RunDep) -> r.AggregateResult:
        """Rank every finding by estimated saving (priority_data.json)."""
        return await engine(aggregate, app_state(ctx), run)

    @mcp.tool(title="Validate run", annotations=READ_ONLY)
    async def validate_run(run_id: RunIdArg, ctx: Ctx, run: RunDep) -> r.RunValidationResult:
        """Cross-check the run's time, coverage, priority and efficiency figures."""
        return await engine(check_run_folder, app_state(ctx), run)
