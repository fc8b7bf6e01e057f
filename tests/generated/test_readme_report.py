"""The README's "What a report says" excerpt is what `rooflens analyze` writes today for the
allocator-churn situation (the commands the README gives, run as given)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rooflens.analyzers.synthetic.situations import SITUATIONS
from rooflens.cli.main import main

README = Path(__file__).resolve().parents[2] / "README.md"


def _excerpt() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## What a report says", 1)[1]
    found = re.search(r"```markdown\n(.*?)\n```", section, re.DOTALL)  # the first block
    assert found, "the section holds a markdown block"
    return found.group(1).splitlines()


@pytest.mark.slow
def test_the_readme_shows_the_top_of_the_report_it_describes(tmp_path: Path, capsys) -> None:
    trace = SITUATIONS["allocator_churn"].write(tmp_path / "allocator_churn.json.gz")
    out = tmp_path / "run"
    assert main(["analyze", str(trace), "--platform", "MI300X", "--out", str(out)]) == 0
    capsys.readouterr()
    excerpt = _excerpt()
    report = (out / "analysis.md").read_text(encoding="utf-8").splitlines()
    assert len(excerpt) > 10
    assert report[: len(excerpt)] == excerpt
    p1 = next(line for line in excerpt if line.startswith("  - P1: "))
    assert "`hipFree` under `autograd::engine::evaluate_function: ConvolutionBackward0`" in p1
