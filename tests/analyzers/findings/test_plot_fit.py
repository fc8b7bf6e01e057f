"""The plot of a generated run with long operator names and a GPU idle most of the time:
every text lies inside the figure (no label clipped), and idle is drawn and named as idle,
not as GPU time."""

from __future__ import annotations

import pytest
from matplotlib.text import Text

import rooflens
from rooflens.analyzers.findings.composing.plot import (
    LABEL_WIDTH,
    Bar,
    Savings,
    Segment,
    draw_figure,
)
from rooflens.analyzers.synthetic.devices import MI300X
from rooflens.analyzers.synthetic.writer import Writer

BF16 = "c10::BFloat16"
# long names, as custom extensions and compiled graphs write them
LONG_OPS = (
    "my_extension::fused_rotary_embedding_attention_with_kv_cache_update_and_dropout_backward",
    "my_extension::grouped_query_attention_forward_with_sliding_window_and_alibi_bias_v2",
)
STEPS = 4
IDLE_US = 4_000.0  # the host waits this long every step with nothing on the GPU


@pytest.fixture(scope="module")
def figure(tmp_path_factory: pytest.TempPathFactory):
    w = Writer(device=MI300X, host_pid=100, main_tid=100, vendor="amd")
    t = 0.0
    conv = {
        "Input Dims": [[32, 256, 28, 28], [256, 256, 3, 3], [], [], [], [], [], [], []],
        "Input type": [BF16] * 2 + ["ScalarList"] * 3 + ["Scalar"] * 4,
    }
    mm = {"Input Dims": [[4096, 4096], [4096, 4096]], "Input type": [BF16, BF16]}
    for step in range(STEPS):
        start = t
        w.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, t + IDLE_US)
        t += IDLE_US
        for i, name in enumerate(LONG_OPS):
            w.launching_op(name, f"fused_kernel_{i}_with_a_long_templated_name<float, 128>", t,
                           120.0 + 40 * i)  # fmt: skip
            t += 200.0
        w.launching_op("aten::mm", "Cijk_Alik_Bljk_BBS_BH_MT128x128x32", t, 150.0, op_args=mm)
        t += 200.0
        w.launching_op("aten::convolution_backward", "miopenSp3AsmConv_v21_1_2_gfx9_fp32_stride1",
                       t, 160.0, op_args=conv)  # fmt: skip
        t += 300.0
        w.step(step, start, t)
    trace = w.write(tmp_path_factory.mktemp("plot_fit") / "long_names.json", "generated")
    run = rooflens.analyze(trace, platform="MI300X")
    fig = run.plot()
    assert fig is not None
    fig.canvas.draw()
    return fig


def _texts(fig) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _tick_labels(fig) -> set[Text]:
    """Tick labels: matplotlib keeps some outside the axis's view, undrawn; the axes' tight
    boxes (which count only the drawn ones) check them."""
    ticks = [
        tick
        for ax in fig.axes
        for axis in (ax.xaxis, ax.yaxis)
        for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks())
    ]
    return {label for tick in ticks for label in (tick.label1, tick.label2)}


def assert_inside(fig) -> int:
    """Every drawn text (and each axes with its tick labels) within the figure; returns how
    many texts were checked."""
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox

    def inside(box) -> bool:
        return (
            box.x0 >= frame.x0 - 0.5
            and box.y0 >= frame.y0 - 0.5
            and box.x1 <= frame.x1 + 0.5
            and box.y1 <= frame.y1 + 0.5
        )

    ticks = _tick_labels(fig)
    texts = [t for t in _texts(fig) if t not in ticks]
    for text in texts:
        assert inside(text.get_window_extent(renderer)), (text.get_text(), frame)
    for ax in fig.axes:
        assert inside(ax.get_tightbbox(renderer)), ax.get_title(loc="left")
    return len(texts)


def test_every_text_lies_inside_the_figure(figure) -> None:
    assert assert_inside(figure) >= 12


def test_an_overlong_title_is_shortened_above_its_bar_and_whole_in_the_caption() -> None:
    title = "P1 GEMM: " + " ".join(f"my_extension::op_{i}_with_a_long_name" for i in range(12))
    bar = Bar(1, "compute", "gemm", title, 20.0, 30.0, 45.0, 30.0)
    segments = [
        Segment("gemm", "GEMM", 40.0, "#0072B2"),
        Segment("idle", "GPU idle", 60.0, "#EEEEEE"),
    ]
    fig = draw_figure("t", 100.0, segments, Savings([bar], 1, 30.0, 30.0))
    fig.canvas.draw()
    assert_inside(fig)
    texts = [t.get_text() for t in _texts(fig)]
    above = next(t for t in texts if t.startswith("P1 GEMM"))
    assert above.endswith("…") and len(above.splitlines()) == 2
    caption = next(t for t in texts if t.startswith("P1 GEMM") and t != above)
    assert " ".join(line.strip() for line in caption.splitlines()) == title


def test_idle_is_drawn_and_named_as_idle(figure) -> None:
    texts = [t.get_text() for t in _texts(figure)]
    legend = [t for t in texts if t.startswith("GPU idle — ")]
    assert len(legend) == 1
    share = float(legend[0].rsplit("(", 1)[1].split(" %")[0])
    assert share > 70  # the generated window is mostly idle
    assert f"idle {share:.0f} %" in texts  # written on its segment as idle
    title = next(t for t in texts if t.startswith("The analysed window"))
    assert "GPU idle" in title and "GPU time by category" not in title
    assert not any(t.startswith("Non-compute") for t in texts)


def test_item_titles_wrap_within_the_width_above_their_bars(figure) -> None:
    texts = [t.get_text() for t in _texts(figure)]
    items = [t for t in texts if t[:1] == "P" and t[1:2].isdigit()]
    assert [t.split(" ", 1)[0] for t in items] == ["P1", "P2"]
    assert any(len(t.splitlines()) == 2 for t in items)  # the long one wrapped, not cut
    assert all(len(line) <= LABEL_WIDTH for t in items for line in t.splitlines())
    assert not any(t.endswith(" …") for t in items)  # none needed shortening: no caption
