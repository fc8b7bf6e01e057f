"""Truth corpus: copies and collectives named by their source (docs/analysis.md#copies,
docs/analysis.md#multi-kernel).

`compiled_dtod_copies` (COMPILED_COPIES, H100): per iteration `CompiledFunction` and
`CompiledFunctionBackward` each clone after every second of 24 Triton kernels (12 + 12
`aten::clone > aten::copy_` DtoD copies of 920 µs) and the optimizer copies 2 EMA buffers with
a plain `aten::copy_` (581.25 µs); four steady iterations. DtoD copies 4 x (24 x 920 + 2 x
581.25) = 92.97 ms, all exposed; from `aten::clone` in the compiled regions 4 x 24 x 920 =
88.32 ms = 95.0 %, 24 a step. P1 is the copy item, its title names `aten::clone` under the
compiled regions with the 95 % share, and the first fix is the compiled graph's.

`tiny_all_reduces` (TINY_ALL_REDUCES): 3 steady iterations, each 80 all-reduces of 12 µs
from `_c10d_functional::all_reduce_` in `CompiledFunctionBackward`, none overlapped by a
kernel: 240 all-reduces, 80 a step, median 12 µs, 2.88 ms all exposed, 0 % overlapped.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from rooflens.analyzers.categories.copies import COMPILED_COPIES
from rooflens.analyzers.findings.drafting.collective_draft import (
    collective_rows,
    collective_sentence,
)
from rooflens.analyzers.findings.drafting.copy_draft import copy_card
from rooflens.analyzers.synthetic.busy import COMPILED_COPIES as PLAN
from rooflens.analyzers.synthetic.collectives import TINY_ALL_REDUCES
from rooflens.analyzers.synthetic.situations import SITUATIONS
from tests.helpers.truth import RunView, assert_truthful, ranked

COMPILED_MS, DTOD_MS = 88.32, 92.97


@cache
def _run(name: str, folder: Path) -> RunView:
    trace = SITUATIONS[name].write(folder / f"{name}.json.gz")
    steps = ranked(trace, "H100")
    assert_truthful(steps)
    return RunView.of(steps)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sources")


def test_the_plan_is_what_the_docstring_says() -> None:
    assert PLAN.copies_ms == pytest.approx((COMPILED_MS, DTOD_MS))
    assert SITUATIONS["compiled_dtod_copies"].planted.estimate_ms == (COMPILED_MS,) * 2


def test_p1_is_the_copy_item_named_by_its_planted_source(folder: Path) -> None:
    view = _run("compiled_dtod_copies", folder)
    planted = SITUATIONS["compiled_dtod_copies"].planted
    top = view.priorities.items[0]
    assert (top.category, top.kind, top.saving.pool) == ("multi_kernel", "system", "exposed_memcpy")
    assert planted.p1 == "copies" and planted.call_site == "aten::clone"
    assert top.title.startswith(
        "95 % of 93.0 ms of device-to-device copies come from `aten::clone` under "
        f"`{planted.caller}`/`CompiledFunctionBackward`"
    ), top.title


def test_the_group_names_its_sources_and_the_compiled_fix_first(folder: Path) -> None:
    copies = _run("compiled_dtod_copies", folder).metrics["multi_kernel"].copies
    dtod = copies.groups[0]
    assert (dtod.route, dtod.time_ms) == ("D2D", pytest.approx(DTOD_MS))
    clone, eager = dtod.sources
    assert (clone.call_site, clone.compiled, clone.count) == ("aten::clone", True, 96)
    assert clone.callers == ["CompiledFunction", "CompiledFunctionBackward"]
    assert clone.time_us / 1e3 == pytest.approx(COMPILED_MS)
    assert clone.percent_of_group == pytest.approx(95.0, abs=0.01)
    assert (eager.call_site, eager.compiled, eager.count) == ("aten::copy_", False, 8)
    assert dtod.timing.steady_iterations == 4 and dtod.timing.per_iteration == 26
    assert dtod.timing.by_phase_us == {"steady": pytest.approx(DTOD_MS * 1e3)}
    assert dtod.fixes[0] == COMPILED_COPIES


def test_the_card_names_the_source_and_leads_with_its_fix(folder: Path) -> None:
    doc = _run("compiled_dtod_copies", folder).metrics["multi_kernel"]
    title, insight, action, _, rows, _ = copy_card(doc)
    assert "come from `aten::clone` under `CompiledFunction`" in title
    assert "95 % of 93.0 ms" in insight
    assert action.startswith("Inspect the compiled graph")
    cells = {r[0]: r[1] for r in rows}
    key = "`Memcpy DtoD (Device -> Device)` from `aten::clone` under "
    key += "`CompiledFunction`/`CompiledFunctionBackward`"
    assert cells[key].startswith("95.0% of the group: 96 copies, 24 a step, 88.320 ms exposed")


def test_the_tiny_all_reduces_are_counted_per_step_and_never_overlapped(folder: Path) -> None:
    groups = _run("tiny_all_reduces", folder).metrics["multi_kernel"].collectives
    (reduce,) = groups
    plan = TINY_ALL_REDUCES
    assert (reduce.kind, reduce.count) == ("all_reduce", plan.steps * plan.units)
    assert reduce.timing.per_iteration == plan.units == 80
    assert reduce.median_us == plan.all_reduce_us
    assert reduce.overlap_percent == 0.0 and reduce.many_small
    assert reduce.exposed_us == pytest.approx(plan.steps * plan.units * plan.all_reduce_us)
    (source,) = reduce.sources
    assert source.call_site == "_c10d_functional::all_reduce_"
    assert source.callers == ["CompiledFunctionBackward"] and source.compiled


def test_the_collective_sentence_calls_out_the_many_small_all_reduces(folder: Path) -> None:
    doc = _run("tiny_all_reduces", folder).metrics["multi_kernel"]
    sentence = collective_sentence(doc)
    assert sentence.startswith(
        "80 all-reduces a step (240 in all), median 12 µs, 0 % overlapped, from "
        "`_c10d_functional::all_reduce_` under `CompiledFunctionBackward`."
    ), sentence
    assert "bucket them" in sentence
    (row,) = collective_rows(doc)
    assert row[0] == "all-reduces" and row[2] == "true"
    assert row[1].startswith("240 kernels, 80 a step, median 12.0 µs, 2.880 ms exposed, 0.0%")
