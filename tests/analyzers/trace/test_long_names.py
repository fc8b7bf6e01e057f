"""Names longer than any real one are capped where the trace is decoded (long_names.py): the
start kept, then an ellipsis, the length and a digest, MAX_NAME_CHARS in all."""

from __future__ import annotations

import hashlib

from rooflens.analyzers.trace.long_names import MAX_NAME_CHARS, capped

MEGA = 1_000_000


def mark(name: str) -> str:
    digest = hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
    return f"… [{len(name):,} characters, #{digest}]"


def test_long_names_are_capped_as_they_are_decoded(tb) -> None:
    op, kernel, twin = "O" * MEGA, "K" * MEGA, "K" * (MEGA - 1) + "J"
    real = "void ck::kernel_gemm_xdl_cshuffle_v3<" + "x" * 5200 + ">"  # as long as real ones get
    events = [tb.cpu_op(op, 0, 100), *tb.launch(1, 10, 200, 50, kernel_name=kernel)]
    events += [*tb.launch(2, 20, 300, 50, kernel_name=twin)]
    events += [*tb.launch(3, 30, 400, 50, kernel_name=real)]
    names = set(tb.load(events).events["name"].astype(str))
    assert "O" * (MAX_NAME_CHARS - len(mark(op))) + mark(op) in names
    assert "K" * (MAX_NAME_CHARS - len(mark(kernel))) + mark(kernel) in names
    assert "K" * (MAX_NAME_CHARS - len(mark(twin))) + mark(twin) in names  # not merged
    assert real in names
    assert max(map(len, names)) == MAX_NAME_CHARS


def test_a_name_of_the_limit_is_kept_whole() -> None:
    assert capped("n" * MAX_NAME_CHARS) == "n" * MAX_NAME_CHARS
    assert len(capped("n" * (MAX_NAME_CHARS + 1))) == MAX_NAME_CHARS
