"""The tree diff on very long sibling lists: past `LCS_CELLS` the alignment (Myers's edit
script, or window by window when the lists differ by too many edits) pairs everything a
planted edit left alone (analyzers/synthetic/wide.py), and is a common subsequence on any
input."""

from __future__ import annotations

import random
from itertools import pairwise
from pathlib import Path

import pytest

from rooflens.analyzers.compare import tree_diff
from rooflens.analyzers.compare.tree_diff import align, diff_traces
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.synthetic.wide import WidePlan, sequences, write_wide_pair


def _valid(a: list[str], b: list[str], pairs: list[tuple[int, int]]) -> bool:
    rising = all(i0 < i1 and j0 < j1 for (i0, j0), (i1, j1) in pairwise(pairs))
    return rising and all(a[i] == b[j] for i, j in pairs)


def test_every_operator_an_edit_left_alone_is_paired() -> None:
    """20,000 names from a vocabulary of ten; trace 2 drops 14, adds 13, renames 13: the
    alignment pairs the 20,000 - 14 - 13 others, as the exact one would."""
    a, b, planted = sequences(WidePlan(ops=20_000))
    assert len(a) * len(b) > tree_diff.LCS_CELLS  # past the exact programme
    pairs = align(a, b)
    assert _valid(a, b, pairs)
    assert len(pairs) == len(a) - planted.dropped - planted.renamed


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize(("cells", "edits"), [(16, 1000), (2000, 1000), (2000, 2), (16, 2)])
def test_the_fast_alignments_are_common_subsequences(seed, cells, edits, monkeypatch) -> None:
    """Random lists with random edits, the exact programme kept for at most `cells` cells and
    Myers's for at most `edits` edits (else window by window): always a common subsequence,
    and close to the longest (the longest itself whenever Myers's applies)."""
    monkeypatch.setattr(tree_diff, "LCS_CELLS", cells)
    monkeypatch.setattr(tree_diff, "MAX_EDITS", edits)
    rng = random.Random(seed)
    a = [rng.choice("abcdefgh") for _ in range(rng.randrange(50, 300))]
    b = list(a)
    for _ in range(rng.randrange(1, 30)):
        k = rng.randrange(len(b))
        choice = rng.randrange(3)
        if choice == 0:
            del b[k]
        elif choice == 1:
            b.insert(k, rng.choice("abcdefghij"))
        else:
            b[k] = rng.choice("abcdefghij")
    pairs = align(a, b)
    assert _valid(a, b, pairs)
    monkeypatch.setattr(tree_diff, "LCS_CELLS", 10**9)
    exact = align(a, b)
    assert len(pairs) >= 0.9 * len(exact)
    if edits == 1000:
        assert len(pairs) == len(exact)


def test_lists_with_nothing_in_common_pair_nothing(monkeypatch) -> None:
    monkeypatch.setattr(tree_diff, "LCS_CELLS", 4)
    assert align(list("abcabc"), list("xyzxyz")) == []


def test_ten_thousand_siblings_merge_like_the_planted_edits(tmp_path: Path) -> None:
    """Every operator, its launch and its kernel paired but for the planted edits (an edit
    every 500 operators: dropped, added, renamed in turn): the dropped ones (and their calls
    and kernels) on trace 1's side, the added on trace 2's, the renamed paired as renames
    between aligned neighbours. (benchmarks/bench_compare.py times the 20,000-sibling pair.)"""
    plan = WidePlan(ops=10_000)
    _, _, planted = sequences(plan)
    one, two = write_wide_pair(tmp_path, plan)
    diff = diff_traces(read_trace(one)[0], read_trace(two)[0])
    matched_ops = plan.ops - planted.dropped
    assert int(diff.matched.sum()) == 3 * matched_ops  # operator, launch call, kernel
    assert len(diff.uid1) - int(diff.matched.sum()) == 3 * (planted.dropped + planted.added)
