"""Recorded shapes must be sizes: anything else gets no perf model (Unsupported), not a guess."""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.base import Unsupported, parse_args

TYPES = '["c10::BFloat16", "c10::BFloat16"]'


@pytest.mark.parametrize(
    ("dims", "parsed"),
    [
        (None, ()),
        ("[]", ()),
        ("[[2, 3], [3, 4]]", ((2, 3), (3, 4))),
        ("[[], [0]]", ((), (0,))),  # a scalar input; an empty tensor
        ("[[[1, 2], [3]], []]", (((1, 2), (3,)), ())),  # a TensorList
        ("[[[], []]]", (((), ()),)),
    ],
)
def test_sizes_and_tensor_lists_parse(dims, parsed):
    assert parse_args("aten::mm", dims, TYPES, None, None).dims == parsed


@pytest.mark.parametrize(
    "dims",
    [
        '"abc"',
        "7",
        '{"k": [1]}',
        '[[2, "3"]]',
        "[[2.5, 3]]",
        "[[true, 3]]",
        "[[-4, 512]]",
        "[[9223372036854775808, 2]]",  # 2**63: beyond int64
        "[[1, [2]]]",  # sizes and lists mixed
        "[[[1, null]]]",
        "[5]",
    ],
)
def test_junk_shapes_are_unsupported(dims):
    with pytest.raises(Unsupported, match="not sizes"):
        parse_args("aten::mm", dims, TYPES, None, None)
