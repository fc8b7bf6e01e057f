"""A CUPTI range-profiler trace (`counters_only`, `synthetic_formats.COUNTERS`): one
`cuda_profiler_range` record per replayed kernel (2 AlexNet forwards x 9 kernels = 18), each
holding the nine SASS FLOP instruction counters, and no kernel, copy or set event at all.

Planted answer: nothing to rank, but described, never refused as "no GPU events". The totals
are the plan's: FMA instructions count two FLOPs, the others one, so the 18 ranges hold
26,252,951,552 fp32 + 1,073,741,824 fp16 FLOPs = 27.327 GFLOP, 96.1 % fp32 (CountersPlan
docstring). `inspect` names the file for what it is; `analyze` refuses to rank with exit 2
(bad input: rooflens ranks shares of a GPU timeline, which the file does not have) and the
same description, and writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.report.loading import missing_gpu_work
from rooflens.analyzers.synthetic.situations import SITUATIONS
from rooflens.analyzers.trace.health import assess
from rooflens.analyzers.trace.inspect import inspect_trace
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from rooflens.cli.main import main

SITUATION = SITUATIONS["counters_only"]
PLAN = SITUATION.plan
DESCRIPTION = "per-kernel hardware counters, no timeline: 18 kernels"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    return SITUATION.write(tmp_path_factory.mktemp("counters") / "counters_only.json.gz")


def test_the_counters_give_the_planted_totals(trace: Path) -> None:
    counters = load_trace(trace).counters
    assert counters is not None
    assert counters.ranges == PLAN.ranges == 18
    assert counters.kernels == 9
    assert counters.flops == PLAN.flops
    assert counters.flops == {"fp64": 0, "fp32": 26_252_951_552, "fp16": 1_073_741_824}
    assert counters.total_flops == 27_326_693_376
    assert counters.replay_ms == pytest.approx(PLAN.ranges * PLAN.range_us / 1e3, abs=1e-3)


def test_inspect_says_what_the_file_is(trace: Path, capsys) -> None:
    health = inspect_trace(trace).health
    assert health.execution == "hardware counters only"
    codes = [w.code for w in health.warnings]
    assert "counters_only" in codes and "no_gpu_events" not in codes
    message = next(w.message for w in health.warnings if w.code == "counters_only")
    for words in (DESCRIPTION, "27.327 GFLOP", "96.1 % fp32", "3.9 % fp16", "nothing to rank"):
        assert words in message
    assert main(["inspect", str(trace)]) == 0
    out = capsys.readouterr().out
    assert DESCRIPTION in out and "no GPU" not in out


def test_analyze_refuses_to_rank_with_the_description(tmp_path: Path, trace: Path, capsys):
    out = tmp_path / "run"
    assert main(["analyze", str(trace), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"counters_only.json.gz cannot be analysed: the trace holds {DESCRIPTION}" in err
    assert "27.327 GFLOP" in err and "no GPU events" not in err
    assert "Traceback" not in err
    assert not out.exists()


def test_every_refusal_quotes_the_same_description(trace: Path) -> None:
    """The one decision (report/loading.py missing_gpu_work) that the CLI, the MCP tools and the job
    ranks share."""
    model = build_model(load_trace(trace))
    missing = missing_gpu_work(model)
    assert missing is not None and DESCRIPTION in missing
    assert missing.startswith("the trace holds per-kernel hardware counters")
    assert assess(model).counters == model.trace.counters
