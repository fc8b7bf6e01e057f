"""Documents larger than one result served a part at a time (resources/pages.py) and the
plot reduced to fit one (resources/images.py)."""

from __future__ import annotations

import base64
import io
import json
import re

import pytest
from mcp import Client
from mcp.server.mcpserver.exceptions import ResourceNotFoundError

from rooflens.resources.images import preview_png
from rooflens.resources.pages import json_lists_page, report_section, sections
from rooflens.server.app import ServerConfig, build_server
from tests.helpers.mcp_client import call, read_text

URI = "rooflens://runs/r/report"
LINK = re.compile(r"rooflens://runs/[^\s`)*\]\"},]+\?[^\s`)*\]\"},]+")
BUDGET = 2000
REPORT = (
    "# Title\n\n"
    "## Executive Summary\n\nshort.\n\n"
    "## Detailed Analysis\n\n" + "".join(f"line {i} " + "x" * 60 + "\n" for i in range(80)) + "\n"
    "## Appendix\n\nend.\n"
)


def test_a_report_that_fits_is_served_whole() -> None:
    assert report_section(REPORT, URI, budget=len(REPORT) + 1) == REPORT


def test_a_long_report_is_an_index_then_its_sections_read_back_exactly() -> None:
    head, parts = sections(REPORT)
    assert head == "# Title\n\n" and [p.slug for p in parts] == [
        "executive-summary", "detailed-analysis", "appendix",
    ]  # fmt: skip
    first = report_section(REPORT, URI, BUDGET)
    assert len(first.encode()) <= BUDGET
    assert f"- `{URI}?section=detailed-analysis`: Detailed Analysis" in first
    assert "## Executive Summary\n\nshort." in first  # the sections from the top that fit
    assert first.endswith(f"*(next section: `{URI}?section=detailed-analysis`)*\n")
    rebuilt, pages = head, 0
    for part in parts:
        page, offset = report_section(REPORT, URI, BUDGET, part.slug), 0
        while "next page: `" in page:
            assert len(page.encode()) <= BUDGET
            body, _, trailer = page.rpartition("\n*(lines ")
            rebuilt += body
            offset, pages = int(trailer.split("offset=")[1].split("`")[0]), pages + 1
            page = report_section(REPORT, URI, BUDGET, part.slug, offset)
        rebuilt += page
    assert rebuilt == REPORT and pages >= 2  # the long section came in pages


def test_an_unknown_section_names_the_known_ones() -> None:
    with pytest.raises(ResourceNotFoundError, match="executive-summary, detailed-analysis"):
        report_section(REPORT, URI, BUDGET, "nope")


def test_a_json_document_cuts_its_largest_lists_last_the_kept_ones() -> None:
    doc = {
        "priorities": [{"p": i, "title": "t" * 40} for i in range(30)],
        "extra": {"findings": [{"n": i, "text": "y" * 80} for i in range(40)]},
        "baseline_ms": 3.5,
    }
    page = json.loads(
        json_lists_page(json.loads(json.dumps(doc)), "u", BUDGET, keep=("priorities",))
    )
    assert len(json.dumps(page, separators=(",", ":"))) <= BUDGET
    assert (
        page["baseline_ms"] == 3.5
        and page["priorities"] == doc["priorities"][: len(page["priorities"])]
    )
    cut = page["extra"]["findings_page"]
    assert cut["total"] == 40 and cut["next"] == f"u?list=extra.findings&offset={cut['shown']}"
    rest = json.loads(json_lists_page(doc, "u", BUDGET, "extra.findings", cut["shown"]))
    assert rest["items"][0] == doc["extra"]["findings"][cut["shown"]]
    with pytest.raises(ResourceNotFoundError, match=r"extra\.findings"):
        json_lists_page(doc, "u", BUDGET, "nope")


def test_a_plot_is_reduced_until_its_base64_fits() -> None:
    from PIL import Image

    image = Image.effect_noise((900, 600), 60).convert("RGB")
    raw = io.BytesIO()
    image.save(raw, format="PNG")
    data = raw.getvalue()
    small = preview_png(data, 16_000)
    assert len(base64.b64encode(data)) > 16_000 >= len(base64.b64encode(small))
    reduced = Image.open(io.BytesIO(small))
    assert reduced.width < 900 and abs(reduced.width / reduced.height - 1.5) < 0.02
    assert preview_png(small, 16_000) == small  # a PNG that fits is served as it is


@pytest.mark.anyio
async def test_every_document_of_a_run_fits_a_small_limit_page_by_page(sample) -> None:
    """With a 4,096-byte limit the sample run's metrics (their largest lists cut when paging
    the operations is not enough), priorities and report come in parts that each fit, and
    the parts' links lead to the rest."""
    limit = 4096
    config = ServerConfig(allowed_dirs=[sample.parent], max_result_bytes=limit)
    async with Client(build_server(config)) as client:
        full = await call(client, "run_full_analysis", {"path": str(sample)})
        base = f"rooflens://runs/{full['run_id']}"
        keys = [c for c in ("cpu_idle", "multi_kernel", "gemm", "elementwise")]
        first = [f"{base}/metrics/{k}" for k in keys] + [f"{base}/priorities", f"{base}/report"]
        seen, queue = set(first), list(first)
        while queue:
            text = await read_text(client, queue.pop())
            assert len(text.encode()) <= limit
            for link in LINK.findall(text):
                if link not in seen:
                    seen.add(link)
                    queue.append(link)
    assert any("?list=" in uri and "/metrics/" in uri for uri in seen)
    assert any("?section=" in uri for uri in seen) and len(seen) > 20
