"""On every shared trace, no item of the impact scale with a saving comes from an operation
that is unmodelled (no roofline, or a stated `unmodelled_reason`) or above 110 % of its roofline
(docs/analysis.md#unquantified-items); such findings are unquantified items that say why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rooflens.analyzers.trace.inspect import inspect_trace
from rooflens.server.cli import main
from tests.helpers.golden import shared_traces, trace_id, when_shared

ANOMALY_PCT = 110.0


def _analysed(path: Path, out: Path) -> Path:
    args = ["analyze", str(path), "--out", str(out), "--until", "aggregated"]
    if inspect_trace(path).health.gpu.suggested_platform is None:
        args += ["--platform", "A100"]  # a GPU outside the catalogue: name one
    assert main(args) == 0
    return out


def _read(out: Path, name: str) -> dict[str, Any]:
    return json.loads((out / name).read_text(encoding="utf-8"))


def _usable(op: dict[str, Any]) -> bool:
    eff = op.get("efficiency") or {}
    pct = eff.get("efficiency_percent")
    return (
        pct is not None
        and pct <= ANOMALY_PCT
        and not eff.get("is_anomaly")
        and not op.get("unmodelled_reason")
    )


def _member_ops(metrics: dict[str, Any], member: dict[str, Any]) -> list[dict[str, Any]]:
    """The operations a finding member estimates: same name and kernel time."""
    return [
        op
        for op in metrics.get("operations") or ()
        if op["name"] == member["operation"] and abs(op["time_ms"] - member["time_ms"]) < 1e-6
    ]


@pytest.mark.parametrize("path", when_shared(shared_traces()), ids=trace_id)
def test_no_saving_from_an_unmodelled_or_anomalous_row(
    shared: Path, path: Path, tmp_path: Path
) -> None:
    out = _analysed(path, tmp_path / "run")
    items = _read(out, "priority_data.json")["items"]
    quantified = [i for i in items if i["saving"] is not None]
    assert items[: len(quantified)] == quantified  # unquantified items rank last
    for item in items:
        if item["saving"] is None:
            assert item["estimate_method"] == "unquantified" and item["unquantified_reason"]
            assert item["percent_mid"] is None
            continue
        assert item["estimate_method"] == "quantified"
        if item["kind"] != "compute":
            continue
        metrics = _read(out, f"category_data/{item['category']}_metrics.json")
        finding = next(f for f in metrics["category_findings"] if f["rank"] == item["source_rank"])
        assert finding["estimate_method"] == "quantified", item["title"]
        for member in finding["members"]:
            assert member["efficiency_pct"] is not None
            assert member["efficiency_pct"] <= ANOMALY_PCT, item["title"]
            ops = _member_ops(metrics, member)
            assert ops and any(_usable(op) for op in ops), (item["title"], member["operation"])
    totals = _read(out, "priority_data.json")["saving_totals"]
    saved = sum(i["saving"]["mid_ms"] for i in quantified)
    assert totals["mid_ms"] <= saved + 1e-3  # the totals add only quantified items
