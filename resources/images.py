"""A plot small enough to read by default: the PNG reduced until its base64 fits one result.

A model client that looks at the plot needs its bars and their order, not print resolution;
the full PNG stays one explicit read away (`?full=1`). The reduction keeps the aspect ratio,
maps the colours to a small palette (a chart has few) and shrinks the size step by step.
"""

from __future__ import annotations

import base64
import io

SHRINK = 0.85  # each step's width over the last one's
MIN_WIDTH = 160
COLOURS = 64


def encoded_size(data: bytes) -> int:
    return len(base64.b64encode(data))


def preview_png(data: bytes, budget: int) -> bytes:
    """`data` itself when its base64 fits `budget` bytes, else the largest reduced copy that
    does (the smallest one tried, when none does)."""
    if encoded_size(data) <= budget:
        return data
    from PIL import Image  # matplotlib's own dependency; imported only when a plot is cut

    image = Image.open(io.BytesIO(data)).convert("RGB")
    width, height = image.size
    scale = 1.0
    best = data
    while True:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        small = image.resize(size, Image.Resampling.LANCZOS).quantize(COLOURS)
        out = io.BytesIO()
        small.save(out, format="PNG", optimize=True)
        best = out.getvalue()
        if encoded_size(best) <= budget or size[0] <= MIN_WIDTH:
            return best
        scale *= SHRINK
