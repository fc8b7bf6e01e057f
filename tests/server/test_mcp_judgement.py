"""The analysts' judgement reaches the report: submit_findings merges and drops drafted items
with a reason (kept on the findings file's cards, refused when they do not fit the draft),
and each analyst's overview `note` is quoted in the report, as inert Markdown."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.helpers.mcp_client import call, error_of, whole_report

NOTE = "Both groups are the same <b>memory-bound</b> adds; one fix covers them."


@pytest.mark.anyio
async def test_merges_drops_and_notes_reach_the_report(connect, sample: Path) -> None:
    with anyio.fail_after(120):
        async with connect() as client:
            run_id = (await call(client, "load_trace", {"path": str(sample)}))["run_id"]
            await call(client, "prepare_category_data", {"run_id": run_id})
            for key in ("elementwise", "multi_kernel"):
                await call(client, "run_category_analysis", {"run_id": run_id, "category": key})
                await call(client, "draft_findings", {"run_id": run_id, "category": key})
            base = {"run_id": run_id, "category": "elementwise"}
            both = await error_of(client, "submit_findings", {
                **base, "merge": [{"items": [2], "into": 1, "reason": "One fix."}],
                "drop": [{"item": 2, "reason": "Noise."}],
            })  # fmt: skip
            empty = await error_of(
                client, "submit_findings", {**base, "drop": [{"item": 2, "reason": ""}]}
            )
            merge = [{"items": [2], "into": 1, "reason": "The same adds, at two efficiencies."}]
            await call(client, "submit_findings", {**base, "merge": merge, "note": NOTE})
            drop = [{"item": 2, "reason": "Overlap is the exposed time of item 1 again."}]
            system = {"run_id": run_id, "category": "multi_kernel", "drop": drop}
            await call(client, "submit_findings", system)
            findings = await whole_report(client, f"rooflens://runs/{run_id}/findings/elementwise")
            await call(client, "aggregate_findings", {"run_id": run_id})
            composed = await call(client, "compose_report", {"run_id": run_id})
            report = await whole_report(client, f"rooflens://runs/{run_id}/report")
    assert "dropped or merged more than once" in both
    assert "reason" in empty and "must not be empty" in empty
    assert "**Merged into**: " in findings and "The same adds, at two efficiencies." in findings
    assert composed["valid"], composed["problems"]
    quoted = "Both groups are the same \\<b\\>memory-bound\\</b\\> adds; one fix covers them."
    assert f"- `elementwise`: {quoted}" in report  # the overview, escaped once
    assert "<b>" not in report
    assert "**Set aside by the analysts**" in report
    assert "(`multi_kernel`): Overlap is the exposed time of item 1 again." in report
    assert "**Merges**: " in report and "**Merged into**: " in report
    # the page says the same, from the same cards and findings (its own escaping)
    page = Path(next(f for f in composed["files"] if f.endswith("analysis.html"))).read_text()
    said = page.split("<section id='judgement'>", 1)[1].split("</section>", 1)[0]
    assert "<code>elementwise</code>: Both groups are the same" in said
    assert "&lt;b&gt;memory-bound&lt;/b&gt;" in said and "<b>" not in said
    assert "(<code>multi_kernel</code>): Overlap is the exposed time of item 1 again." in said
